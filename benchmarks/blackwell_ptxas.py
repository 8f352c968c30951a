"""The Blackwell GEMM rung's generated code, and one kernel per tcgen05 instruction form the tests exercise,
assembled for sm_100a: registers and spills, as ptxas reports them.

No Blackwell GPU is lent here, so the rung (workbench/kernels/gemm_blackwell.py) is compiled, never run on one.  This
script generates each configuration's CUDA (host numpy operands: nothing runs), compiles it to PTX with NVRTC
(``compute_100a``), writes the PTX, and assembles it with the CUDA toolkit's ``ptxas -arch=sm_100a -v`` (found on
PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin).  Where no ptxas is found it says so and reports NVRTC's own ptxas
(``-Xptxas=-v``, the same assembler NVRTC links) instead, labelled as such.  Needs only the repository and cupy
(for NVRTC); no GPU.

The second table (FORMS) assembles the tcgen05 kernels of tests/test_ops.py, imported from there (each run once on
the CPU executor, checked exact as its test checks it, for its CUDA): alloc / dealloc / relinquish (cta_group 1 and
2), tcgen05.mma of every kind kernels run (f16, tf32, f8f6f4, i8: SS and TS, 1-SM and 2-SM;
block-scaled mxf8f6f4, mxf4, mxf4nvf4, 1-SM and 2-SM), commit (multicast too), the ld / st shapes (32x32b and every 16dp one), cp (128x256b, cta_group::2,
the scale factors' 32x128b.warpx4) and the fences; each row lists the tcgen05 instructions its PTX holds.

    python benchmarks/blackwell_ptxas.py                 # writes benchmarks/results/blackwell-ptxas-<GPU>.txt
    python benchmarks/blackwell_ptxas.py --out FILE      # elsewhere; --keep DIR keeps the .ptx/.cubin files
    python benchmarks/blackwell_ptxas.py --ptxas /usr/local/cuda-13.0/bin/ptxas     # this ptxas

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


def _forms():
    """(label, function returning the CUDA) of each tcgen05 test kernel: tests/test_ops.py's own run helpers."""
    sys.path.insert(0, str(ROOT / "tests"))
    import test_ops as T  # noqa: E402  (the tests' kernels, not copies)
    cpu = T.Backend_cpu()
    out = [("alloc/relinquish/dealloc 1cta, mma f16 SS, commit, ld 32x32b, fence", lambda: T._umma_run(cpu)),
           ("st 32x32b + wait::st", T._tmem_round_trip_run),
           ("st 16x256b", T._st16_run),
           ("cp 128x256b + mma f16 TS", lambda: T._umma_ts_run(cpu)),
           ("cp 32x128b.warpx4 + mma mxf8f6f4 block_scale", T._block_scaled_run)]
    out += [(f"mma {kind} {'TS' if ts else 'SS'} {a}x{b}->{c}", lambda a=a, b=b, c=c, ts=ts: T._umma_kind_run(a, b, c, ts)[0])
            for a, b, c, kind in T._KINDS for ts in (False, True)]
    out += [(f"mma mxf4 vs{vs} {sf}", lambda vs=vs, sf=sf: T._mxf4_run(vs, sf)) for vs, sf in sorted(T._MXF4)]
    out += [(f"ld {name}", lambda name=name: T._ld16_run(name)) for name in sorted(T._LD16)]
    out += [("2-SM alloc/relinquish/dealloc", T._pair_alloc_run),
            ("2-SM alloc/dealloc, mma f16 SS, commit multicast", T._umma_pair_run),
            ("2-SM cp 128x256b + mma f16 TS M=256", lambda: T._umma_pair_ts_run(256)),
            ("2-SM cp 128x256b + mma f16 TS M=128", lambda: T._umma_pair_ts_run(128)),
            ("2-SM cp 32x128b.warpx4 + mma mxf8f6f4", T._pair_block_scaled_run),
            *((f"2-SM {'cp 128x256b + ' if ts else ''}mma {kind} {'TS' if ts else 'SS'} {a}x{b}->{c}",
               lambda a=a, b=b, c=c, ts=ts: T._pair_kind_run(a, b, c, ts))
              for a, b, c, kind in T._KINDS[::2] for ts in (False, True)),
            ("2-SM mma mxf4nvf4 (packed e2m1, TMA)", T._pair_mxf4_run)]
    return out


