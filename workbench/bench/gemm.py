"""The GEMM ladder against cuBLAS (``python -m workbench bench gemm``): C = A @ B^T, A (M, K) and B (N, K)
fp16 K-major, fp32 accumulation, at M = N = K in {4096, 8192} (4096 with --quick).

For each rung of :func:`workbench.kernels.gemm_ladder.ladder` (and the Hopper rungs on SM90), in the same run as
cuBLAS (``torch.matmul`` on the same fp16 tensors, fp16 output), measured so as not to fool:

* interleaved: each rung is timed call by call alternating with cuBLAS (``bandwidth._times``: CUDA events around
  every call, queued back to back), so a clock or power drift falls on both alike;
* repeated: ``repeats`` repetitions (5; 3 with --quick), each visiting every rung in turn; the ratio reported is
  the median over the repetitions of (cuBLAS time / rung time), with its spread (min, max, quartiles) and every
  repetition's ratio;
* stated: the inputs (normal(0,1), seeded, cast to fp16: the values move the power draw, hence the clocks) and the
  GPU's clocks, temperature, power and throttle reasons read with nvidia-smi before and after each size (where
  nvidia-smi is present); no pauses between calls, so a throttled GPU shows in the clocks, not in one rung alone.

Also per rung: TFLOPS (median over the repetitions), the maximum relative error against cuBLAS's product (and
exactness against torch at an irregular size, where every ragged edge is predicated), registers per thread, shared
memory, blocks per SM, the bank conflicts of the ldmatrix reads (wavefronts, the plain tile and the one the rung
uses) and the first launch's compile time.  Without a GPU the suite is skipped, and its result says so.

:func:`run_fp8` (``benchmarks/fp8_gemm.py``): the fp8 Hopper GEMM (e4m3, per-tensor scales, bf16 C; and the
block-scaled configurations) against cuBLASLt's (``torch._scaled_mm``, with and without its fast accumulation, and
block-scaled), measured the same way (interleaved, repeated, median and spread, inputs and clocks stated) at square and LLM shapes.
"""

from __future__ import annotations

import ctypes
import statistics
import subprocess

import workbench as wb
from workbench.kernels import gemm_ladder as G

from ..dsl.runtime import cupy as backend_cupy
from .bandwidth import _times

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


INPUTS = ("A and B: torch.randn (normal(0,1), generator seeded 0) cast to fp16; every rung writes an fp32 C (cuBLAS "
          "an fp16 one); the irregular-size check: integers in [-3, 3]")
TIMING = ("each rung timed call by call alternating with cuBLAS (torch.matmul), CUDA events around every call, calls "
          "queued back to back behind a 5 ms hold kernel (so the GPU never waits for the host) after 3 warm-ups "
          "each; {repeats} repetitions, each visiting every rung in turn; a rung's ratio_to_cublas is the median over "
          "the repetitions of cuBLAS's median time over the rung's, ratio_spread its min/max/quartiles")
THROTTLING = ("not prevented (no pauses, no locked clocks): interleaving puts any drift on the rung and cuBLAS alike, "
              "the repetitions show what is left as spread, and the clocks read before and after each size "
              "(nvidia-smi) show whether the GPU slowed")

_SMI_FIELDS = ("name", "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem", "temperature.gpu", "power.draw",
               "clocks_event_reasons.active")


