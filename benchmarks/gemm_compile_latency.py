"""How long the rung-5 GEMM kernel takes from nothing to a cubin, in a fresh process (no GPU needed):
import, tracing the Python kernel, CUDA C++ generation, NVRTC for sm_90 (PTX and machine code, as a first launch
compiles).  The anchor (DESIGN.md): CuTe DSL compiles its Ampere tensorop GEMM example in 0.65-0.8 s on a 2-core
host.  On a GPU, ``python -m workbench bench gemm`` measures the first launch itself (compile, load, run).

    python benchmarks/gemm_compile_latency.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CHILD = r"""
import time
t0 = time.perf_counter()
import numpy as np
import workbench as wb
from workbench.dsl import gemm_ladder as G
from workbench.dsl.backend_cupy import _NVRTC_OPTIONS
from cupy_backends.cuda.libs import nvrtc
t1 = time.perf_counter()
r = next(x for x in G.ladder() if x.name == "pipelined")
a = wb.from_dlpack(np.zeros((4096, 4096), np.float16), assumed_align=16)
c = wb.from_dlpack(np.zeros((4096, 4096), np.float32), assumed_align=16)
src = wb.show_code(r.kernel, a, a, c)
t2 = time.perf_counter()
prog = nvrtc.createProgram(src, "k.cu", [], [])
nvrtc.compileProgram(prog, ["--gpu-architecture=sm_90", *_NVRTC_OPTIONS])
cubin = nvrtc.getCUBIN(prog)
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, len(cubin))
"""


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    rows = []
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True).stdout.split()
        imp, trace, nvrtc_s, size = float(out[0]), float(out[1]), float(out[2]), int(out[3])
        rows.append({"import_s": imp, "trace_and_codegen_s": trace, "nvrtc_cubin_s": nvrtc_s, "cubin_bytes": size})
    med = {k: statistics.median(r[k] for r in rows) for k in ("import_s", "trace_and_codegen_s", "nvrtc_cubin_s")}
    med["compile_s"] = med["trace_and_codegen_s"] + med["nvrtc_cubin_s"]
    print(json.dumps({"runs": rows, "median": med, "anchor_cute_dsl_ampere_gemm_s": [0.65, 0.8]}, indent=1))


if __name__ == "__main__":
    main()
