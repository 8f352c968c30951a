"""What Nsight Compute sees of cuBLAS and the Hopper GEMM at one size: one launch each of torch.matmul, the persistent
rung and the rung with the overlapped epilogue (24/240 registers), fp16, between cudaProfilerStart/Stop, each launched
twice before (compiled, warm).  Run under ncu (on an SM90 GPU):

    ncu --profile-from-start off --csv --print-units base \
        --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,\
smsp__inst_executed.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum python3 benchmarks/hopper_ncu.py 4096

(benchmarks/results/hopper-ncu-4096-H200.txt holds the H200's, with more metrics.)  ``MxNxK wave`` profiles cuBLAS and
the ping-pong 128 x 176 configuration instead (benchmarks/results/hopper-ncu-2048x7168x2048-H200.txt):

    ncu ... python3 benchmarks/hopper_ncu.py 2048x7168x2048 wave
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workbench.kernels.gemm_hopper import HopperGemm  # noqa: E402


def main():
    size = sys.argv[1] if len(sys.argv) > 1 else "4096"
    m, n, k = map(int, size.split("x")) if "x" in size else (int(size),) * 3
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", generator=g).half()
    b = torch.randn(n, k, device="cuda", generator=g).half()
    c = torch.empty(m, n, device="cuda", dtype=torch.half)
    if sys.argv[2:] == ["wave"]:     # the tiles cuBLAS picks at N = 7168 (41 x 176), ping-pong
        cfgs = [HopperGemm(bm=128, bn=176, bk=64, stages=5, group=2, pingpong=True, regs=(24, 240))]
    else:
        cfgs = [HopperGemm(bm=128, bn=256, stages=4, group=16, persistent=True),
                HopperGemm(bm=128, bn=256, stages=4, group=16, persistent=True, overlap=True, regs=(24, 240))]
    fns = [lambda: torch.matmul(a, b.t(), out=c)]
    for cfg in cfgs:
        k, ops = cfg.operands(a, b, c)
        fns.append(lambda k=k, ops=ops, cfg=cfg: k[cfg.grid(m, n), (cfg.threads, 1, 1)](*ops))
    for f in fns:
        f()
        f()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for f in fns:
        f()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
