"""The Hopper rungs (TMA + wgmma + mbarrier pipeline, warp-specialized) against cuBLAS in the same run, fp16 and
bf16, C = A @ B^T at M = N = K in {4096, 8192}; each configuration also exact against torch at a ragged size.
C is written in the inputs' type, as cuBLAS writes it (``torch.matmul``); a configuration with ``c="float32"``
writes the fp32 accumulators (twice the bytes) and is compared with the same cuBLAS call.

    python3 benchmarks/hopper_gemm.py [--out benchmarks/results/hopper-gemm-H200.json] [--quick]
    python3 benchmarks/hopper_gemm.py --pingpong --out benchmarks/results/hopper-gemm-pingpong-H200.json
"""

from __future__ import annotations

import argparse
import json

import torch

import workbench as wb
from workbench.bench.bandwidth import _times
from workbench.kernels.gemm_hopper import HopperGemm

CONFIGS = [
    dict(bm=128, bn=256, bk=64, stages=4, group=8),
    dict(bm=128, bn=256, bk=64, stages=4, group=8, c="float32"),
    dict(bm=128, bn=256, bk=64, stages=4, group=8, persistent=True),
    dict(bm=128, bn=256, bk=64, stages=3, group=16),
    dict(bm=128, bn=128, bk=64, stages=6, group=8),
    dict(bm=128, bn=256, bk=32, stages=8, group=8),
    dict(bm=128, bn=256, bk=64, stages=4, group=8, cluster=2),
    dict(bm=128, bn=256, bk=64, stages=4, group=8, persistent=True, cluster=2),
]
# ping-pong consumers (each a whole tile, taking turns at the tensor cores), beside the persistent rung they vie with
PINGPONG = [
    dict(bm=128, bn=256, bk=64, stages=4, group=8, persistent=True),
    dict(bm=128, bn=128, bk=64, stages=5, group=8, pingpong=True),
    dict(bm=64, bn=256, bk=64, stages=4, group=8, pingpong=True),
]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--pingpong", action="store_true", help="the ping-pong configurations instead")
    args = ap.parse_args(argv)
    props = torch.cuda.get_device_properties(0)
    out = {"device": props.name, "sms": props.multi_processor_count,
           "command": "python3 benchmarks/hopper_gemm.py" + (" --pingpong" if args.pingpong else ""), "results": []}
    configs = PINGPONG if args.pingpong else CONFIGS[:2] if args.quick else CONFIGS
    gen = torch.Generator(device="cuda").manual_seed(0)
    for dt_name, tdt, wdt in (("float16", torch.float16, wb.Float16), ("bfloat16", torch.bfloat16, wb.BFloat16)):
        for conf in configs:
            conf = dict(conf)
            cdt = getattr(torch, conf.pop("c", dt_name))
            cfg = HopperGemm(dtype=wdt, **conf)

            exact = True
            for m, n, k in ((1000, 999, 504), (1000, 1000, 504)):    # the register epilogue, then the TMA one
                a = torch.randint(-3, 4, (m, k), device="cuda", generator=gen).to(tdt)
                b = torch.randint(-3, 4, (n, k), device="cuda", generator=gen).to(tdt)
                c = torch.full((m, n), float("nan"), device="cuda", dtype=cdt)
                cfg.launch(a, b, c)
                torch.cuda.synchronize()
                exact = exact and bool(torch.equal(c, (a.float() @ b.float().t()).to(cdt)))
            row = {"dtype": dt_name, "c_dtype": str(cdt).removeprefix("torch."), "config": repr(cfg),
                   "irregular_exact": exact, "sizes": {}}
            for size in (4096,) if args.quick else (4096, 8192):
                a = torch.randn(size, size, device="cuda", generator=gen).to(tdt)
                b = torch.randn(size, size, device="cuda", generator=gen).to(tdt)
                c = torch.empty(size, size, device="cuda", dtype=cdt)
                kern, ops = cfg.operands(a, b, c)
                grid, block = cfg.grid(size, size), (cfg.threads, 1, 1)
                flop = 2 * size ** 3
                t_cublas, t = _times([lambda a=a, b=b: torch.matmul(a, b.t()),
                                      lambda k=kern, g=grid, bl=block, o=ops: k[g, bl](*o)], 30)
                ref = torch.matmul(a.float(), b.float().t())
                err = float(((c.float() - ref).abs().max() / ref.abs().max()).item())
                attrs = kern.specialize(ops).load_gpu().attributes()
                row["sizes"][str(size)] = {"epilogue": "tma" if len(ops) == 5 else "registers",
                                           "tflops": flop / t / 1e12, "cublas_tflops": flop / t_cublas / 1e12,
                                           "ratio_to_cublas": t_cublas / t, "max_rel_error_vs_fp32": err,
                                           "registers": attrs["registers"], "local_bytes": attrs["local_bytes"]}
                print(f"{dt_name:9s} C {row['c_dtype']:9s} {repr(cfg):70s} {size}: {flop / t / 1e12:7.1f} TFLOPS, cuBLAS "
                      f"{flop / t_cublas / 1e12:7.1f}, ratio {t_cublas / t:.3f}, exact(irregular)={exact}, err {err:.1e}, "
                      f"regs {attrs['registers']}", flush=True)
            out["results"].append(row)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
