"""``python -m workbench bench [suite ...] [--quick] [--out FILE]``: run benchmark suites, print JSON.
``python -m workbench lab [suite ...] [--quick] [--out FILE.json] [--chart FILE.png]``: the overhead lab
(workbench/bench/lab.py), printed as a table."""

from __future__ import annotations

import argparse
import json
import os
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
    _check_output(ap, "--out", args.out)
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
    # before minutes of measuring, not after: where the results go must be writable
    _check_output(ap, "--out", args.out, (".json",))
    _check_output(ap, "--chart", args.chart, _chart_formats())
    if args.out and args.chart and os.path.realpath(args.out) == os.path.realpath(args.chart):
        ap.error(f"Expected --out and --chart to name two files, but both are {args.out!r}.")
    result = lab.run(args.suites or None, quick=args.quick, progress=not args.no_progress, rounds=args.rounds)
    print(json.dumps(result, indent=1, default=str) if args.json else lab.table(result))
    if args.out:
        lab.save(result, args.out, args.chart)
    elif args.chart:
        lab.chart(result, args.chart)
    return 0


def _chart_formats() -> tuple:
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    return tuple("." + k for k in FigureCanvasAgg.get_supported_filetypes())


def _check_output(ap, flag, path, suffixes=None) -> None:
    """ap.error (exit 2, before anything runs) unless ``path`` can be written: its folder exists and is writable,
    it is not a folder, it is writable if it exists, and it ends in one of ``suffixes``."""
    if path is None:
        return
    if not path or path.endswith(os.sep):
        ap.error(f"Expected {flag} to name a file, but got {path!r}.")
    if os.path.isdir(path):
        ap.error(f"Expected {flag} to name a file, but {path!r} is a folder.")
    if suffixes and not path.lower().endswith(suffixes):
        ap.error(f"Expected {flag} to end in {', '.join(suffixes)}, but got {path!r}.")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        ap.error(f"Expected {flag}'s folder to exist, but {folder!r} does not.")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        ap.error(f"Expected {flag} to be writable, but {path!r} is not.")


if __name__ == "__main__":
    sys.exit(main())
