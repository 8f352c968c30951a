"""The Hopper GEMM's schedule steps against cuBLAS, one change per step (``workbench.bench.gemm.run_schedules``):
the persistent rung, + the overlapped epilogue with setmaxnreg 24/240, + stream-K for the last two waves, stream-K
alone, two tile shapes (64 x 128 with one consumer for few rows; 128 x 192 with stream-K for ragged sizes) and two
ping-pong tile widths for wave quantization (128 x 160; 128 x 176 in bands of 2, as cuBLAS tiles N = 7168); fp16
and bf16 at square, LLM (M from 256 to 16384), ragged and few-row shapes, the best step per shape; interleaved call
by call, repeated, median and spread, clocks stated.  Needs an SM90 GPU.

    python3 benchmarks/hopper_schedules.py        # writes benchmarks/results/hopper-schedules-<GPU>.json
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
    args = ap.parse_args(argv)
    res = run_schedules(quick=args.quick, repeats=args.repeats)
    if "skipped" in res:
        print(res["skipped"])
        return 1
    res["command"] = "python3 benchmarks/hopper_schedules.py" + (" --quick" if args.quick else "")
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"hopper-schedules-{res['gpu_short']}.json"
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
