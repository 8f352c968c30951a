"""``python -m workbench bench [suite ...] [--quick] [--out FILE]``: run benchmark suites, print JSON (``--help``
lists them; a suite that needs a GPU says on stderr and in its result that it skipped without one).
``python -m workbench lab [suite ...] [--quick] [--out FILE.json] [--chart FILE.png]``: the overhead lab
(workbench/bench/lab.py), printed as a table.
``python -m workbench tune --kind hopper|smem|cpu --shapes MxNxK ... [--dtypes ...] [--ray ADDRESS|local]
[--workers N] [--confirm N] [--c float32] [--out FILE.json]``: sweep a GEMM's configurations, one worker per GPU
(workbench/_tune.py).
``python -m workbench build-torch-native [--force]``: compile the torch reader for the installed torch
(workbench/dlpack/torch_native.py)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workbench")
    sub = ap.add_subparsers(dest="cmd", required=True)
    from workbench import bench
    b = sub.add_parser("bench", help="run overhead/bandwidth suites (workbench/bench/<name>.py), print JSON",
                       description="Suites:\n" + "\n".join(textwrap.fill(f"{n}: {bench.describe(n)}", 100, initial_indent="  ",
                                                                          subsequent_indent="      ")
                                                            for n in bench.suites())
                       + "\nA suite that needs a GPU says it skipped without one (\"skipped\" in its result and a line "
                         "on stderr). The overhead lab is its own command: python -m workbench lab.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("suites", nargs="*", metavar="suite", help=f"{', '.join(bench.suites())} (default: all of them)")
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
    tu = sub.add_parser("tune", help="sweep a GEMM's configurations per shape and dtype, one worker per GPU (or Ray)",
                        description="Spaces: hopper (HopperGemm, SM90), smem (SmemGemm), cpu (the CPU executor; "
                                    "not a GPU measurement). Each configuration is checked against the reference, "
                                    "then timed interleaved with it (cuBLAS on a GPU).")
    tu.add_argument("--kind", required=True, choices=["hopper", "smem", "cpu"], help="the configuration space")
    tu.add_argument("--shapes", nargs="+", required=True, metavar="MxNxK", help="GEMM shapes, e.g. 4096x4096x4096")
    tu.add_argument("--dtypes", nargs="+", help="input dtypes (hopper: float16 bfloat16; smem: float16; cpu: float32)")
    tu.add_argument("--c", choices=["float32"], help="C's type when not the space's own (hopper: the inputs' type; "
                                                     "float32: against cuBLAS writing fp32)")
    tu.add_argument("--ray", metavar="ADDRESS", help="spread over a Ray cluster (an address, auto, or local)")
    tu.add_argument("--workers", type=int, help="at most this many workers (default: one per GPU; cpu: per core)")
    tu.add_argument("--configs", metavar="JSON", help="a JSON list of configuration dicts (or a file holding one) "
                                                      "instead of the space's default sweep")
    tu.add_argument("--reps", type=int, help="timed calls per configuration")
    tu.add_argument("--confirm", type=int, help="time the best N of each shape again together on one worker and "
                                                "choose among them (default 3 on a GPU, 0 on the CPU executor)")
    tu.add_argument("--out", help="write the sweep (every row) as JSON here")
    tu.add_argument("--no-cache", action="store_true", help="neither read nor write the per-GPU-model cache")
    tu.add_argument("--refresh", action="store_true", help="measure again and overwrite the cached choices")
    tu.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    tn = sub.add_parser("build-torch-native", help="compile the torch reader for the installed torch (~15 s, once)",
                        description="Compile workbench/dlpack/_torch_native.cpp against the installed torch's headers "
                                    "into a per-torch cache folder. With it, torch tensors passed to wb.from_dlpack or "
                                    "straight to a kernel are read in C++ (same fields and refusals as torch's DLPack "
                                    "exchange API, which they take without it). WB_TORCH_NATIVE=0 turns it off.")
    tn.add_argument("--force", action="store_true", help="rebuild even if a reader for this torch exists")
    args = ap.parse_args(argv)
    if args.cmd == "build-torch-native":
        from workbench.dlpack import torch_native
        return torch_native.main(force=args.force)
    if args.cmd == "lab":
        return _lab(ap, args)
    if args.cmd == "tune":
        return _tune(ap, args)
    _check_output(ap, "--out", args.out)
    names = args.suites or bench.suites()
    own = [n for n in names if n in bench.OWN_COMMANDS]
    if own:   # one way to run each thing: the lab prints its table (and --json) under its own command
        b.error(f"'bench {own[0]}' is not a bench suite: run {bench.OWN_COMMANDS[own[0]]} "
                 f"(--help names its suites; --json prints JSON)")
    unknown = [n for n in names if n not in bench.suites()]
    if unknown:
        b.error(f"unknown suite(s) {unknown}; present: {bench.suites()}")
    result = {"machine": bench.machine(), "suites": {}}
    for n in names:
        print(f"running {n} ...", file=sys.stderr)
        result["suites"][n] = bench.run_suite(n, quick=args.quick)
        if "skipped" in result["suites"][n]:
            print(f"{n}: {result['suites'][n]['skipped']}", file=sys.stderr)
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


def _tune(ap, args) -> int:
    from workbench import _tune as T
    _check_output(ap, "--out", args.out, (".json",))
    for flag, v, low in (("--workers", args.workers, 1), ("--reps", args.reps, 1), ("--confirm", args.confirm, 0)):
        if v is not None and v < low:
            ap.error(f"Expected {flag} to be at least {low}, but got {v}.")
    configs = None
    if args.configs:
        text = args.configs
        if os.path.isfile(text):
            with open(text) as f:
                text = f.read()
        try:
            configs = json.loads(text)
        except ValueError as e:
            ap.error(f"Expected --configs to be a JSON list of dicts (or a file holding one), but got {args.configs!r}: {e}")
        if not isinstance(configs, list) or not all(isinstance(c, dict) for c in configs):
            ap.error(f"Expected --configs to be a JSON list of dicts, but got {type(configs).__name__}.")
    try:
        res = T.tune(args.kind, args.shapes, args.dtypes, configs=configs, workers=args.workers,
                     ray_address=args.ray, cache=False if args.no_cache else "refresh" if args.refresh else True,
                     progress=not args.no_progress, reps=args.reps, confirm=args.confirm, c=args.c)
    except (ValueError, TypeError) as e:
        ap.error(str(e))
    except (RuntimeError, ImportError) as e:
        print(f"python -m workbench tune: {e}", file=sys.stderr)
        return 1
    print(res.to_markdown())
    print()
    for (shape, dtype), row in sorted(res.best.items()):
        print(f"best {'x'.join(map(str, shape))} {dtype}{', C ' + args.c if args.c else ''}: {json.dumps(row['config'])} "
              f"({row['ratio_to_reference']:.3f}x the reference{', cached' if row.get('cached') else ''})")
    missing = [f"{'x'.join(map(str, s))} {d}" for s in map(T._parse_shape, args.shapes)
               for d in (args.dtypes or [T.DTYPES[args.kind][0]]) if (s, d) not in res.best]
    for m in missing:
        print(f"no correct configuration for {m}", file=sys.stderr)
    if args.out:
        res.save(args.out)
    return 1 if missing else 0


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
