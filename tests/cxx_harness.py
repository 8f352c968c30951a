"""Building host-only C++ test harnesses with g++, cached by content.

``build_harnesses(sources, include_dirs, hash_files)`` compiles each source into its own
executable, in parallel (one compiler per core), and caches each under the repository's
``build/cxx_harness/<hash>/`` (a directory of this checkout, not a predictable shared /tmp path
another user could plant).
The hash covers the source, every file in ``hash_files`` (the headers the harness relies on),
the flags and ``g++ --version``, so a changed header or compiler rebuilds.  Executables are
written under a fresh ``tempfile.mkdtemp`` directory and moved into place atomically, so
parallel sessions never run half a binary.  ``missing_toolchain`` names what is absent so a
test can skip with a reason.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import importlib.util
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
CACHE_ROOT = REPO / "build" / "cxx_harness"


def missing_toolchain(requirements):
    """``requirements``: (description, path-or-None) pairs; returns the descriptions that are absent."""
    return [what for what, ok in requirements if not ok or (isinstance(ok, pathlib.Path) and not ok.exists())]


CUDA_INCLUDE = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"


def cutlass_include():
    """The CUTLASS headers the nvidia-cutlass wheel ships (cutlass_library/source/include), or None."""
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or not spec.submodule_search_locations:
        return None
    p = pathlib.Path(spec.submodule_search_locations[0]) / "source" / "include"
    return p if (p / "cute" / "atom" / "mma_atom.hpp").is_file() else None


def cccl_include():
    """The CCCL headers of nvidia-cuda-cccl (nvidia/cu*/include/cccl), or None."""
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for cand in sorted(pathlib.Path(root).glob("cu*/include/cccl")):
            if (cand / "cuda" / "std" / "cstdint").is_file():
                return cand
    return None


def cute_toolchain(what):
    """(CUTLASS include, CCCL include) for a host-only CuTe C++ harness; skips the calling test, naming what is
    missing, when g++ or a header set is absent (``what``: the test, for the message)."""
    import pytest
    cutlass, cccl = cutlass_include(), cccl_include()
    missing = missing_toolchain([
        ("g++", shutil.which("g++")), ("CUTLASS headers (pip install nvidia-cutlass)", cutlass),
        ("CCCL headers (pip install nvidia-cuda-cccl)", cccl),
        (f"CUDA headers in {CUDA_INCLUDE}", CUDA_INCLUDE / "vector_types.h"),
    ])
    if missing:
        pytest.skip(f"{what} needs " + ", ".join(missing))
    return cutlass, cccl


def _digest(sources, hash_files, flags, cxx):
    h = hashlib.sha256()
    for f in [*sources, *sorted(set(hash_files))]:
        h.update(str(pathlib.Path(f).name).encode())
        h.update(pathlib.Path(f).read_bytes())
    h.update(" ".join(flags).encode())
    h.update(subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.encode())
    return h.hexdigest()[:20]


def build_harnesses(sources, include_dirs, hash_files=(), flags=("-std=c++17", "-O0", "-w"), cxx=None):
    """Compile every source to an executable (cached); returns ({source stem: exe path}, seconds spent compiling).

    Raises AssertionError with the compiler's message when a build fails.
    """
    cxx = cxx or shutil.which("g++")
    sources = [pathlib.Path(s) for s in sources]
    flags = list(flags)
    # one cache entry per source: editing one translation unit rebuilds only that one
    key_flags = flags + [str(d) for d in include_dirs]
    exes = {s.stem: CACHE_ROOT / _digest([s], hash_files, key_flags, cxx) / s.stem for s in sources}
    todo = [s for s in sources if not exes[s.stem].is_file()]
    t0 = time.perf_counter()
    if todo:
        CACHE_ROOT.mkdir(parents=True, exist_ok=True, mode=0o700)
        for s in todo:
            exes[s.stem].parent.mkdir(exist_ok=True, mode=0o700)
        work = pathlib.Path(tempfile.mkdtemp(dir=CACHE_ROOT))

        def build(src):
            tmp = work / src.stem
            cmd = [cxx, *flags, *[f"-I{d}" for d in include_dirs], str(src), "-o", str(tmp)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            assert r.returncode == 0, f"compiling {src.name} failed:\n{' '.join(cmd)}\n{r.stderr[-4000:]}"
            os.replace(tmp, exes[src.stem])

        try:
            # one g++ per core, in the order given (callers put the slowest units first): more at once
            # only adds memory (a CuTe unit takes up to ~2.5 GB) on a 2-core CI machine
            with concurrent.futures.ThreadPoolExecutor(max_workers=min(len(todo), os.cpu_count() or 1)) as pool:
                for f in [pool.submit(build, s) for s in todo]:
                    f.result()
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return exes, time.perf_counter() - t0


def run_harness(exe, timeout=120):
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{exe.name} exited with {r.returncode}:\n{r.stderr[-2000:]}"
    return r.stdout
