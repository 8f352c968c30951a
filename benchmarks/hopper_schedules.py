"""The Hopper GEMM's schedule steps against cuBLAS, one change per step (``workbench.bench.gemm.run_schedules``):
the persistent rung, + the overlapped epilogue with setmaxnreg 24/240, + stream-K for the last two waves, stream-K
alone, two tile shapes (64 x 128 with one consumer for few rows; 128 x 192 with stream-K for ragged sizes) and two
ping-pong tile widths for wave quantization (128 x 160; 128 x 176 in bands of 2, as cuBLAS tiles N = 7168) and
cooperative 128 x 224 tiles (N = 28672 is 128 of them); fp16 and bf16 at square, LLM (M from 256 to 16384), ragged
and few-row shapes, the best step per shape; interleaved call by call, repeated, median and spread, clocks stated.
``--c float32``: C in fp32 against cuBLAS writing fp32 (``SCHEDULE_STEPS_C32``: the overlapped epilogue holds half
of such a tile).  Needs an SM90 GPU.

    python3 benchmarks/hopper_schedules.py        # writes benchmarks/results/hopper-schedules-<GPU>.json
    python3 benchmarks/hopper_schedules.py --c float32    # C in fp32: hopper-schedules-c32-<GPU>.json
    python3 benchmarks/hopper_schedules.py --quick --out FILE
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbench.bench.gemm import run_schedules  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="the JSON result (default benchmarks/results/hopper-schedules-<GPU>.json)")
    ap.add_argument("--quick", action="store_true", help="two shapes, 3 repetitions")
    ap.add_argument("--repeats", type=int)
    ap.add_argument("--c", choices=("float32",),
                    help="C in fp32 against torch.mm with out_dtype=float32 (default: the inputs' type, torch.matmul)")
    ap.add_argument("--shapes", nargs="+", help="names of SCHEDULE_SHAPES or MxNxK (default: all of them)")
    args = ap.parse_args(argv)
    res = run_schedules(quick=args.quick, repeats=args.repeats, shapes=args.shapes, c=args.c)
    if "skipped" in res:
        print(res["skipped"])
        return 1
    res["command"] = " ".join(["python3 benchmarks/hopper_schedules.py", *(argv if argv is not None else sys.argv[1:])])
    name = f"hopper-schedules-{'c32-' if args.c == 'float32' else ''}{res['gpu_short']}.json"
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / name
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"{res['device']}, torch {res['torch']}, {res['repeats']} interleaved repetitions")
    for name, r in res["results"].items():
        print(f"\n{name}: cuBLAS {r['cublas_tflops']:.0f} TFLOPS; SM clocks {r['clocks_before'].get('clocks.sm')} -> "
              f"{r['clocks_after'].get('clocks.sm')} MHz")
        for s, v in r["steps"].items():
            sp = v["ratio_spread"]
            print(f"  {s:44s} {v['tflops']:6.0f} TFLOPS  x{v['ratio_to_cublas']:.3f} [{sp['min']:.3f}, {sp['max']:.3f}]"
                  f"  exact {v['exact_at_1000x1000x504']}  err {v['max_rel_error_vs_fp32']:.1e}  regs {v['registers']}"
                  f"  local {v['local_bytes']}")
        print(f"  best: {r['best']['step']} x{r['best']['ratio_to_cublas']:.3f}")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
