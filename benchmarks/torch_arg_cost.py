"""What one torch tensor argument costs the launcher, part by part (host time, no GPU work).

The launcher reads a torch tensor passed straight in either with the torch reader
(workbench/dlpack/torch_native.py: C++ built against the installed torch, one call that also tells
the hazards) or, without it, through torch's DLPack exchange API (one C call) followed by the three
hazard checks that API does not make (requires_grad, the negative bit, the conjugate bit of complex
tensors) through torch's own getters.  This prints each part as Python sees it (each includes
~40 ns of Python call overhead), and the launcher's host cost per torch tensor (null launch, 1 and
8 tensors) on both paths, so the parts can be compared with the whole on the machine at hand.
Run: python benchmarks/torch_arg_cost.py [--device cuda]   (build the reader first:
python -m workbench build-torch-native; without it only the exchange path is timed)
"""

from __future__ import annotations

import argparse
import ctypes
import sys


def per_call(fn, calls=20000, rounds=15) -> float:
    """Median host µs per call over `rounds` loops of `calls` calls (the bench package's timer)."""
    from workbench.bench import time_calls

    fn()
    return time_calls(fn, calls, repeats=rounds)["median_us"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    import torch

    import workbench as wb
    from workbench.bench import _lab_kernels as K
    from workbench.dlpack import _native
    from workbench.dlpack.importer import exchange_api_of
    from workbench.dsl.runtime import _launch

    x = torch.ones(K.ELEMENTS, device=a.device)
    fp, ver, _ = exchange_api_of(type(x))
    rows = {
        "python call of a no-op (baseline)": per_call(lambda: None),
        "x.requires_grad": per_call(lambda: x.requires_grad),
        "x.is_neg()": per_call(lambda: x.is_neg()),
        "exchange API + decode (_native.exchange)": per_call(lambda: _native.exchange(fp, x, ver)),
    }
    try:
        import tvm_ffi
        rows["tvm_ffi.from_dlpack(x)"] = per_call(lambda: tvm_ffi.from_dlpack(x))
    except ImportError:
        pass
    from workbench.dlpack import torch_native  # noqa: I001 (after the parts above, which time torch's own calls)

    try:
        torch_native.enable()
        paths = {"reader": torch_native.enable, "exchange API": torch_native.disable}
    except RuntimeError as e:
        print(f"(the torch reader is not timed: {e})")
        paths = {"exchange API": torch_native.disable}
    for name, use in paths.items():
        use()
        rows[f"wb.from_dlpack(x), {name}"] = per_call(lambda: wb.from_dlpack(x))
    null = _launch.null_launch_address()
    keep = []

    def launcher(n, args):
        sp = K.TENSORS[n].specialize(tuple(args))
        buf = ctypes.create_string_buffer(max(8, sp.size))
        slots = max(1, sp.size // 8)
        params = (ctypes.c_void_p * slots)(*[ctypes.addressof(buf) + 8 * i for i in range(slots)])
        keep.append((buf, params))
        return _launch.Launcher(null, 1, (K.GRID, 1, 1, K.THREADS, 1, 1), 0, ctypes.addressof(params),
                                ctypes.addressof(buf), ctypes.sizeof(buf), sp.arg_specs, (buf, params))

    for n in (1, 8):
        ts = tuple(torch.ones(K.ELEMENTS, device=a.device) for _ in range(n))
        cached = tuple(wb.from_dlpack(t).mark_layout_dynamic() for t in ts)
        # a tensor passed straight in is specialized on its 16-byte alignment class (args.normalize), the marked
        # wb tensors on their natural alignment: two specializations, one launcher each (as the lab's host suite)
        go_raw, go_cached = launcher(n, ts), launcher(n, cached)
        for name, use in paths.items():
            use()
            assert go_raw(*ts) == 0, f"the launcher refused its own torch tensors ({name})"
            rows[f"launcher, {n} torch tensor(s), {name}"] = per_call(lambda go=go_raw, ts=ts: go(*ts))
        assert go_cached(*cached) == 0, "the launcher refused its own wb tensors"
        rows[f"launcher, {n} cached wb tensor(s)"] = per_call(lambda go=go_cached, c=cached: go(*c))
    for k, v in rows.items():
        print(f"{k:50s} {v:7.3f} us")
    for name in paths:
        per_tensor = (rows[f"launcher, 8 torch tensor(s), {name}"] - rows[f"launcher, 1 torch tensor(s), {name}"]) / 7
        print(f"{'=> per extra torch tensor, ' + name:50s} {per_tensor:7.3f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
