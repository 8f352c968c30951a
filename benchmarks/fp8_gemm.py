"""The fp8 Hopper GEMM (``HopperGemm(dtype=wb.Float8E4M3FN)``) against cuBLASLt's (``torch._scaled_mm``: e4m3,
per-tensor scales, bf16 out) in the same run, interleaved call by call and repeated (``workbench.bench.gemm.run_fp8``:
the inputs, timing and clock handling are stated in the result), at 4096^3, 8192^3, 8192x7168x2048 and an LLM
projection (4096 tokens x 8192 -> 28672); the block-scaled configurations beside them, also against cuBLASLt's
block-scaled ``torch._scaled_mm`` (CUDA 12.9+).  Needs an SM90 GPU.

    python3 benchmarks/fp8_gemm.py                  # writes benchmarks/results/fp8-<GPU>.json (GPU: H100, H200...)
    python3 benchmarks/fp8_gemm.py --quick --out FILE
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbench.bench.gemm import run_fp8  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="the JSON result (default benchmarks/results/fp8-<GPU>.json)")
    ap.add_argument("--quick", action="store_true", help="two shapes, 3 repetitions")
    ap.add_argument("--repeats", type=int)
    args = ap.parse_args(argv)
    res = run_fp8(quick=args.quick, repeats=args.repeats)
    if "skipped" in res:
        print(res["skipped"])
        return 1
    res["command"] = "python3 benchmarks/fp8_gemm.py" + (" --quick" if args.quick else "")
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"fp8-{res['gpu_short']}.json"
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"block-scaled torch._scaled_mm: {res['scaled_mm_blockwise']}")
    print(f"{res['device']}, torch {res['torch']}; irregular {list(res['irregular'].values())[0]['shape']}: "
          f"exact vs torch._scaled_mm: {all(v['exact_vs_scaled_mm'] for v in res['irregular'].values() if 'exact_vs_scaled_mm' in v)}"
          f"; block-scaled: exact {[v['exact'] for v in res['irregular'].values() if 'exact' in v]}, equal to "
          f"cuBLASLt's block-scaled form at K = 512 "
          f"{[v.get('exact_vs_scaled_mm_blockwise_at_k') for v in res['irregular'].values() if 'exact' in v]}; "
          f"cuBLASLt's block-scaled form exact: {res.get('scaled_mm_blockwise_exact')}")
    for name, s in res["shapes"].items():
        print(f"\n{name}: torch._scaled_mm {s['scaled_mm_tflops']:.0f} TFLOPS (fast accum "
              f"{s['scaled_mm_fast_accum_tflops']:.0f})")
        for cfg, r in s["configs"].items():
            sp = r["ratio_spread"]
            err = "" if r["max_rel_error_vs_fp32"] is None else f"  err {r['max_rel_error_vs_fp32']:.1e}"
            blk = ""
            if "ratio_to_scaled_mm_blockwise" in r:
                bs = r["ratio_blockwise_spread"]
                blk = (f"  block-scaled cuBLASLt {r['scaled_mm_blockwise_tflops']:.0f} TFLOPS: "
                       f"x{r['ratio_to_scaled_mm_blockwise']:.3f} [{bs['min']:.3f}, {bs['max']:.3f}]")
            print(f"  {cfg:86s} {r['tflops']:6.0f} TFLOPS  x{r['ratio_to_scaled_mm']:.3f} [{sp['min']:.3f}, "
                  f"{sp['max']:.3f}]  fast x{r['ratio_to_scaled_mm_fast_accum']:.3f}  regs {r['registers']}{err}{blk}")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
