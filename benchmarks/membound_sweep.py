"""Sweep the memory-bound examples' shapes on a GPU against cupy's device-to-device copy in the same run:
vcopy (elements a thread), vcopy_tv (threads x 128-bit chunks a thread).  The transposes have their own sweep,
benchmarks/transpose_sweep.py.

    python3 benchmarks/membound_sweep.py [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import math

import cupy

import workbench as wb
from workbench.bench.bandwidth import _time
from workbench.kernels import examples as E


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    n = 8192
    src = cupy.random.default_rng(0).standard_normal((n, n), dtype=cupy.float32)
    dst = cupy.empty_like(src)
    nbytes = 2 * src.nbytes
    t = _time(lambda: dst.data.copy_from_device(src.data, src.nbytes), 30)
    d2d = nbytes / t / 1e12
    rows = [{"kernel": "cupy_device_to_device_copy", "TB_per_s": d2d}]
    s1 = wb.from_dlpack(src.reshape(-1), assumed_align=16).mark_layout_dynamic()
    d1 = wb.from_dlpack(dst.reshape(-1), assumed_align=16).mark_layout_dynamic()

    def record(name, launch, want):
        dst.fill(cupy.nan)
        launch()
        ok = bool(cupy.array_equal(dst, want))
        t = _time(launch, 30)
        rows.append({"kernel": name, "TB_per_s": nbytes / t / 1e12, "ratio": nbytes / t / 1e12 / d2d, "correct": ok})
        print(f"{name:40s} {rows[-1]['TB_per_s']:.3f} TB/s {rows[-1]['ratio']:.3f}x {ok}", flush=True)

    for vec in (8, 16):
        g = (math.ceil(n * n / vec / 256), 1, 1)
        record(f"vcopy vec={vec}", lambda g=g, vec=vec: E.vcopy[g, (256, 1, 1)](s1, d1, vec), src)
    for threads, chunks in ((256, 2), (256, 4), (256, 8), (128, 8), (512, 4), (1024, 2)):
        tv = E.copy_tv(threads, chunks)
        g = (math.ceil(n * n / wb.size(tv)), 1, 1)
        record(f"vcopy_tv threads={threads} chunks={chunks}",
               lambda g=g, tv=tv, threads=threads: E.vcopy_tv[g, (threads, 1, 1)](s1, d1, tv), src)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(), "results": rows}, f, indent=1)


if __name__ == "__main__":
    main()
