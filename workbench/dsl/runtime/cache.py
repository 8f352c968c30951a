"""The JIT cache: one specialization per signature, an in-memory dict per kernel plus cupy's
on-disk NVRTC cache, and the counters behind ``wb.cache_info()``."""

from __future__ import annotations

import os
import threading
import weakref

from . import cupy as backend_cupy

_KERNELS: weakref.WeakSet = weakref.WeakSet()
_LOCK = threading.Lock()     # kernels are defined in any thread; cache_info() iterates a snapshot


class Stats:
    __slots__ = ("lowerings", "gpu_compiles", "compile_seconds", "slow_dispatches")

    def __init__(self):
        self.lowerings = 0          # Python -> IR -> code, once per signature
        self.gpu_compiles = 0       # NVRTC + module load (a disk-cache hit is cheap)
        self.compile_seconds = 0.0
        self.slow_dispatches = 0    # calls that missed every fast guard (new signature or refused)


def register(k):
    with _LOCK:
        _KERNELS.add(k)


def cache_info() -> dict:
    """What is compiled: per kernel its specializations (signature, target), and the disk cache."""
    kernels = []
    total = Stats()
    with _LOCK:
        live = list(_KERNELS)
    for k in sorted(live, key=lambda k: k.__name__):
        s = k.stats
        total.lowerings += s.lowerings
        total.gpu_compiles += s.gpu_compiles
        total.compile_seconds += s.compile_seconds
        kernels.append({"kernel": k.__name__, "specializations": [sp.describe() for sp in k.specializations],
                        "lowerings": s.lowerings, "gpu_compiles": s.gpu_compiles, "slow_dispatches": s.slow_dispatches})
    d = backend_cupy.disk_cache_dir()
    try:
        files = len(os.listdir(d))
    except OSError:
        files = 0
    return {"kernels": kernels, "specializations": sum(len(k["specializations"]) for k in kernels),
            "lowerings": total.lowerings, "gpu_compiles": total.gpu_compiles,
            "disk_cache": {"dir": d, "files": files}}
