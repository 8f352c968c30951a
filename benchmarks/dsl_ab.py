"""The DSL's GEMM rungs against cuBLAS, interleaved call by call, for an A/B of two source trees of the workbench
(run from each tree's root; the script imports whichever ``workbench`` is on the path).  Ratios are cuBLAS time
over the rung's time (> 1: faster than cuBLAS), medians of ``--reps`` interleaved calls, repeated ``--rounds`` times.

    python3 benchmarks/dsl_ab.py --label after [--size 4096] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json

import torch

import workbench  # noqa: F401
from workbench.bench.bandwidth import _times

try:                       # the package layout since the instruction-centric DSL
    from workbench.kernels import gemm_hopper as H
    from workbench.kernels import gemm_ladder as G
except ImportError:        # before it
    from workbench.dsl import gemm_hopper as H
    from workbench.dsl import gemm_ladder as G


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", required=True)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args(argv)
    n = args.size
    gen = torch.Generator(device="cuda").manual_seed(0)
    out = {"label": args.label, "device": torch.cuda.get_device_name(0), "size": n, "ratios": {}}
    cases = []
    for dname, tdt in (("float16", torch.float16), ("bfloat16", torch.bfloat16)):
        a = torch.randn(n, n, device="cuda", generator=gen).to(tdt)
        b = torch.randn(n, n, device="cuda", generator=gen).to(tdt)
        c = torch.empty(n, n, device="cuda", dtype=tdt)
        wdt = getattr(__import__("workbench"), "Float16" if dname == "float16" else "BFloat16")
        for r in H.hopper_rungs(wdt):
            ops = r.args(a, b, c)
            k = r.kernel_for(ops)
            grid, block = r.config.grid(n, n), (r.config.threads, 1, 1)
            cases.append((f"{r.name} {dname}", lambda k=k, g=grid, bl=block, o=ops: k[g, bl](*o),
                          lambda a=a, b=b: torch.matmul(a, b.t())))
    a = torch.randn(n, n, device="cuda", generator=gen).half()
    b = torch.randn(n, n, device="cuda", generator=gen).half()
    c32 = torch.empty(n, n, device="cuda", dtype=torch.float32)
    pipelined = [r for r in G.ladder() if r.name == "pipelined"][0]
    cases.append(("ladder pipelined float16 (C fp32)", lambda: pipelined.launch(a, b, c32),
                  lambda: torch.matmul(a, b.t())))
    for name, ours, cublas in cases:
        try:
            ours()
        except ValueError as e:   # before the alignment key, the ladder refused tensors passed straight in
            out["ratios"][name] = f"refused: {str(e).splitlines()[-1][:160]}"
            print(f"{args.label:7s} {name:36s} {out['ratios'][name]}", flush=True)
            continue
        rs = []
        for _ in range(args.rounds):
            t_cublas, t = _times([cublas, ours], args.reps)
            rs.append(t_cublas / t)
        out["ratios"][name] = sorted(rs)
        print(f"{args.label:7s} {name:36s} ratio to cuBLAS {sorted(rs)}", flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
