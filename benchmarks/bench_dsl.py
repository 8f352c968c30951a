"""The DSL's GPU benchmark: bandwidth (vcopy, tiled transpose vs cupy's device-to-device copy)
and launch overhead (pointer bypass vs ctypes cuLaunchKernel and cupy.RawKernel), plus every
example checked on the GPU.  Writes benchmarks/results/dsl-<gpu>.json (or --out)."""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from workbench import bench  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    a = ap.parse_args()
    res = {"machine": bench.machine(), "command": "python benchmarks/bench_dsl.py" + (" --quick" if a.quick else "")}
    res["bandwidth"] = bench.run_suite("bandwidth", quick=a.quick)
    res["launch"] = bench.run_suite("launch", quick=a.quick)
    if res["bandwidth"].get("gpu"):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from dsl_gpu_check import check
        res["examples_gpu_vs_cpu_executor"] = check("small")
        res["examples_gpu_large_vs_numpy"] = check("large")
    name = res["machine"].get("gpu", "cpu").replace(" ", "_")
    out = a.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", f"dsl-{name}.json")
    with open(out, "w") as f:
        json.dump(res, f, indent=1, default=str)
    bw, ln = res["bandwidth"], res["launch"]
    if bw.get("gpu"):
        for k, v in bw["kernels"].items():
            print(f"{k:32s} {v['TB_per_s']:.3f} TB/s")
        print("ratios", json.dumps(bw["ratios"]), "pass", bw["pass"])
    if ln.get("gpu"):
        for k, v in ln["paths"].items():
            print(f"{k:36s} {v['median_us']:.2f} us (min {v['min_us']:.2f})")
        print("ratios", json.dumps(ln["ratios"]), "pass", ln["pass"])
    print("wrote", out)


if __name__ == "__main__":
    main()