_TCGEN05 = re.compile(r"tcgen05\.[A-Za-z0-9_:.]+")


def assemble(label, code, ptxas, work, versions):
    """(registers, stack, spill stores, spill loads, the log's section, the tcgen05 instructions of the PTX)."""
    slug = re.sub(r"[^A-Za-z0-9]+", "_", label)
    ptx = compile_ptx(code, "sm_100a")
    forms = sorted(set(_TCGEN05.findall(ptx)))
    if ptxas:
        ptx_file, cubin = work / f"{slug}.ptx", work / f"{slug}.cubin"
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
        section = f"--- {label}: {' '.join(cmd)}{note}\n{log.strip()}"
    else:
        log = nvrtc_ptxas(code)
        section = f"--- {label}: NVRTC -arch=sm_100a -Xptxas=-v\n{log.strip()}"
    return (*parse(log), section, forms)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--keep", type=Path, default=None, help="keep the .ptx and .cubin files in this directory")
    ap.add_argument("--ptxas", default=None, help="the ptxas binary (default: PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)")
    args = ap.parse_args(argv)
    if args.ptxas and not (os.path.isfile(args.ptxas) and os.access(args.ptxas, os.X_OK)):
        ap.error(f"--ptxas: expected an executable ptxas, but got {args.ptxas!r}")
    gpu = gpu_name()
    out = args.out or ROOT / "benchmarks" / "results" / f"blackwell-ptxas-{gpu}.txt"
    ptxas = args.ptxas or find_ptxas()
    version = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1] \
        if ptxas else None
    work = args.keep or Path(tempfile.mkdtemp(prefix="blackwell_ptxas_"))
    work.mkdir(parents=True, exist_ok=True)
    lines = [
        "command: " + " ".join([*([f"CUDA_HOME={os.environ['CUDA_HOME']}"] if os.environ.get("CUDA_HOME") else []),
                                "python benchmarks/blackwell_ptxas.py",
                                *(sys.argv[1:] if argv is None else argv)]),
        "The Blackwell GEMM rung (workbench/kernels/gemm_blackwell.py) and the tcgen05 test kernels assembled for "
        "sm_100a: compiled, NOT run",
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
        regs, stack, st, ld, section, _ = assemble(label, code, ptxas, work, versions)
        logs.append(section)
        spilled |= bool(st or ld)
        lines.append(f"{label:40s} {regs:5d} {stack:6d} {st:9d} {ld:9d}  {cfg.smem_bytes:6d}  {cfg.tmem_columns}")
    lines += ["", "tcgen05 instruction forms: tests/test_ops.py's kernels (each run once on the CPU executor, exact), "
              "assembled the same way", "",
              f"{'kernel':66s} {'regs':>5s} {'stack':>6s} {'spill st':>9s} {'spill ld':>9s}  tcgen05.* instructions in its PTX"]
    seen: set = set()
    for label, make in _forms():
        regs, stack, st, ld, section, forms = assemble(label, make(), ptxas, work, versions)
        logs.append(section)
        spilled |= bool(st or ld)
        seen.update(forms)
        lines.append(f"{label:66s} {regs:5d} {stack:6d} {st:9d} {ld:9d}  {' '.join(f[8:] for f in forms)}")
    lines += ["", "every tcgen05 instruction form assembled above:", *(f"  {f}" for f in sorted(seen))]
    lines += ["", "spills: " + ("SOME (see above)" if spilled else "none in any kernel"), *sorted(versions), "",
              *logs, ""]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print("\n".join(lines[:lines.index("spills: " + ("SOME (see above)" if spilled else "none in any kernel")) + 1]))
    print(f"written: {out}")
    return 1 if spilled else 0


if __name__ == "__main__":
    sys.exit(main())
