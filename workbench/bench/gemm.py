"""The GEMM ladder against cuBLAS (``python -m workbench bench gemm``): C = A @ B^T, A (M, K) and B (N, K)
fp16 K-major, fp32 accumulation, at M = N = K in {4096, 8192} (4096 with --quick).

For each rung of :func:`workbench.kernels.gemm_ladder.ladder`, in the same run as cuBLAS (``torch.matmul`` on the
same fp16 tensors, fp16 output): TFLOPS (CUDA events, median after a warm-up), the ratio to cuBLAS, the
maximum relative error against cuBLAS's product (and exactness against torch at an irregular size, where
every ragged edge is predicated), registers per thread, shared memory, blocks per SM, the bank conflicts of
the ldmatrix reads (wavefronts, the plain tile and the one the rung uses) and the first launch's compile
time.  Without a GPU: {"gpu": False}.
"""

from __future__ import annotations

import ctypes

import workbench as wb
from workbench.kernels import gemm_ladder as G

from ..dsl.runtime import cupy as backend_cupy
from .bandwidth import _time

IRREGULAR = (1000, 999, 504)     # M, N, K: every tile ragged (K a multiple of 8: 16-byte rows)


def _blocks_per_sm(handle, threads, smem):
    n = ctypes.c_int()
    rc = backend_cupy.libcuda().cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(n), handle, threads,
                                                                            ctypes.c_size_t(smem))
    return n.value if rc == 0 else -1


def _operands(r, a, b, c):
    """The tensors a rung takes: fp16 A and B and fp32 C, all assumed 16-byte aligned (torch's allocations are),
    or fp32 A and B^T for the SIMT floor; the Hopper rungs' TMA descriptors (rung.args)."""
    if r.args is not None:
        return r.args(a, b, c)
    if r.name == "simt":
        return a.float(), b.float().t(), c
    return tuple(wb.from_dlpack(x, assumed_align=16) for x in (a, b, c))


_FIRST_LAUNCH = r"""
import time, torch
t0 = time.perf_counter()
import workbench as wb
from workbench.kernels import gemm_ladder as G
r = next(x for x in G.ladder() if x.name == "pipelined")
a = torch.zeros(4096, 4096, device="cuda", dtype=torch.float16); c = torch.empty(4096, 4096, device="cuda")
torch.cuda.synchronize()
t1 = time.perf_counter()
r.launch(wb.from_dlpack(a, assumed_align=16), wb.from_dlpack(a, assumed_align=16), wb.from_dlpack(c, assumed_align=16))
torch.cuda.synchronize()
print(time.perf_counter() - t1, t1 - t0)
"""


def first_launch_seconds() -> dict:
    """The rung-5 kernel's first launch in a fresh process with an empty kernel cache: tracing, CUDA C++
    generation, NVRTC, loading and the launch itself (CuTe DSL compiles its Ampere tensorop GEMM example in
    0.65-0.8 s on a 2-core host, DESIGN.md)."""
    import os
    import subprocess
    import sys
    import tempfile
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, CUPY_CACHE_DIR=cache)
        out = subprocess.run([sys.executable, "-c", _FIRST_LAUNCH], env=env, capture_output=True, text=True, check=True)
    first, imports = (float(x) for x in out.stdout.split())
    return {"first_launch_seconds": first, "import_seconds": imports}


def run(quick: bool = False, rungs=None) -> dict:
    if not backend_cupy.gpu_available():
        return {"gpu": False}
    import torch
    props = torch.cuda.get_device_properties(0)
    out = {"gpu": True, "device": props.name, "sms": props.multi_processor_count, "dtype": "float16, fp32 accumulation",
           "sizes": {}, "irregular": {}}
    from workbench.kernels.gemm_hopper import hopper_rungs
    sm90 = backend_cupy.current_arch() == "sm_90"
    ladder = [r for r in G.ladder() + (hopper_rungs() if sm90 else []) if rungs is None or r.name in rungs]
    gen = torch.Generator(device="cuda").manual_seed(0)
    # correctness at a ragged size: small integers make every product exact in fp32, so equality is expected
    m, n, k = IRREGULAR
    a = torch.randint(-3, 4, (m, k), device="cuda", generator=gen).half()
    b = torch.randint(-3, 4, (n, k), device="cuda", generator=gen).half()
    want = a.float() @ b.float().t()
    for r in ladder:
        c = torch.full((m, n), float("nan"), device="cuda")
        r.launch(*_operands(r, a, b, c))
        torch.cuda.synchronize()
        out["irregular"][r.name] = {"shape": [m, n, k], "exact": bool(torch.equal(c, want))}
    for size in ((4096,) if quick else (4096, 8192)):
        reps = 5 if quick else 10
        a = torch.randn(size, size, device="cuda", generator=gen).half()
        b = torch.randn(size, size, device="cuda", generator=gen).half()
        flop = 2 * size ** 3
        t_cublas = _time(lambda a=a, b=b: torch.matmul(a, b.t()), reps)
        ref = torch.matmul(a, b.t()).float()
        res = {"cublas_tflops": flop / t_cublas / 1e12, "rungs": {}}
        for r in ladder:
            if r.name == "simt" and size > 4096:
                continue     # the floor takes seconds a call there; its 4096 figure stands for it
            c = torch.empty(size, size, device="cuda")
            ops = _operands(r, a, b, c)
            t = _time(lambda r=r, ops=ops: r.launch(*ops), 3 if r.name in ("simt", "mma") else reps)
            # fp16 inputs, fp32 accumulation in another order than cuBLAS (whose output is rounded to fp16)
            err = float(((c - ref).abs().max() / ref.abs().max()).item())
            sp = r.kernel_for(ops).specialize(ops)
            g = sp.load_gpu()
            threads = r.config.threads if r.config else (r.mma.size if r.mma else 256)
            entry = {"tflops": flop / t / 1e12, "ratio_to_cublas": t_cublas / t, "max_rel_error": err,
                     "registers_per_thread": g.attributes()["registers"], "local_bytes": g.attributes()["local_bytes"],
                     "shared_bytes": sp.ir.shared_bytes, "threads": threads,
                     "blocks_per_sm": _blocks_per_sm(g.handle, threads, sp.ir.dynamic_smem),
                     "compile_seconds": g.compile_seconds}
            if r.config is not None and hasattr(r.config, "conflicts"):
                entry["ldmatrix_wavefronts"] = {w: {"plain_tile": p, "used": u} for w, (p, u) in r.config.conflicts.items()}
            if r.config is not None:
                entry["config"] = repr(r.config)
            res["rungs"][r.name] = entry
        out["sizes"][str(size)] = res
    out["compile"] = first_launch_seconds()
    return out
