"""On a GPU: what converting CUDA tensors costs (issue 2's from_dlpack with torch/cupy CUDA tensors)
and where a kernel launch with framework tensors spends its time.  DESIGN.md's anchors on an H100:
CuTe DSL, 3x (from_dlpack + mark_layout_dynamic) of CUDA tensors 26.6 us; torch's own
``__dlpack__()`` 2.7 us; ``cupy.from_dlpack(torch)`` 16.7 us; CuTe DSL launch with torch tensors
passed implicitly 46.4 us.

    python benchmarks/gpu_conversion.py --out results.json
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cupy  # noqa: E402
import torch  # noqa: E402

import workbench as wb  # noqa: E402
from workbench import bench  # noqa: E402
from workbench.kernels import examples as E  # noqa: E402


def per_call(fn, n=5000, rounds=7):
    for _ in range(200):
        fn()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t0) / n * 1e6)
    out.sort()
    return {"median_us": round(out[len(out) // 2], 3), "min_us": round(out[0], 3)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    a = ap.parse_args()
    xs = [torch.randn(32, 32, device="cuda") for _ in range(3)]
    cs = [cupy.asarray(x) for x in xs]
    x, c = xs[0], cs[0]
    res = {"machine": bench.machine(), "torch": torch.__version__, "cupy": cupy.__version__, "paths": {}}
    p = res["paths"]
    p["torch x.__dlpack__()"] = per_call(lambda: x.__dlpack__())
    p["wb.from_dlpack(torch cuda)"] = per_call(lambda: wb.from_dlpack(x))
    p["wb.from_dlpack(torch cuda).mark_layout_dynamic()"] = per_call(lambda: wb.from_dlpack(x).mark_layout_dynamic())
    p["3x wb.from_dlpack+mark_layout_dynamic (torch cuda)"] = per_call(
        lambda: [wb.from_dlpack(t).mark_layout_dynamic() for t in xs])
    p["cupy c.__dlpack__(stream=-1)"] = per_call(lambda: c.__dlpack__(stream=-1))
    p["wb.from_dlpack(cupy)"] = per_call(lambda: wb.from_dlpack(c))
    p["cupy.from_dlpack(torch)"] = per_call(lambda: cupy.from_dlpack(x))
    launch = E.vadd[(4, 1, 1), (256, 1, 1)]
    tv = [wb.from_dlpack(t).mark_layout_dynamic() for t in xs]
    launch(*tv)
    launch(*xs)
    launch(*cs)
    sync = cupy.cuda.runtime.deviceSynchronize
    sync()
    p["vadd launch, wb tensors (pre-converted)"] = per_call(lambda: launch(*tv), n=2000)
    p["vadd launch, torch tensors (implicit conversion)"] = per_call(lambda: launch(*xs), n=2000)
    p["vadd launch, cupy arrays (implicit conversion)"] = per_call(lambda: launch(*cs), n=2000)
    sync()
    assert torch.allclose(xs[2], xs[0] + xs[1])
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(2000):
        launch(*xs)
    prof.disable()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(12)
    res["profile_torch_implicit"] = s.getvalue()
    res["anchors_h100_us"] = {"CuTe DSL 3x from_dlpack+mark_layout_dynamic (CUDA)": 26.6, "torch __dlpack__ (CUDA)": 2.7,
                              "cupy.from_dlpack(torch)": 16.7, "CuTe DSL launch, torch tensors implicit": 46.4,
                              "CuTe DSL launch, from_dlpack+mark_layout_dynamic each call": 37.9}
    text = json.dumps(res, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
