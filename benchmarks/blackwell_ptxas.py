"""The Blackwell GEMM rung's generated code assembled for sm_100a: registers and spills, as ptxas reports them.

No Blackwell GPU is lent here, so the rung (workbench/kernels/gemm_blackwell.py) is compiled, never run on one.  This
script generates each configuration's CUDA (host numpy operands: nothing runs), compiles it to PTX with NVRTC
(``compute_100a``), writes the PTX, and assembles it with the CUDA toolkit's ``ptxas -arch=sm_100a -v`` (found on
PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin).  Where no ptxas is found it says so and reports NVRTC's own ptxas
(``-Xptxas=-v``, the same assembler NVRTC links) instead, labelled as such.  Needs only the repository and cupy
(for NVRTC); no GPU.

    python benchmarks/blackwell_ptxas.py                 # writes benchmarks/results/blackwell-ptxas-<GPU>.txt
    python benchmarks/blackwell_ptxas.py --out FILE      # elsewhere; --keep DIR keeps the .ptx/.cubin files

<GPU> is the machine's GPU (e.g. H200, from cupy) or "nogpu".  Exit status 1 if any configuration spills.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbench.dsl.runtime.cupy import _NVRTC_OPTIONS, compile_ptx  # noqa: E402
from workbench.kernels.gemm_blackwell import BlackwellGemm  # noqa: E402

# (label, configuration, C's numpy type): the default tile, persistent, and a smaller tile
CONFIGS = [
    ("128x256x64 s4 acc2 f16-C", dict(), np.float16),
    ("128x256x64 s4 acc2 f32-C", dict(), np.float32),
    ("128x256x64 s4 acc2 persistent f16-C", dict(persistent=True), np.float16),
    ("128x128x64 s6 acc2 f16-C", dict(bn=128, stages=6), np.float16),
    ("128x256x64 s4 acc2 epi64 f16-C", dict(epi_columns=64), np.float16),
    ("256x256x64 s4 acc2 2-SM f16-C", dict(two_sm=True), np.float16),
    ("256x256x64 s4 acc2 2-SM persistent f16-C", dict(two_sm=True, persistent=True), np.float16),
]

_REG = re.compile(r"Used (\d+) registers")
_OLDER = re.compile(r"Unsupported \.version (\S+); current version is '(\S+)'")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def find_ptxas() -> str | None:
    for cand in (shutil.which("ptxas"), os.path.join(os.environ.get("CUDA_HOME", ""), "bin", "ptxas"),
                 "/usr/local/cuda/bin/ptxas"):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def gpu_name() -> str:
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() == 0:
            return "nogpu"
        name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception:      # no driver / no device: the name only labels the file
        return "nogpu"
    m = re.search(r"\b([A-Z]+\d{2,4}[A-Z]?)\b", name)     # "NVIDIA H200" -> H200
    return m.group(1) if m else re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")


def source(kw, c_type) -> str:
    cfg = BlackwellGemm(**kw)
    m, n, k = 2 * cfg.bm, 2 * cfg.bn, 4 * cfg.bk
    a, b = np.zeros((m, k), np.float16), np.zeros((n, k), np.float16)
    kern, args = cfg.operands(a, b, np.zeros((m, n), c_type))
    return cfg, kern.specialize(args).cuda_source


def nvrtc_ptxas(code: str) -> str:
    """NVRTC compiling straight to an sm_100a cubin with -Xptxas=-v: its log (the ptxas NVRTC links)."""
    from cupy_backends.cuda.libs import nvrtc
    prog = nvrtc.createProgram(code, "gemm_blackwell.cu", [], [])
    try:
        nvrtc.compileProgram(prog, ["--gpu-architecture=sm_100a", "-Xptxas=-v", *_NVRTC_OPTIONS])
        return nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)


def parse(log: str):
    regs, spill = _REG.search(log), _SPILL.search(log)
    if not regs or not spill:
        raise RuntimeError(f"no register/spill line in the ptxas output:\n{log}")
    return int(regs.group(1)), int(spill.group(1)), int(spill.group(2)), int(spill.group(3))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--keep", type=Path, default=None, help="keep the .ptx and .cubin files in this directory")
    args = ap.parse_args(argv)
    gpu = gpu_name()
    out = args.out or ROOT / "benchmarks" / "results" / f"blackwell-ptxas-{gpu}.txt"
    ptxas = find_ptxas()
    version = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1] \
        if ptxas else None
    work = args.keep or Path(tempfile.mkdtemp(prefix="blackwell_ptxas_"))
    work.mkdir(parents=True, exist_ok=True)
    lines = [
        "The Blackwell GEMM rung (workbench/kernels/gemm_blackwell.py) assembled for sm_100a: compiled, NOT run",
        "(no Blackwell GPU is lent). CUDA -> PTX by NVRTC (compute_100a), PTX -> cubin by "
        + (f"`{ptxas} -arch=sm_100a -v` ({version})" if ptxas else
           "NVRTC's linked ptxas (-Xptxas=-v): no ptxas binary found on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin"),
        f"machine GPU: {gpu}",
        "",
        f"{'configuration':40s} {'regs':>5s} {'stack':>6s} {'spill st':>9s} {'spill ld':>9s}  smem B  TMEM cols",
    ]
    spilled = False
    logs = []
    versions: set = set()
    for label, kw, c_type in CONFIGS:
        cfg, code = source(kw, c_type)
        slug = re.sub(r"[^A-Za-z0-9]+", "_", label)
        if ptxas:
            ptx_file, cubin = work / f"{slug}.ptx", work / f"{slug}.cubin"
            ptx = compile_ptx(code, "sm_100a")
            ptx_file.write_text(ptx)
            cmd = [ptxas, "-arch=sm_100a", "-v", str(ptx_file), "-o", str(cubin)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            older = _OLDER.search(r.stderr) if r.returncode else None
            note = ""
            if older:    # NVRTC newer than the toolkit: the PTX's .version lowered to what this ptxas reads (it
                # refuses, rather than misassembles, any instruction that ISA version lacks)
                ptx_file.write_text(re.sub(r"^\.version \S+", f".version {older.group(2)}", ptx, count=1, flags=re.M))
                r = subprocess.run(cmd, capture_output=True, text=True)
                note = f" (PTX .version {older.group(1)} lowered to {older.group(2)})"
                versions.add(f"note: NVRTC wrote PTX .version {older.group(1)}; this ptxas reads up to {older.group(2)}, "
                             "so the .version line was lowered (ptxas refuses an instruction that ISA lacks)")
            if r.returncode:
                raise RuntimeError(f"ptxas failed on {label}:\n{r.stderr}")
            log = r.stdout + r.stderr
            logs.append(f"--- {label}: {' '.join(cmd)}{note}\n{log.strip()}")
        else:
            log = nvrtc_ptxas(code)
            logs.append(f"--- {label}: NVRTC -arch=sm_100a -Xptxas=-v\n{log.strip()}")
        regs, stack, st, ld = parse(log)
        spilled |= bool(st or ld)
        lines.append(f"{label:40s} {regs:5d} {stack:6d} {st:9d} {ld:9d}  {cfg.smem_bytes:6d}  {cfg.tmem_columns}")
    lines += ["", "spills: " + ("SOME (see above)" if spilled else "none in any configuration"), *sorted(versions), "",
              *logs, ""]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print("\n".join(lines[:6 + len(CONFIGS) + 2]))
    print(f"written: {out}")
    return 1 if spilled else 0


if __name__ == "__main__":
    sys.exit(main())
