"""What one torch tensor argument costs the launcher, part by part (host time, no GPU work).

The launcher reads a torch tensor through torch's DLPack exchange API (one C call) and checks the
three hazards that API does not (requires_grad, the negative bit, the conjugate bit of complex
tensors) through torch's own getters.  This prints each part as Python sees it (each includes ~40 ns
of Python call overhead), and the launcher's host cost per torch tensor (null launch, 1 and 8
tensors), so the parts can be compared with the whole on the machine at hand.
Run: python benchmarks/torch_arg_cost.py [--device cuda]
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
    import numpy as np
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
        "wb.from_dlpack(x)": per_call(lambda: wb.from_dlpack(x)),
    }
    try:
        import tvm_ffi
        rows["tvm_ffi.from_dlpack(x)"] = per_call(lambda: tvm_ffi.from_dlpack(x))
    except ImportError:
        pass
    null = _launch.null_launch_address()
    for n in (1, 8):
        arrays = [np.ones(K.ELEMENTS, np.float32) for _ in range(n)]
        ts = tuple(torch.ones(K.ELEMENTS, device=a.device) for _ in range(n))
        cached = [wb.from_dlpack(t).mark_layout_dynamic() for t in ts]
        sp = K.TENSORS[n].specialize(tuple(cached))
        buf = ctypes.create_string_buffer(max(8, sp.size))
        slots = max(1, sp.size // 8)
        params = (ctypes.c_void_p * slots)(*[ctypes.addressof(buf) + 8 * i for i in range(slots)])
        go = _launch.Launcher(null, 1, (K.GRID, 1, 1, K.THREADS, 1, 1), 0, ctypes.addressof(params),
                              ctypes.addressof(buf), ctypes.sizeof(buf), sp.arg_specs, (buf, params))
        assert go(*ts) == 0 and go(*cached) == 0, "the launcher refused its own arguments"
        rows[f"launcher, {n} torch tensor(s)"] = per_call(lambda go=go, ts=ts: go(*ts))
        rows[f"launcher, {n} cached wb tensor(s)"] = per_call(lambda go=go, c=tuple(cached): go(*c))
        del arrays
    for k, v in rows.items():
        print(f"{k:45s} {v:7.3f} us")
    per_tensor = (rows["launcher, 8 torch tensor(s)"] - rows["launcher, 1 torch tensor(s)"]) / 7
    print(f"{'=> launcher cost per extra torch tensor':45s} {per_tensor:7.3f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
