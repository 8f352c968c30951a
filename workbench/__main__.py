"""``python -m workbench bench [suite ...] [--quick] [--out FILE]``: run benchmark suites, print JSON."""

from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workbench")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bench", help="run overhead/bandwidth suites (workbench/bench/<name>.py)")
    b.add_argument("suites", nargs="*", help="suite names (default: all present)")
    b.add_argument("--quick", action="store_true", help="fewer repetitions")
    b.add_argument("--out", help="also write the JSON result here")
    args = ap.parse_args(argv)
    from workbench import bench
    names = args.suites or bench.suites()
    unknown = [n for n in names if n not in bench.suites()]
    if unknown:
        ap.error(f"unknown suite(s) {unknown}; present: {bench.suites()}")
    result = {"machine": bench.machine(), "suites": {}}
    for n in names:
        print(f"running {n} ...", file=sys.stderr)
        result["suites"][n] = bench.run_suite(n, quick=args.quick)
    text = json.dumps(result, indent=2, default=str)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
