"""What a DLPack conversion costs per call: ``wb.from_dlpack`` (+ ``mark_layout_dynamic``) and
``wb.make_ptr`` against CuTe DSL's equivalents and the frameworks' own conversions, in one run.

Timings are interleaved (every case once per round, rounds repeated) so that load on a shared
machine hits all cases alike; the ratios, not the microseconds, are the result.
"""

from __future__ import annotations

import time

from . import machine

# The targets: how many times faster than CuTe DSL each of ours must be
TARGETS = {"from_dlpack(torch)": 5.0, "from_dlpack(numpy)": 3.0, "make_ptr": 3.0}


def _cases():
    import numpy as np
    import torch

    import workbench as wb

    x = torch.randn(30, 20)
    n = np.zeros((30, 20), np.float32)
    addr = x.data_ptr()
    ours = {
        "from_dlpack(torch)": lambda: wb.from_dlpack(x),
        "from_dlpack(torch)+mark_layout_dynamic": lambda: wb.from_dlpack(x).mark_layout_dynamic(),
        "from_dlpack(numpy)": lambda: wb.from_dlpack(n),
        "from_dlpack(numpy)+mark_layout_dynamic": lambda: wb.from_dlpack(n).mark_layout_dynamic(),
        "make_ptr": lambda: wb.make_ptr(wb.Float32, addr, "gmem", assumed_align=16),
    }
    reference = {
        "torch x.__dlpack__()": lambda: x.__dlpack__(),
        "numpy n.__dlpack__()": lambda: n.__dlpack__(),
        "np.from_dlpack(torch)": lambda: np.from_dlpack(x),
        "torch.from_dlpack(numpy)": lambda: torch.from_dlpack(n),
    }
    try:
        import tvm_ffi
        reference["tvm_ffi.from_dlpack(torch)"] = lambda: tvm_ffi.from_dlpack(x)
    except ImportError:
        pass
    cute = {}
    try:
        import cutlass
        import cutlass.cute as cute_mod
        from cutlass.cute.runtime import from_dlpack as cute_from_dlpack
        from cutlass.cute.runtime import make_ptr as cute_make_ptr

        gmem = cute_mod.AddressSpace.gmem
        cute = {
            "from_dlpack(torch)": lambda: cute_from_dlpack(x),
            "from_dlpack(torch)+mark_layout_dynamic": lambda: cute_from_dlpack(x).mark_layout_dynamic(),
            "from_dlpack(numpy)": lambda: cute_from_dlpack(n),
            "from_dlpack(numpy)+mark_layout_dynamic": lambda: cute_from_dlpack(n).mark_layout_dynamic(),
            "make_ptr": lambda: cute_make_ptr(cutlass.Float32, addr, gmem, assumed_align=16),
        }
        versions = {"nvidia-cutlass-dsl": getattr(cutlass, "__version__", "installed")}
    except ImportError:
        versions = {"nvidia-cutlass-dsl": None}
    versions.update(torch=torch.__version__, numpy=np.__version__)
    return ours, cute, reference, versions


def _loop(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def run(quick: bool = False) -> dict:
    ours, cute, reference, versions = _cases()
    calls, rounds = (3000, 5) if quick else (20000, 9)
    cases = [("workbench", k, f) for k, f in ours.items()] + [("cute_dsl", k, f) for k, f in cute.items()] + \
            [("reference", k, f) for k, f in reference.items()]
    samples = {(who, k): [] for who, k, _ in cases}
    for _who, _k, f in cases:  # warm up: caches, first-call imports
        _loop(f, 200)
    for _ in range(rounds):
        for who, k, f in cases:
            samples[(who, k)].append(_loop(f, calls))
    med = {key: sorted(v)[len(v) // 2] for key, v in samples.items()}
    result = {"machine": machine(), "versions": versions, "calls_per_sample": calls, "rounds": rounds,
              "unit": "microseconds per call (median of rounds)", "workbench": {}, "cute_dsl": {}, "reference": {},
              "speedup_vs_cute_dsl": {}, "targets": TARGETS}
    for (who, k), v in med.items():
        result[who][k] = round(v, 3)
    for k in ours:
        if k in cute:
            ratio = med[("cute_dsl", k)] / med[("workbench", k)]
            result["speedup_vs_cute_dsl"][k] = round(ratio, 2)
    result["targets_met"] = {k: result["speedup_vs_cute_dsl"].get(k, 0) >= t for k, t in TARGETS.items()} if cute else None
    # issue 31, part 5, as the lab reads it (workbench.bench.lab.TARGETS): TVM-FFI's conversion and marking's cost
    from .lab import verdicts
    ratios = {"mark_layout_dynamic_over_from_dlpack[torch]":
              round(med[("workbench", "from_dlpack(torch)+mark_layout_dynamic")] / med[("workbench", "from_dlpack(torch)")], 3)}
    if ("reference", "tvm_ffi.from_dlpack(torch)") in med:
        ratios["wb_from_dlpack_over_tvm_ffi[torch]"] = round(
            med[("workbench", "from_dlpack(torch)")] / med[("reference", "tvm_ffi.from_dlpack(torch)")], 3)
    if cute:
        ratios["cute_mark_over_wb_mark[torch]"] = round(
            med[("cute_dsl", "from_dlpack(torch)+mark_layout_dynamic")] / med[("workbench", "from_dlpack(torch)+mark_layout_dynamic")], 2)
    result["ratios"] = ratios
    result["host_overhead_targets_met"] = verdicts(ratios)
    return result
