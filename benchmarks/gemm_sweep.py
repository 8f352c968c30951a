"""Sweep the pipelined rung's configuration on a GPU: each SmemGemm's TFLOPS next to cuBLAS in the same run.

    python3 benchmarks/gemm_sweep.py [--sizes 4096 8192] [--out FILE.json]

Used to choose workbench.kernels.gemm_ladder.PIPELINED (results: benchmarks/results/gemm-sweep-*.json).
"""

from __future__ import annotations

import argparse
import json

import torch

import workbench as wb
from workbench.bench.bandwidth import _time
from workbench.kernels import gemm_ladder as G

CONFIGS = [
    dict(bm=128, bn=256, bk=64, warps=(2, 4), stages=3, group=8),
    dict(bm=128, bn=256, bk=64, warps=(2, 4), stages=4, group=8),
    dict(bm=256, bn=128, bk=64, warps=(4, 2), stages=3, group=8),
    dict(bm=128, bn=128, bk=64, warps=(2, 2), stages=3, group=8),
    dict(bm=128, bn=128, bk=64, warps=(2, 2), stages=4, group=16),
    dict(bm=128, bn=256, bk=32, warps=(2, 4), stages=4, group=8),
    dict(bm=128, bn=256, bk=64, warps=(2, 4), stages=3, group=16),
    dict(bm=256, bn=128, bk=32, warps=(4, 2), stages=4, group=8),
]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[4096, 8192])
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    out = {"device": torch.cuda.get_device_name(), "results": []}
    for size in args.sizes:
        a = torch.randn(size, size, device="cuda").half()
        b = torch.randn(size, size, device="cuda").half()
        flop = 2 * size ** 3
        ref = torch.matmul(a, b.t())
        t_cublas = _time(lambda a=a, b=b: torch.matmul(a, b.t()), 10)
        ta, tb = wb.from_dlpack(a, assumed_align=16), wb.from_dlpack(b, assumed_align=16)
        for kw in CONFIGS:
            cfg = G.SmemGemm(**kw)
            r = G._smem_rung("sweep", "", cfg)
            c = torch.empty(size, size, device="cuda")
            tc = wb.from_dlpack(c, assumed_align=16)
            try:
                r.launch(ta, tb, tc)
                torch.cuda.synchronize()
                t = _time(lambda r=r, ta=ta, tb=tb, tc=tc: r.launch(ta, tb, tc), 10)
            except Exception as e:      # a configuration the device cannot run (registers, shared memory)
                out["results"].append({"size": size, "config": repr(cfg), "error": str(e)[:300]})
                print(size, cfg, "ERROR", str(e)[:200], flush=True)
                continue
            g = r.kernel.specialize((ta, tb, tc)).gpu
            err = float(((c - ref.float()).abs().max() / ref.float().abs().max()).item())
            row = {"size": size, "config": repr(cfg), "tflops": flop / t / 1e12, "cublas_tflops": flop / t_cublas / 1e12,
                   "ratio_to_cublas": t_cublas / t, "registers": g.attributes()["registers"], "local_bytes": g.attributes()["local_bytes"],
                   "max_rel_error": err}
            out["results"].append(row)
            print(size, cfg, f"{row['tflops']:.1f} TFLOPS ({row['ratio_to_cublas']:.3f}x cuBLAS {row['cublas_tflops']:.0f})",
                  f"regs {row['registers']} local {row['local_bytes']} err {err:.1e}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
