"""Layout algebra vs pycute: composition and logical_divide over a fixed 1,000-pair suite,
and a 64x64 layout evaluated at all 4,096 indices.  Writes benchmarks/results/algebra-<machine>.json.

    python benchmarks/bench_algebra.py [--quick] [--machine NAME]
"""

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from workbench.bench.algebra import run  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="200 pairs, fewer rounds (a smoke run)")
    ap.add_argument("--machine", default="cpu", help="name used in the result file (default: cpu)")
    args = ap.parse_args(argv)
    result = run(quick=args.quick)
    out = pathlib.Path(__file__).resolve().parent / "results" / f"algebra-{args.machine}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    r, e = result["ratios_pycute_over_ours"], result["evaluate_64x64"]
    print(f"composition: {r['composition']:.2f}x pycute, logical_divide: {r['logical_divide']:.2f}x pycute "
          f"(>= 1 means at least as fast); 64x64 evaluation {e['ours_ms']:.3f} ms "
          f"(swizzled {e['swizzled_ours_ms']:.3f} ms, target < 5 ms)")
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
