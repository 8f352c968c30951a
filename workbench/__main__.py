"""``python -m workbench bench [suite ...] [--quick] [--out FILE]``: run benchmark suites, print JSON.
``python -m workbench lab [suite ...] [--quick] [--out FILE.json] [--chart FILE.png]``: the overhead lab
(workbench/bench/lab.py), printed as a table."""

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
    from workbench.bench.lab import SUITES
    lab = sub.add_parser("lab", help="the overhead lab: what passing 1/2/4/8 tensors to a kernel costs, path by path",
                         description="Suites: " + "; ".join(f"{k}: {v}" for k, v in SUITES.items()),
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    lab.add_argument("suites", nargs="*", metavar="suite",
                     help=f"{', '.join(SUITES)} (default: launch, host and convert with a GPU; host and convert without)")
    lab.add_argument("--quick", action="store_true", help="fewer rounds and calls")
    lab.add_argument("--rounds", type=int, help="interleaved rounds (default 9; 5 with --quick)")
    lab.add_argument("--out", help="write the JSON result here")
    lab.add_argument("--chart", help="draw the grouped-bar chart into this PNG")
    lab.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    lab.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    args = ap.parse_args(argv)
    if args.cmd == "lab":
        return _lab(ap, args)
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


def _lab(ap, args) -> int:
    from workbench.bench import lab
    unknown = [s for s in args.suites if s not in lab.SUITES]
    if unknown:
        ap.error(f"unknown lab suite(s) {unknown}; present: {list(lab.SUITES)}")
    if args.rounds is not None and args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    result = lab.run(args.suites or None, quick=args.quick, progress=not args.no_progress, rounds=args.rounds)
    print(json.dumps(result, indent=1, default=str) if args.json else lab.table(result))
    if args.out:
        lab.save(result, args.out, args.chart)
    elif args.chart:
        lab.chart(result, args.chart)
    return 0


if __name__ == "__main__":
    sys.exit(main())
