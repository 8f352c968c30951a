"""How long the rung-5 GEMM kernel takes from nothing to a cubin, in a fresh process (no GPU needed):
tracing the Python kernel, CUDA C++ generation, NVRTC for sm_90 (PTX and machine code, as a first launch
compiles).  Imports are timed apart (``import_s``), cupy's included: cupy_backends' NVRTC wrapper imports cupy on
its first call, and a first launch has imported it already (``gpu_available``) before it traces anything.

The anchor (DESIGN.md): CuTe DSL compiling its Ampere tensorop GEMM example.  With ``--cute-example PATH`` (the
example's file in a CUTLASS checkout, ``examples/python/CuTeDSL/cute/ampere/kernel/dense_gemm/tensorop_gemm.py``)
the same run measures it too, each run a fresh process alternating with ours: ``cute.compile`` of the example's
``bmm`` on fake 4096^3 fp16 tensors for sm_90 (CUTE_DSL_ARCH; no GPU needed), timed after its imports.
On a GPU, ``python -m workbench bench gemm`` measures the first launch itself (compile, load, run).

    python benchmarks/gemm_compile_latency.py [--runs 5] [--cute-example PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import time
t0 = time.perf_counter()
import numpy as np
import workbench as wb
from workbench.kernels import gemm_ladder as G
from workbench.dsl.runtime.cupy import _NVRTC_OPTIONS
from cupy_backends.cuda.libs import nvrtc
import cupy
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

CUTE_CHILD = r"""
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream
from tensorop_gemm import TensorOpGemm, bmm
t1 = time.perf_counter()
fake = [make_fake_compact_tensor(cutlass.Float16, (1, 4096, 4096), stride_order=(2, 1, 0), assumed_align=16)
        for _ in range(3)]
gemm = TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1))
cute.compile(bmm, gemm, *fake, make_fake_stream())
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cute-example", help="CUTLASS's examples/python/CuTeDSL/cute/ampere/kernel/dense_gemm/tensorop_gemm.py")
    args = ap.parse_args(argv)
    rows, anchor = [], []
    env = dict(os.environ, CUTE_DSL_ARCH=os.environ.get("CUTE_DSL_ARCH", "sm_90"))
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True).stdout.split()
        imp, trace, nvrtc_s, size = float(out[0]), float(out[1]), float(out[2]), int(out[3])
        rows.append({"import_s": imp, "trace_and_codegen_s": trace, "nvrtc_cubin_s": nvrtc_s, "cubin_bytes": size})
        if args.cute_example:
            d = os.path.dirname(os.path.abspath(args.cute_example))
            out = subprocess.run([sys.executable, "-c", CUTE_CHILD, d], capture_output=True, text=True, check=True,
                                 env=env).stdout.split()
            anchor.append({"import_s": float(out[-2]), "compile_s": float(out[-1])})
    med = {k: statistics.median(r[k] for r in rows) for k in ("import_s", "trace_and_codegen_s", "nvrtc_cubin_s")}
    med["compile_s"] = statistics.median(r["trace_and_codegen_s"] + r["nvrtc_cubin_s"] for r in rows)
    res = {"runs": rows, "median": med}
    if anchor:
        a = statistics.median(r["compile_s"] for r in anchor)
        res["anchor_cute_dsl_ampere_gemm"] = {"arch": env["CUTE_DSL_ARCH"], "runs": anchor, "median_compile_s": a,
                                              "ratio": med["compile_s"] / a}
    else:
        res["anchor_cute_dsl_ampere_gemm_s"] = [0.65, 0.8]   # DESIGN.md's figure (not measured in this run)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
