"""Sweep the tiled transposes on a GPU against cupy's device-to-device copy in the same run (8192 x 8192 fp32,
bytes read + written): transpose_tile at several (tile, vec, rows) shapes, both block orders (dst_rows), on
static and on dynamic layouts, with transpose_smem (the teaching kernel) and transpose_naive for reference;
every output checked against src.T.

Two timings per kernel, both with CUDA events, medians over repetitions: 'single' brackets each launch, as
workbench/bench/bandwidth.py does (the GPU waits for the host's launch: a few microseconds of a ~135 us
kernel, more for dynamic layouts, whose arguments the host packs at every launch); 'batched' brackets 20
back-to-back launches (the GPU's own time: the next launch is queued while one runs).  The copy is timed the
same two ways before every kernel and each ratio is taken against the run's median copy, so that a drift of
the clocks during the run does not favour either.

    python3 benchmarks/transpose_sweep.py [--out benchmarks/results/transpose-sweep-H200.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cupy  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.bench.bandwidth import _time  # noqa: E402
from workbench.kernels import examples as E  # noqa: E402

N = 8192
BATCH = 20
TARGET = 0.95
# (tile, vec, rows, dst_rows, layouts): transpose_tile's shapes; 64 x 64 tiles were the fastest on the H200
SHAPES = [
    (64, 4, 32, True, ("static", "dynamic")), (64, 4, 16, True, ("static",)), (64, 4, 8, True, ("static",)),
    (64, 2, 16, True, ("static", "dynamic")), (64, 2, 8, True, ("static",)),
    (64, 1, 8, True, ("static", "dynamic")), (64, 1, 4, True, ("static",)),
    (32, 4, 8, True, ("static",)), (32, 1, 4, True, ("static",)),
    (128, 4, 16, True, ("static",)), (128, 2, 8, True, ("static",)),
    (64, 4, 32, False, ("static",)), (64, 1, 8, False, ("static",)),      # blocks along the source's rows
]


def timings(fn, reps=30):
    """(single, batched) seconds a call: medians of `reps` event-bracketed calls and of reps / 3 batches."""
    single = _time(fn, reps)       # warms up, then the median of event-bracketed calls
    batched = []
    for _ in range(reps // 3):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        for _ in range(BATCH):
            fn()
        b.record()
        b.synchronize()
        batched.append(cupy.cuda.get_elapsed_time(a, b) / 1e3 / BATCH)
    return single, statistics.median(batched)


def configs():
    """[(name, layouts, launch(s, d))]: every kernel and shape timed."""
    out = [("transpose_naive 16x16", "dynamic",
            lambda s, d: E.transpose_naive[(N // 16, N // 16, 1), (16, 16, 1)](s, d)),
           ("transpose_smem 32x8", "dynamic",
            lambda s, d: E.transpose_smem[(N // E.TILE, N // E.TILE, 1), (E.TILE, E.ROWS, 1)](s, d))]
    for tile, vec, rows, dst_rows, kinds in SHAPES:
        for kind in kinds:
            out.append((f"transpose_tile tile={tile} vec={vec} rows={rows} dst_rows={dst_rows} {kind}", kind,
                        lambda s, d, c=(tile, vec, rows, dst_rows): E.launch_transpose_tile(s, d, *c)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    src = cupy.random.default_rng(0).standard_normal((N, N), dtype=cupy.float32)
    dst = cupy.empty_like(src)
    want = cupy.ascontiguousarray(src.T)
    nbytes = 2 * src.nbytes

    def d2d():
        dst.data.copy_from_device(src.data, src.nbytes)

    layouts = {
        # every extent and stride a compile-time constant; cupy allocations are 256-byte aligned
        "static": [wb.from_dlpack(x, assumed_align=16) for x in (src, dst)],
        # extents and row pitch passed at launch, proven multiples of 4 (so 128-bit rows stay provable)
        "dynamic": [wb.from_dlpack(x, assumed_align=16).mark_compact_shape_dynamic(1, divisibility=4)
                    .mark_compact_shape_dynamic(0, divisibility=4) for x in (src, dst)],
    }
    copies, rows = [], []
    for name, kind, launch in configs():
        copies.append(timings(d2d))
        s, d = layouts[kind]
        dst.fill(cupy.nan)
        launch(s, d)
        ok = bool(cupy.array_equal(dst, want))
        single, batched = timings(lambda launch=launch, s=s, d=d: launch(s, d))
        rows.append({"kernel": name, "single_s": single, "batched_s": batched, "correct": ok,
                     "single_TB_per_s": nbytes / single / 1e12, "batched_TB_per_s": nbytes / batched / 1e12})
    copies.append(timings(d2d))
    ref_single = statistics.median(c[0] for c in copies)
    ref_batched = statistics.median(c[1] for c in copies)
    print(f"{'cupy device-to-device copy':56s} single {nbytes / ref_single / 1e12:.3f} TB/s         "
          f"batched {nbytes / ref_batched / 1e12:.3f} TB/s (median of {len(copies)})")
    for r in rows:
        r["single_ratio"] = ref_single / r["single_s"]
        r["batched_ratio"] = ref_batched / r["batched_s"]
        print(f"{r['kernel']:56s} single {r['single_TB_per_s']:.3f} TB/s {r['single_ratio']:.3f}x  "
              f"batched {r['batched_TB_per_s']:.3f} TB/s {r['batched_ratio']:.3f}x  correct={r['correct']}")
    best = {m: max((r for r in rows if r["correct"]), key=lambda r: r[f"{m}_ratio"]) for m in ("single", "batched")}
    for m, r in best.items():
        print(f"best {m:8s} {r['kernel']} {r[f'{m}_ratio']:.3f}x (target {TARGET}x: "
              f"{'met' if r[f'{m}_ratio'] >= TARGET else 'NOT met'})")
    print(f"{time.perf_counter() - t0:.0f} s in all")
    if args.out:
        props = cupy.cuda.runtime.getDeviceProperties(0)
        res = {"device": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
               "command": "python3 benchmarks/transpose_sweep.py", "shape": [N, N], "dtype": "float32",
               "bytes_moved": nbytes, "batch": BATCH, "target_ratio": TARGET,
               "cupy_device_to_device_copy": {
                   "single_s": ref_single, "batched_s": ref_batched,
                   "single_TB_per_s": nbytes / ref_single / 1e12, "batched_TB_per_s": nbytes / ref_batched / 1e12,
                   "runs_single_batched_s": copies},
               "results": rows, "best": {m: {"kernel": r["kernel"], "ratio": r[f"{m}_ratio"]} for m, r in best.items()}}
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
        print("wrote", args.out)
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