def gpu_clocks(device: int = 0) -> dict:
    """The GPU's SM and memory clocks (MHz, now and the maximum), temperature, power draw and active throttle
    reasons (a bit mask, nvidia-smi's clocks_event_reasons), read with nvidia-smi; {"unavailable": why} without
    it.  ``device``: torch's index, mapped through CUDA_VISIBLE_DEVICES."""
    import os
    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    target = visible[device] if device < len(visible) else str(device)
    fields = list(_SMI_FIELDS)
    for _ in range(2):
        try:
            out = subprocess.run(["nvidia-smi", "-i", target, f"--query-gpu={','.join(fields)}",
                                  "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as e:
            return {"unavailable": f"nvidia-smi: {e}"}
        if out.returncode == 0:
            vals = [v.strip() for v in out.stdout.strip().splitlines()[0].split(",")]
            return dict(zip(fields, vals, strict=False))
        fields = fields[:-1]      # older drivers name it clocks_throttle_reasons.active; without it, then
    return {"unavailable": f"nvidia-smi failed: {(out.stderr or out.stdout).strip()[:200]}"}


def _spread(xs) -> dict:
    q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else [xs[0]] * 3
    return {"min": min(xs), "q1": q[0], "median": statistics.median(xs), "q3": q[2], "max": max(xs)}


def run(quick: bool = False, rungs=None, repeats=None) -> dict:
    if not backend_cupy.gpu_available():
        return {"gpu": False, "skipped": "skipped: no CUDA GPU is visible (cupy sees none), and the GEMM ladder "
                                         "against cuBLAS is a GPU measurement"}
    import torch
    repeats = repeats or (3 if quick else 5)
    props = torch.cuda.get_device_properties(0)
    out = {"gpu": True, "device": props.name, "sms": props.multi_processor_count, "dtype": "float16, fp32 accumulation",
           "inputs": INPUTS, "timing": TIMING.format(repeats=repeats), "throttling": THROTTLING, "repeats": repeats,
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
        ref = torch.matmul(a, b.t()).float()
        res = {"clocks_before": gpu_clocks(), "rungs": {}}
        timed = [r for r in ladder if not (r.name == "simt" and size > 4096)]   # the floor takes seconds a call
        cs = {r.name: torch.empty(size, size, device="cuda") for r in timed}    # there; its 4096 figure stands
        ops = {r.name: _operands(r, a, b, cs[r.name]) for r in timed}
        runs = {r.name: [] for r in timed}            # (cuBLAS seconds, rung seconds) per repetition
        for _ in range(repeats):
            for r in timed:
                t_cublas, t = _times([lambda a=a, b=b: torch.matmul(a, b.t()),
                                      lambda r=r, o=ops[r.name]: r.launch(*o)],
                                     3 if r.name in ("simt", "mma") else reps)
                runs[r.name].append((t_cublas, t))
        res["clocks_after"] = gpu_clocks()
        res["cublas_tflops"] = flop / statistics.median(tc for v in runs.values() for tc, _ in v) / 1e12
        for r in timed:
            c, o = cs[r.name], ops[r.name]
            ratios = [tc / t for tc, t in runs[r.name]]
            # fp16 inputs, fp32 accumulation in another order than cuBLAS (whose output is rounded to fp16)
            err = float(((c.float() - ref).abs().max() / ref.abs().max()).item())
            sp = r.kernel_for(o).specialize(o)
            g = sp.load_gpu()
            threads = r.config.threads if r.config else (r.mma.size if r.mma else 256)
            entry = {"tflops": flop / statistics.median(t for _, t in runs[r.name]) / 1e12,
                     "ratio_to_cublas": statistics.median(ratios), "ratio_spread": _spread(ratios),
                     "ratios": ratios, "cublas_tflops_beside": [flop / tc / 1e12 for tc, _ in runs[r.name]],
                     "max_rel_error": err,
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


# -- FP8: the Hopper fp8 GEMM against cuBLASLt's (torch._scaled_mm) -------------------------------------------------
FP8_SHAPES = {        # name -> (M, N, K)
    "4096^3": (4096, 4096, 4096),
    "8192^3": (8192, 8192, 8192),
    "8192x7168x2048": (8192, 7168, 2048),
    # an LLM projection: a 70B-class model's MLP up-projection (hidden 8192 -> 28672) over 4096 tokens
    "llm_mlp_up_4096x28672x8192": (4096, 28672, 8192),
}
FP8_CONFIGS = [       # HopperGemm keyword arguments (dtype e4m3, bk = 128 fp8 elements: 128-byte SW128 rows)
    dict(bm=128, bn=256, stages=4, group=8),
    dict(bm=128, bn=256, stages=4, group=8, persistent=True),
    dict(bm=128, bn=256, stages=4, group=8, cluster=2),
    dict(bm=128, bn=128, stages=6, group=8),
    dict(bm=128, bn=128, stages=5, group=8, pingpong=True),
    # the schedule steps of the fp16/bf16 kernel (SCHEDULE_STEPS), on fp8 operands
    dict(bm=128, bn=256, stages=4, group=16, persistent=True, overlap=True, regs=(24, 240)),
    dict(bm=128, bn=256, stages=4, group=16, persistent=True, overlap=True, regs=(24, 240), stream_k=True),
]
FP8_BLOCK_CONFIGS = [   # block scales (DeepSeek-V3's 1 x 128 on A, 128 x 128 on B): 128 x 128 x 128 tiles only
    dict(bm=128, bn=128, stages=6, group=8, block_scales=True),
    dict(bm=128, bn=128, stages=5, group=8, block_scales=True, persistent=True),
    dict(bm=128, bn=128, stages=5, group=8, block_scales=True, persistent=True, overlap=True),
]
FP8_IRREGULAR = (1000, 1008, 528)   # M, N, K: ragged tiles and k-tiles (N, K multiples of 16: cuBLASLt takes no other)
FP8_INPUTS = ("A (M, K) and B (N, K): torch.randn (normal(0,1), generator seeded 0) cast to e4m3 (float8_e4m3fn), "
              "row-major (torch._scaled_mm gets B.t(), column-major, as it requires); per-tensor scales scale_a = 0.5, "
              "scale_b = 2.0 (fp32 device tensors of one element); C bf16. Block-scaled rung: scale_a (M, K/128) and "
              "scale_b (N/128, K/128) uniform in [0.5, 1.5), the same for cuBLASLt's block-scaled torch._scaled_mm (scale_a "
              "M-major, scale_b seen as (K/128, N/128): the layouts it takes). The exactness check at a ragged size: "
              "integers in [-3, 3]")
FP8_TIMING = ("each configuration timed call by call alternating with torch._scaled_mm twice (use_fast_accum=False, "
              "cuBLASLt's default that promotes partial sums, and use_fast_accum=True, which accumulates in the tensor "
              "cores' accumulators as our per-tensor kernel does), CUDA events around every call, calls queued back to "
              "back behind a 5 ms hold kernel (so the GPU never waits for the host) after 3 warm-ups each, {reps} "
              "calls a measurement; {repeats} repetitions, each visiting every configuration in turn; ratio = the "
              "median over the repetitions of (cuBLASLt's median time / ours), spread = min/quartiles/max of those "
              "ratios. A block-scaled configuration alternates with cuBLASLt's block-scaled torch._scaled_mm too "
              "(ratio_to_scaled_mm_blockwise: like for like), where this torch and cuBLAS have it")


def _blockwise_scales(scale_a, scale_b):
    """Our block scales as cuBLASLt's block-scaled ``torch._scaled_mm`` takes them (made once, not timed): scale_a
    (M, K/128) M-major; scale_b (N/128, K/128), row-major, seen as B^T's (K/128, N/128).  torch 2.11 asks for
    exactly that stride, K/128, even where it is not a multiple of 4 (16 bytes), and cuBLAS then returns a wrong C:
    at 1000 x 1008 x 528 (K/128 = 5) 36-75% of it (unit or power-of-two scales), NaN among them (H200, CUDA 13.0;
    ``scaled_mm_blockwise_exact`` in the fp8 suite's result)."""
    return scale_a.t().contiguous().t(), scale_b.contiguous().t()


def _scaled_mm_blockwise(torch, a, b, scales):
    """cuBLASLt's block-scaled fp8 GEMM (CUDA 12.9+, DeepSeek-V3's recipe: 1 x 128 blocks of A, 128 x 128 of B)
    through ``torch._scaled_mm``, scales from :func:`_blockwise_scales`; bf16 C."""
    return torch._scaled_mm(a, b.t(), scale_a=scales[0], scale_b=scales[1], out_dtype=torch.bfloat16)


def _block_scaled_exact(torch, a, b, scale_a, scale_b):
    """C = sum over 128-deep k-blocks kt of (A_kt @ B_kt^T) * scale_a[:, kt] * scale_b[n // 128, kt] in float64,
    then bf16: exact where every product and sum is (small integers, power-of-two scales)."""
    m, k = a.shape
    n = b.shape[0]
    out = torch.zeros((m, n), device=a.device, dtype=torch.float64)
    for kt in range(-(-k // 128)):
        blk = slice(kt * 128, (kt + 1) * 128)
        out += (a[:, blk].double() @ b[:, blk].double().t()) * scale_a[:, kt:kt + 1].double() \
            * scale_b[:, kt].double().repeat_interleave(128)[:n][None, :]
    return out.to(torch.bfloat16)


def _blockwise_scaled_mm_available(torch):
    """True where this torch and cuBLAS run :func:`_scaled_mm_blockwise` (a 256 x 384 x 512 probe), else why not."""
    e4m3 = torch.float8_e4m3fn
    a = torch.ones((256, 512), device="cuda").to(e4m3)
    b = torch.ones((384, 512), device="cuda").to(e4m3)
    try:
        c = _scaled_mm_blockwise(torch, a, b, _blockwise_scales(torch.ones((256, 4), device="cuda"),
                                                                torch.ones((3, 4), device="cuda")))
    except (RuntimeError, ValueError, TypeError) as e:
        return f"unavailable: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
    return True if bool((c.float() == 512).all()) else "unavailable: the probe's product is wrong"


def _gpu_short_name(name: str) -> str:
    for model in ("H100", "H200", "H800", "H20", "GH200", "B200", "A100"):
        if model in name:
            return model
    return "".join(ch for ch in name if ch.isalnum()) or "gpu"


def _needs_sm90(measurement, kernel):
    """None on an SM90 GPU, else the suite's result saying why it was skipped."""
    if not backend_cupy.gpu_available():
        return {"gpu": False, "skipped": f"skipped: no CUDA GPU is visible (cupy sees none), and {measurement} is a "
                                         f"GPU measurement"}
    if backend_cupy.current_arch() != "sm_90":
        return {"gpu": True, "skipped": f"skipped: {kernel} needs an SM90 GPU, this is {backend_cupy.current_arch()}"}
    return None


def run_fp8(quick: bool = False, repeats=None, shapes=None, configs=None) -> dict:
    """The fp8 suite: each configuration of :data:`FP8_CONFIGS` (e4m3, per-tensor scales, bf16 C) and of
    :data:`FP8_BLOCK_CONFIGS` against ``torch._scaled_mm`` at :data:`FP8_SHAPES` (the block-scaled ones also against
    its block-scaled form, where this torch has it), interleaved call by call, repeated, median and spread; exact
    against ``torch._scaled_mm`` at a ragged size (integer inputs, power-of-two block scales: every sum exact);
    relative error against an fp32 product of the same fp8 values at each shape.  Skipped (and says so) without an
    SM90 GPU."""
    skipped = _needs_sm90("the fp8 GEMM against cuBLASLt", "the fp8 wgmma kernel")
    if skipped:
        return skipped
    import torch

    from workbench.kernels.gemm_hopper import HopperGemm
    repeats = repeats or (3 if quick else 5)
    reps = 10 if quick else 20
    shapes = shapes or (["4096^3", "8192x7168x2048"] if quick else list(FP8_SHAPES))
    configs = configs if configs is not None else FP8_CONFIGS
    props = torch.cuda.get_device_properties(0)
    e4m3, bf16 = torch.float8_e4m3fn, torch.bfloat16
    out = {"gpu": True, "device": props.name, "gpu_short": _gpu_short_name(props.name),
           "sms": props.multi_processor_count, "torch": torch.__version__,
           "dtype": "e4m3 x e4m3, fp32 accumulation, bf16 C, per-tensor scales (block-scaled rung: per-block)",
           "inputs": FP8_INPUTS, "timing": FP8_TIMING.format(reps=reps, repeats=repeats), "throttling": THROTTLING,
           "repeats": repeats, "irregular": {}, "shapes": {}}
    cfgs = {repr(c): c for c in [HopperGemm(dtype=wb.Float8E4M3FN, **kw) for kw in list(configs) + FP8_BLOCK_CONFIGS]}
    gen = torch.Generator(device="cuda").manual_seed(0)
    sa, sb = torch.tensor([0.5], device="cuda"), torch.tensor([2.0], device="cuda")

    def scaled_mm(a, b, fast):
        return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=bf16, use_fast_accum=fast)

    out["scaled_mm_blockwise"] = _blockwise_scaled_mm_available(torch)

    m, n, k = FP8_IRREGULAR
    a = torch.randint(-3, 4, (m, k), device="cuda", generator=gen).float().to(e4m3)
    b = torch.randint(-3, 4, (n, k), device="cuda", generator=gen).float().to(e4m3)
    want = scaled_mm(a, b, False)
    # block scales of powers of two: every product and sum exact, so the exact product in bf16 is the reference;
    # cuBLASLt's block-scaled GEMM beside it at this K (K/128 = 5) and at K = 512 (K/128 = 4: see _blockwise_scales)
    isa = 2.0 ** torch.randint(-2, 3, (m, -(-k // 128)), device="cuda", generator=gen).float()
    isb = 2.0 ** torch.randint(-2, 3, (-(-n // 128), -(-k // 128)), device="cuda", generator=gen).float()
    exact = _block_scaled_exact(torch, a, b, isa, isb)
    k4 = k // 512 * 512
    a4, b4, sa4, sb4 = a[:, :k4].contiguous(), b[:, :k4].contiguous(), isa[:, :k4 // 128], isb[:, :k4 // 128]
    theirs4 = None
    if out["scaled_mm_blockwise"] is True:
        out["scaled_mm_blockwise_exact"] = {
            f"{m}x{n}x{k}": bool(torch.equal(_scaled_mm_blockwise(torch, a, b, _blockwise_scales(isa, isb)), exact))}
        theirs4 = _scaled_mm_blockwise(torch, a4, b4, _blockwise_scales(sa4, sb4))
        out["scaled_mm_blockwise_exact"][f"{m}x{n}x{k4}"] = bool(torch.equal(
            theirs4, _block_scaled_exact(torch, a4, b4, sa4, sb4)))
    for name, cfg in cfgs.items():
        c = torch.full((m, n), float("nan"), device="cuda", dtype=bf16)
        cfg.launch(a, b, c, *((isa, isb) if cfg.block_scales else (sa, sb)))
        torch.cuda.synchronize()
        if cfg.block_scales:
            row = out["irregular"][name] = {"shape": [m, n, k], "exact": bool(torch.equal(c, exact))}
            if theirs4 is not None:
                c4 = torch.full((m, n), float("nan"), device="cuda", dtype=bf16)
                cfg.launch(a4, b4, c4, sa4, sb4)
                row["exact_vs_scaled_mm_blockwise_at_k"] = [k4, bool(torch.equal(c4, theirs4))]
        else:
            out["irregular"][name] = {"shape": [m, n, k], "exact_vs_scaled_mm": bool(torch.equal(c, want))}
    for shape_name in shapes:
        m, n, k = FP8_SHAPES[shape_name]
        flop = 2 * m * n * k
        a = torch.randn(m, k, device="cuda", generator=gen).to(e4m3)
        b = torch.randn(n, k, device="cuda", generator=gen).to(e4m3)
        bsa = torch.rand((m, -(-k // 128)), device="cuda", generator=gen) + 0.5
        bsb = torch.rand((-(-n // 128), -(-k // 128)), device="cuda", generator=gen) + 0.5
        ref = (a.float() @ b.float().t())                    # fp32 (no TF32: torch's default) of the same values
        theirs = scaled_mm(a, b, False)
        res = {"mnk": [m, n, k], "clocks_before": gpu_clocks(), "configs": {}}
        entries = {}
        blockwise = out["scaled_mm_blockwise"] is True
        bscales = _blockwise_scales(bsa, bsb)
        theirs_block = _scaled_mm_blockwise(torch, a, b, bscales) if blockwise else None
        for name, cfg in cfgs.items():
            c = torch.empty((m, n), device="cuda", dtype=bf16)
            scales = (bsa, bsb) if cfg.block_scales else (sa, sb)
            kern, ops = cfg.operands(a, b, c, *scales)
            grid, blk = cfg.grid(m, n), (cfg.threads, 1, 1)
            entries[name] = (cfg, c, kern, ops, (lambda kk=kern, g=grid, bl=blk, o=ops: kk[g, bl](*o)))
        runs = {name: [] for name in entries}
        for _ in range(repeats):
            for name, (cfg, _, _, _, fn) in entries.items():
                anchors = [lambda a=a, b=b: scaled_mm(a, b, False), lambda a=a, b=b: scaled_mm(a, b, True)]
                if cfg.block_scales and blockwise:
                    anchors.append(lambda a=a, b=b, s=bscales: _scaled_mm_blockwise(torch, a, b, s))
                t = _times(anchors + [fn], reps)
                runs[name].append((t[0], t[1], t[-1]) + tuple(t[2:-1]))
        res["clocks_after"] = gpu_clocks()
        t_def = statistics.median(t[0] for v in runs.values() for t in v)
        t_fast = statistics.median(t[1] for v in runs.values() for t in v)
        res["scaled_mm_tflops"] = flop / t_def / 1e12
        res["scaled_mm_fast_accum_tflops"] = flop / t_fast / 1e12
        for name, (cfg, c, kern, ops, _) in entries.items():
            r_def = [t[0] / t[2] for t in runs[name]]
            r_fast = [t[1] / t[2] for t in runs[name]]
            # the block-scaled rung's scales differ from the others': its errors are the tests' business
            err_ref = None if cfg.block_scales else float(((c.float() - ref).abs().max() / ref.abs().max()).item())
            attrs = kern.specialize(ops).load_gpu().attributes()
            block_cmp = {}
            if cfg.block_scales and blockwise:
                r_blk = [t[3] / t[2] for t in runs[name]]
                tb = theirs_block.float()
                block_cmp = {"ratio_to_scaled_mm_blockwise": statistics.median(r_blk),
                             "ratio_blockwise_spread": _spread(r_blk), "ratios_blockwise": r_blk,
                             "scaled_mm_blockwise_tflops": flop / statistics.median(t[3] for t in runs[name]) / 1e12,
                             "max_rel_diff_vs_scaled_mm_blockwise":
                             float(((c.float() - tb).abs().max() / tb.abs().max()).item())}
            res["configs"][name] = {
                "scaling": "block" if cfg.block_scales else "tensor",
                "tflops": flop / statistics.median(t[2] for t in runs[name]) / 1e12,
                "ratio_to_scaled_mm": statistics.median(r_def), "ratio_spread": _spread(r_def), "ratios": r_def,
                "ratio_to_scaled_mm_fast_accum": statistics.median(r_fast), "ratio_fast_accum_spread": _spread(r_fast),
                "max_rel_error_vs_fp32": err_ref,
                "max_rel_diff_vs_scaled_mm": None if cfg.block_scales else
                float(((c.float() - theirs.float()).abs().max() / theirs.float().abs().max()).item()),
                "registers": attrs["registers"], "local_bytes": attrs["local_bytes"],
                "epilogue": "tma" if len(ops) == 7 else "registers", **block_cmp}
        tensor_rows = {k2: v for k2, v in res["configs"].items() if v["scaling"] == "tensor"}
        best = max(tensor_rows, key=lambda x: tensor_rows[x]["ratio_to_scaled_mm"])
        res["best"] = {"config": best, "ratio_to_scaled_mm": tensor_rows[best]["ratio_to_scaled_mm"],
                       "ratio_to_scaled_mm_fast_accum": tensor_rows[best]["ratio_to_scaled_mm_fast_accum"]}
        out["shapes"][shape_name] = res
        entries.clear()
        torch.cuda.empty_cache()
    return out


# -- the Hopper schedule steps (issue 31): one change per step, each against cuBLAS in the same run ----------------
SCHEDULE_STEPS = [    # (step, HopperGemm keyword arguments); 128 x 256 x 64 tiles, 4 stages, bands of 16 m-tiles
    ("persistent (rung 7)", dict(bm=128, bn=256, bk=64, stages=4, group=16, persistent=True)),
    ("+ overlapped epilogue, setmaxnreg 24/240", dict(bm=128, bn=256, bk=64, stages=4, group=16, persistent=True,
                                                      overlap=True, regs=(24, 240))),
    ("+ stream-K (last two waves)", dict(bm=128, bn=256, bk=64, stages=4, group=16, persistent=True, overlap=True,
                                         regs=(24, 240), stream_k=True)),
    ("stream-K alone", dict(bm=128, bn=256, bk=64, stages=4, group=16, persistent=True, stream_k=True)),
    # tile shapes per shape family: few rows want many small tiles of one consumer warpgroup (at 256 rows 128 x 256
    # tiles leave 100 of 132 SMs idle, and splitting K over them costs more in partial sums than it gains); ragged
    # sizes a tile that wastes less past the edge (8000 = 41.7 x 192 but 31.25 x 256), with stream-K
    ("64 x 128 tiles, one consumer, 8 stages", dict(bm=64, bn=128, bk=64, consumers=1, stages=8, group=8,
                                                    persistent=True)),
    ("128 x 192 tiles, overlap, stream-K", dict(bm=128, bn=192, bk=64, stages=4, group=16, persistent=True,
                                                overlap=True, regs=(24, 240), stream_k=True)),
    # wave quantization: ping-pong consumers (each tile's epilogue under the other's MMAs) on tiles whose count fills
    # the SMs' waves: N = 7168 is 41 tiles of 176 (M = 2048: 656 tiles, 4.97 waves of 132 SMs; 128 x 256: 3.39)
    ("128 x 160 tiles, ping-pong", dict(bm=128, bn=160, bk=64, stages=4, group=16, pingpong=True, regs=(24, 240))),
    ("128 x 176 tiles, ping-pong, bands of 2", dict(bm=128, bn=176, bk=64, stages=5, group=2, pingpong=True,
                                                    regs=(24, 240))),
    # N = 28672 is 128 tiles of 224: at M = 256, 256 tiles fill 1.94 waves of 132 SMs (128 x 256: 224, 1.70)
    ("128 x 224 tiles, setmaxnreg 24/240", dict(bm=128, bn=224, bk=64, stages=4, group=16, persistent=True,
                                                regs=(24, 240))),
]
# C in fp32 (twice the bytes of a 16-bit C): the overlapped epilogue holds the last half of a tile's chunks (as many
# registers as a 16-bit C's whole tile) and stores the first half at once; ping-pong's epilogue runs under the other
# consumer's MMAs whole
_STEP = dict(SCHEDULE_STEPS)
SCHEDULE_STEPS_C32 = [
    ("persistent (rung 7)", _STEP["persistent (rung 7)"]),
    ("+ overlapped epilogue (half of C held), 24/240", _STEP["+ overlapped epilogue, setmaxnreg 24/240"]),
    ("+ stream-K (last two waves)", _STEP["+ stream-K (last two waves)"]),
    ("stream-K alone", _STEP["stream-K alone"]),
    ("64 x 128 tiles, one consumer, 8 stages", _STEP["64 x 128 tiles, one consumer, 8 stages"]),
    ("128 x 128 tiles, ping-pong", dict(bm=128, bn=128, bk=64, stages=5, group=16, pingpong=True, regs=(24, 240))),
    *((name, _STEP[name]) for name in ("128 x 160 tiles, ping-pong", "128 x 176 tiles, ping-pong, bands of 2",
                                       "128 x 224 tiles, setmaxnreg 24/240")),
]
SCHEDULE_SHAPES = {   # name -> (M, N, K): square, LLM projections, ragged, few rows
    "4096^3": (4096, 4096, 4096),
    "8192^3": (8192, 8192, 8192),
    "8192x7168x2048": (8192, 7168, 2048),
    "4096x28672x8192": (4096, 28672, 8192),
    "8000^3": (8000, 8000, 8000),
    "16384x4096x4096": (16384, 4096, 4096),
    "2048x7168x2048": (2048, 7168, 2048),
    "1024x28672x8192": (1024, 28672, 8192),
    "256x28672x8192": (256, 28672, 8192),
    "256x4096x4096": (256, 4096, 4096),
}


def _schedule_shape(name):
    """(M, N, K) of a :data:`SCHEDULE_SHAPES` name or an "MxNxK" string of positive integers."""
    if name in SCHEDULE_SHAPES:
        return SCHEDULE_SHAPES[name]
    parts = name.split("x") if isinstance(name, str) else []
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"run_schedules: expected a shape named in SCHEDULE_SHAPES ({', '.join(SCHEDULE_SHAPES)}) or "
                         f"an 'MxNxK' string of positive integers, but got {name!r}.")
    return tuple(int(p) for p in parts)


def run_schedules(quick: bool = False, repeats=None, shapes=None, dtypes=("float16", "bfloat16"), steps=None,
                  c=None) -> dict:
    """Each step of :data:`SCHEDULE_STEPS` (or ``steps``: (name, HopperGemm keyword arguments) pairs) against cuBLAS
    at :data:`SCHEDULE_SHAPES` (or ``shapes``: their names or "MxNxK" strings), fp16 and bf16: interleaved call by
    call, ``repeats`` repetitions each visiting every step, the median ratio and its spread; exact against torch at a
    ragged size (integer inputs); the maximum relative error against an fp32 product at each shape.  ``c=None``: C
    in the inputs' type, cuBLAS as ``torch.matmul``; ``c="float32"`` (as ``wb.tune``'s ``c``): C in fp32, the steps of
    :data:`SCHEDULE_STEPS_C32` unless given, cuBLAS as ``torch.mm(..., out_dtype=torch.float32)`` (the same fp32
    accumulators written whole).  Skipped (and says so) without an SM90 GPU."""
    from workbench.kernels.gemm_hopper import HopperGemm
    if c not in (None, "float32"):
        raise ValueError(f"run_schedules: expected c None (C in the inputs' type) or 'float32', but got {c!r}.")
    c32 = c == "float32"
    shapes = shapes or (["4096^3", "8192x7168x2048"] if quick else list(SCHEDULE_SHAPES))
    mnks = {name: _schedule_shape(name) for name in shapes}
    steps = list(steps or (SCHEDULE_STEPS_C32 if c32 else SCHEDULE_STEPS))
    bad = [d for d in dtypes if d not in ("float16", "bfloat16")]
    if bad:
        raise ValueError(f"run_schedules: expected dtypes 'float16' or 'bfloat16', but got {bad}.")
    # every step's configuration checked (HopperGemm validates itself) before any GPU work
    configs_of = {d: [(s, HopperGemm(dtype={"float16": wb.Float16, "bfloat16": wb.BFloat16}[d], **kw))
                      for s, kw in steps] for d in dtypes}
    skipped = _needs_sm90("the Hopper GEMM against cuBLAS", "the wgmma kernel")
    if skipped:
        return skipped
    import torch

    repeats = repeats or (3 if quick else 5)
    reps = 10 if quick else 20
    props = torch.cuda.get_device_properties(0)
    out = {"gpu": True, "device": props.name, "gpu_short": _gpu_short_name(props.name),
           "sms": props.multi_processor_count, "torch": torch.__version__,
           "c": c or "input",
           "inputs": ("A (M, K) and B (N, K): torch.randn (normal(0,1), generator seeded 0) cast to the dtype; "
                      + ("C in fp32 (as torch.mm(a, b.t(), out_dtype=torch.float32) writes it)" if c32 else
                         "C in the inputs' type (as torch.matmul writes it)")
                      + "; the exactness check at 1000 x 1000 x 504: integers in [-3, 3]"),
           "timing": TIMING.replace("rung", "step").format(repeats=repeats) + f"; {reps} calls a measurement",
           "throttling": THROTTLING, "repeats": repeats, "steps": [s for s, _ in steps], "results": {}}
    gen = torch.Generator(device="cuda").manual_seed(0)
    for dt_name in dtypes:
        tdt = getattr(torch, dt_name)
        cdt = torch.float32 if c32 else tdt
        configs = configs_of[dt_name]

        def cublas(a, b):
            return torch.mm(a, b.t(), out_dtype=torch.float32) if c32 else torch.matmul(a, b.t())
        m, n, k = 1000, 1000, 504
        a = torch.randint(-3, 4, (m, k), device="cuda", generator=gen).to(tdt)
        b = torch.randint(-3, 4, (n, k), device="cuda", generator=gen).to(tdt)
        want = (a.float() @ b.float().t()).to(cdt)
        if not torch.equal(cublas(a, b), want):    # the anchor itself writes what it is said to
            raise RuntimeError(f"run_schedules: cuBLAS's C ({cdt}) differs from the exact product at 1000x1000x504.")
        exact = {}
        for s, cfg in configs:
            out_c = torch.full((m, n), float("nan"), device="cuda", dtype=cdt)
            cfg.launch(a, b, out_c)
            torch.cuda.synchronize()
            exact[s] = bool(torch.equal(out_c, want))
        for shape_name in shapes:
            m, n, k = mnks[shape_name]
            flop = 2 * m * n * k
            a = torch.randn(m, k, device="cuda", generator=gen).to(tdt)
            b = torch.randn(n, k, device="cuda", generator=gen).to(tdt)
            ref = a.float() @ b.float().t()
            res = {"mnk": [m, n, k], "dtype": dt_name, "c": str(cdt).replace("torch.", ""),
                   "clocks_before": gpu_clocks(), "steps": {}}
            entries = {}
            for s, cfg in configs:
                out_c = torch.empty((m, n), device="cuda", dtype=cdt)
                kern, ops = cfg.operands(a, b, out_c)
                grid, blk = cfg.grid(m, n), (cfg.threads, 1, 1)
                entries[s] = (cfg, out_c, kern, ops, (lambda kk=kern, g=grid, bl=blk, o=ops: kk[g, bl](*o)))
            runs = {s: [] for s in entries}
            for _ in range(repeats):
                for s, (_, _, _, _, fn) in entries.items():
                    runs[s].append(_times([lambda a=a, b=b: cublas(a, b), fn], reps))
            res["clocks_after"] = gpu_clocks()
            res["cublas_tflops"] = flop / statistics.median(t[0] for v in runs.values() for t in v) / 1e12
            for s, (cfg, out_c, kern, ops, _) in entries.items():
                ratios = [t[0] / t[1] for t in runs[s]]
                attrs = kern.specialize(ops).load_gpu().attributes()
                res["steps"][s] = {
                    "config": repr(cfg), "tflops": flop / statistics.median(t[1] for t in runs[s]) / 1e12,
                    # cuBLAS as timed beside this step: far from cublas_tflops would mean the pairs disturbed it
                    "cublas_tflops_alongside": flop / statistics.median(t[0] for t in runs[s]) / 1e12,
                    "ratio_to_cublas": statistics.median(ratios), "ratio_spread": _spread(ratios), "ratios": ratios,
                    "max_rel_error_vs_fp32": float(((out_c.float() - ref).abs().max() / ref.abs().max()).item()),
                    "exact_at_1000x1000x504": exact[s], "registers": attrs["registers"],
                    "local_bytes": attrs["local_bytes"]}
            best = max(res["steps"], key=lambda x: res["steps"][x]["ratio_to_cublas"])
            res["best"] = {"step": best, "config": res["steps"][best]["config"],
                           "ratio_to_cublas": res["steps"][best]["ratio_to_cublas"]}
            out["results"][f"{shape_name} {dt_name}" + (", C float32" if c32 else "")] = res
    return out
