"""Launch overhead: host time per launch of one small kernel (3 fp32 tensors of 32x32, 2 ints)
through each path, measured in one run so the ratios compare like with like.

GPU paths: the driver floor (ctypes ``cuLaunchKernel`` with prebuilt parameters), cupy's
``RawKernel.__call__``, the DSL's pointer bypass (``wb.make_ptr`` pointers + ints), the DSL with
pre-converted wb tensors, and the DSL with framework tensors converted implicitly each call.
All launch the same generated CUDA code.  Without a GPU only the host-side work of the bypass is
measured (guard + parameter packing, no driver call) and the GPU entries are absent.
"""

from __future__ import annotations

import ctypes

import numpy as np

import workbench as wb
from workbench.bench import time_calls
from workbench.kernels import examples as E

from ..dsl.runtime import cupy as backend_cupy

M = N = 32


def _host_only(n):
    x = np.zeros((M, N), np.float32)
    ptrs = [wb.make_ptr(wb.Float32, x.ctypes.data, "generic")] * 3
    sp = E.add_ptr.specialize((*ptrs, M, N))
    buf = ctypes.create_string_buffer(sp.size)
    args = (*ptrs, M, N)
    r = time_calls(lambda: sp.pack(args, buf), n)
    return {"gpu": False, "guard_and_pack_us": r}


def run(quick: bool = False) -> dict:
    n = 2000 if quick else 20000
    if not backend_cupy.gpu_available():
        return _host_only(n)
    import cupy
    out = {"gpu": True, "kernel": "add_ptr (3 pointers, 2 ints), 32x32 fp32, grid 4 x block 256", "paths": {}}
    xs = [cupy.asarray(np.random.default_rng(i).standard_normal((M, N), dtype=np.float32)) for i in range(3)]
    ptrs = [wb.make_ptr(wb.Float32, a.data.ptr, "gmem", assumed_align=16) for a in xs]
    grid, block = (M * N // 256, 1, 1), (256, 1, 1)
    kern = E.add_ptr
    launch_bypass = kern[grid, block]
    launch_bypass(*ptrs, M, N)
    cupy.cuda.runtime.deviceSynchronize()
    assert cupy.allclose(xs[2], xs[0] + xs[1])
    sp = kern.specializations[-1]
    # the same CUDA source, loaded separately for the baselines
    raw = cupy.RawKernel(sp.cuda_source, sp.ir.name, options=("-std=c++17",))
    raw.compile()
    fn = ctypes.c_void_p(raw.kernel.ptr)
    lib = backend_cupy.libcuda()
    vals = [ctypes.c_uint64(a.data.ptr) for a in xs] + [ctypes.c_int32(M), ctypes.c_int32(N)]
    params = (ctypes.c_void_p * 5)(*[ctypes.addressof(v) for v in vals])
    pp = ctypes.cast(params, ctypes.c_void_p)
    launch = lib.cuLaunchKernel

    def bare():
        launch(fn, 4, 1, 1, 256, 1, 1, 0, None, pp, None)

    m32, n32 = np.int32(M), np.int32(N)

    def cupy_raw():
        raw((4,), (256,), (xs[0], xs[1], xs[2], m32, n32))

    def bypass():
        launch_bypass(*ptrs, M, N)

    tv = [wb.from_dlpack(a, assumed_align=16).mark_layout_dynamic() for a in xs]
    vl = E.vadd[grid, block]

    def wb_tensors():
        vl(*tv)

    def cupy_implicit():
        vl(*xs)

    paths = {"ctypes_cuLaunchKernel_prebuilt": bare, "cupy_RawKernel": cupy_raw, "dsl_pointer_bypass": bypass,
             "dsl_wb_tensors": wb_tensors, "dsl_cupy_arrays_implicit": cupy_implicit}
    try:
        import torch
        if torch.cuda.is_available():
            tt = [torch.from_dlpack(a) for a in xs]

            def torch_implicit():
                vl(*tt)
            paths["dsl_torch_tensors_implicit"] = torch_implicit
    except ImportError:
        pass
    sync = cupy.cuda.runtime.deviceSynchronize
    for f in paths.values():   # warm: compile, load, fill the fast guards
        for _ in range(50):
            f()
    sync()
    res = {k: [] for k in paths}
    for _ in range(3 if quick else 7):     # interleaved rounds: drift hits every path alike
        for k, f in paths.items():
            res[k].append(time_calls(f, n // 4, repeats=1, sync=sync)["median_us"])
    for k, v in res.items():
        out["paths"][k] = {"median_us": float(np.median(v)), "min_us": float(min(v)), "runs_us": v}
    assert cupy.allclose(xs[2], xs[0] + xs[1])
    med = {k: v["median_us"] for k, v in out["paths"].items()}
    out["ratios"] = {
        "bypass_over_ctypes": med["dsl_pointer_bypass"] / med["ctypes_cuLaunchKernel_prebuilt"],
        "bypass_over_cupy_raw": med["dsl_pointer_bypass"] / med["cupy_RawKernel"],
    }
    out["targets"] = {"bypass_over_ctypes_max": 1.25, "bypass_over_cupy_raw_max": 0.9}
    out["pass"] = (out["ratios"]["bypass_over_ctypes"] <= 1.25 and out["ratios"]["bypass_over_cupy_raw"] <= 0.9)
    return out
