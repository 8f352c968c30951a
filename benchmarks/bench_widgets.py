"""Widget responsiveness: building a 64x64 LayoutView's state (< 50 ms) and its SVG (< 100 ms).

Run: ``.venv/bin/python benchmarks/bench_widgets.py [--quick] [--out benchmarks/results/widgets.json]``.
Medians of repeated builds; the machine is recorded with the figures.  Targets are checked here,
in the benchmark, never as timed assertions in the unit tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import workbench as wb  # noqa: E402
from widgets.grid import layout_grid  # noqa: E402
from widgets.layout_view import LayoutView  # noqa: E402
from widgets.tv_view import TVLayoutView  # noqa: E402

TARGETS_MS = {"layout_view_64x64_state": 50.0, "layout_view_64x64_svg": 100.0}


def _median_ms(fn, reps: int) -> tuple[float, list[float]]:
    fn()  # warm: imports, caches of the first call
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples), samples


def run(quick: bool = False) -> dict:
    reps = 5 if quick else 30
    L = wb.make_layout((64, 64), stride=(64, 1))
    # a fresh Layout each time: its offsets cache must not make the state look free
    state = lambda: LayoutView(wb.make_layout((64, 64), stride=(64, 1)))  # noqa: E731
    view = LayoutView(L)
    cases = {
        "layout_view_64x64_state": state,
        "layout_view_64x64_svg": view.to_svg,
        "layout_grid_64x64_only": lambda: layout_grid(wb.make_layout((64, 64), stride=(64, 1))),
        "tv_view_128x8_on_32x32": lambda: TVLayoutView(wb.Layout(((32, 4), 8), ((1, 256), 32)), (32, 32)),
        "layout_view_256x256_state": lambda: LayoutView(wb.make_layout((256, 256), stride=(256, 1))),
    }
    results = {}
    for name, fn in cases.items():
        med, samples = _median_ms(fn, reps)
        row = {"median_ms": round(med, 3), "min_ms": round(min(samples), 3), "reps": reps}
        if name in TARGETS_MS:
            row["target_ms"] = TARGETS_MS[name]
            row["meets_target"] = med < TARGETS_MS[name]
        results[name] = row
    return {
        "suite": "widgets",
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "processor": platform.processor() or platform.machine(), "cpus": os.cpu_count()},
        "svg_bytes_64x64": len(view.to_svg()),
        "synced_bytes_64x64": len(view.canvas.cell_keys) + len(view.canvas.cell_colors),
        "results": results,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    res = run(quick=args.quick)
    text = json.dumps(res, indent=2) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    if not all(r.get("meets_target", True) for r in res["results"].values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
