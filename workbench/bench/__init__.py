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

__all__ = ["suites", "describe", "run_suite", "machine", "time_calls"]

# modules of this package that are commands of their own, not ``bench`` suites (one way to run each)
OWN_COMMANDS = {"lab": "python -m workbench lab"}
NO_GPU = "skipped: no CUDA GPU is visible (cupy sees none), and this suite measures one"


def suites() -> list[str]:
    """Names of the suites present (modules of this package, other than OWN_COMMANDS)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__)
                  if not m.name.startswith("_") and m.name not in OWN_COMMANDS)


def describe(name: str) -> str:
    """The first sentence of a suite's docstring (what ``bench --help`` lists), read without importing it."""
    import ast
    import pathlib

    doc = ast.get_docstring(ast.parse((pathlib.Path(__file__).parent / f"{name}.py").read_text())) or ""
    text = " ".join(doc.replace("``", "").split())
    return text.split(". ")[0].rstrip(".") if text else "(no description)"


def run_suite(name: str, quick: bool = False) -> dict:
    """The suite's result; a result that is only ``{"gpu": False}`` (the suite needs a GPU and saw none) gets
    ``"skipped"``, a sentence saying so."""
    if name in OWN_COMMANDS:
        raise ValueError(f"Expected a benchmark suite among {suites()}, but got {name!r}: it is a command of its own, "
                         f"{OWN_COMMANDS[name]}.")
    if name not in suites():
        raise ValueError(f"Expected a benchmark suite among {suites()}, but got {name!r}.")
    mod = importlib.import_module(f"{__name__}.{name}")
    if not callable(getattr(mod, "run", None)):
        raise ValueError(f"Expected workbench.bench.{name} to define run(quick=False), but it does not.")
    out = mod.run(quick=quick)
    if out == {"gpu": False}:
        out = {"gpu": False, "skipped": NO_GPU}
    return out


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
