"""Overhead measurement for the CLI, notebooks and benchmarks/.

A suite is a module ``workbench/bench/<name>.py`` exposing ``run(quick=False) -> dict``; the CLI
(``python -m workbench bench``) discovers them, so helpers can add suites without editing this file.
"""

from __future__ import annotations

import importlib
import pkgutil
import platform
import statistics
import time

__all__ = ["suites", "run_suite", "machine", "time_calls"]


def suites() -> list[str]:
    """Names of the suites present (modules of this package with a ``run`` function)."""
    out = []
    for m in pkgutil.iter_modules(__path__):
        if m.name.startswith("_"):
            continue
        out.append(m.name)
    return sorted(out)


def run_suite(name: str, quick: bool = False) -> dict:
    if name not in suites():
        raise ValueError(f"Expected a benchmark suite among {suites()}, but got {name!r}.")
    mod = importlib.import_module(f"{__name__}.{name}")
    if not callable(getattr(mod, "run", None)):
        raise ValueError(f"Expected workbench.bench.{name} to define run(quick=False), but it does not.")
    return mod.run(quick=quick)


def machine() -> dict:
    """Where a result was measured (CPU, Python, and the GPU when cupy sees one)."""
    info = {"python": platform.python_version(), "platform": platform.platform(), "processor": platform.processor(),
            "cpu_count": __import__("os").cpu_count()}
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            p = cupy.cuda.runtime.getDeviceProperties(0)
            info["gpu"] = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]
            info["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
            info["cupy"] = cupy.__version__
    except Exception:
        pass
    return info


def time_calls(fn, n: int, repeats: int = 5, sync=None) -> dict:
    """Per-call host time of ``fn()`` in microseconds: median and min over ``repeats`` loops of n calls
    (``sync()`` runs after each loop, inside the timed region, so queued GPU work is counted)."""
    per = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        if sync is not None:
            sync()
        per.append((time.perf_counter() - t0) / n * 1e6)
    return {"median_us": statistics.median(per), "min_us": min(per), "runs_us": per, "calls": n}
