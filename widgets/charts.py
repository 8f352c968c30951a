"""Charts for the overhead lab, and a progress bar for long work.

``plot_overhead(results)`` draws per-call costs as horizontal bars (median, with the spread of the
samples as a whisker), the workbench's paths in one colour and the anchors (CuTe DSL, torch,
cupy, ...) in another, so a ratio reads at a glance.  ``results`` is any of:

* ``{name: microseconds}`` or ``{name: [samples in microseconds]}``;
* a list of rows ``{"name": ..., "us": median, "samples": [...], "anchor": bool}``;
* a dict with such a list under ``"rows"``;
* the result files of ``python -m workbench bench`` / ``benchmarks/``: the launch suite and
  ``gpu_conversion.py`` (``{"paths": {name: {"median_us", "runs_us"}}}``) and the conversion suite
  (``{"workbench": {...}, "cute_dsl": {...}, "reference": {...}}``).

``progress(iterable, total, description)`` wraps a loop with an ipywidgets progress bar.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

ANCHOR_COLOR = "#999999"
OURS_COLOR = "#1f78b4"


_OURS_PREFIXES = ("dsl_", "wb.", "3x wb", "vadd launch")


def _bench_rows(results):
    """Rows from the JSON the benchmark suites write, or None for any other shape."""
    if "paths" in results:
        return [{"name": k, "us": v["median_us"], "samples": v.get("runs_us") or [v["median_us"]],
                 "anchor": not k.startswith(_OURS_PREFIXES)} for k, v in results["paths"].items()]
    if "workbench" in results and "cute_dsl" in results:
        rows = [{"name": f"workbench {k}", "us": v} for k, v in results["workbench"].items()]
        rows += [{"name": f"CuTe DSL {k}", "us": v, "anchor": True} for k, v in results["cute_dsl"].items()]
        rows += [{"name": k, "us": v, "anchor": True} for k, v in results.get("reference", {}).items()]
        return rows
    return None


def _rows(results) -> list[dict]:
    if isinstance(results, dict) and "rows" in results:
        results = results["rows"]
    elif isinstance(results, dict):
        results = _bench_rows(results) or results
    rows = []
    if isinstance(results, dict):
        for name, v in results.items():
            rows.append({"name": str(name), "samples": list(v)} if isinstance(v, (list, tuple, np.ndarray))
                        else {"name": str(name), "us": float(v)})
    elif isinstance(results, (list, tuple)):
        rows = [dict(r) for r in results]
    else:
        raise TypeError(f"Expected a dict or a list of result rows, but got {type(results).__name__}.")
    if not rows:
        raise ValueError("Expected at least one result to plot, but got none.")
    for r in rows:
        if "name" not in r:
            raise ValueError(f"Expected each result row to have a 'name', but got {r!r}.")
        s = r.get("samples")
        if s is not None and len(s):
            a = np.asarray(s, float)
            r.setdefault("us", float(np.median(a)))
            r["lo"], r["hi"] = float(np.percentile(a, 25)), float(np.percentile(a, 75))
        if "us" not in r:
            raise ValueError(f"Expected 'us' or 'samples' in result row {r['name']!r}.")
        r.setdefault("anchor", False)
    return rows


LOG_RATIO = 30   # costs spanning more than this factor are drawn on a log axis (one slow bar flattens the rest)


def plot_overhead(results, ax=None, title: str = "Per-call overhead", unit: str = "µs", baseline: str | None = None,
                  log: bool | None = None):
    """Horizontal bar chart of per-call costs; returns the matplotlib Axes.

    With ``baseline`` (a row name) each bar is annotated with its ratio to that row.  ``log``: a log axis;
    None (the default) chooses it when the largest cost is more than ``LOG_RATIO`` times the smallest.
    """
    import matplotlib.pyplot as plt

    rows = _rows(results)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.2))
    y = np.arange(len(rows))[::-1]
    vals = [r["us"] for r in rows]
    colors = [ANCHOR_COLOR if r["anchor"] else OURS_COLOR for r in rows]
    ax.barh(y, vals, color=colors)
    for yi, r in zip(y, rows):
        if "lo" in r:
            ax.plot([r["lo"], r["hi"]], [yi, yi], color="#000000", linewidth=1)
    base = None
    if baseline is not None:
        match = [r["us"] for r in rows if r["name"] == baseline]
        if not match:
            raise ValueError(f"Expected baseline to be one of the row names, but got {baseline!r}.")
        base = match[0]
    ends = [max(r["us"], r.get("hi", r["us"])) for r in rows]
    for yi, v, end in zip(y, vals, ends):   # the label starts after the whisker, never across it
        label = f"{v:.2f}" + (f"  ({v / base:.2f}x)" if base else "")
        ax.text(end, yi, " " + label, va="center", fontsize=8)
    ax.set_yticks(y, [r["name"] for r in rows])
    positive = [v for v in vals if v > 0]
    if log is None:
        log = bool(positive) and max(positive) > LOG_RATIO * min(positive)
    if log:   # bars start at a decade below the smallest cost; labels need a decade of room on the right
        ax.set_xscale("log")
        lo = 10 ** np.floor(np.log10(min(positive)))
        ax.set_xlim(lo, max(ends) * 30)
        ax.set_xlabel(f"{unit} (log scale)")
    else:
        ax.set_xlim(0, max(ends) * 1.35)
        ax.set_xlabel(unit)
    ax.set_title(title)
    ax.spines[["top", "right"]].set_visible(False)
    return ax


@lru_cache(maxsize=1)
def _bar_class():
    import ipywidgets as W

    class ProgressBar(W.IntProgress):
        """An IntProgress whose static form (``text/plain``, what a saved notebook shows without widget
        state) says what it counts, instead of ipywidgets' ``IntProgress(value=0, ...)`` frozen at display."""

        def _repr_mimebundle_(self, **kwargs):
            data = super()._repr_mimebundle_(**kwargs)
            meta = None
            if isinstance(data, tuple):
                data, meta = data
            data = dict(data or {})
            data["text/plain"] = repr(self)
            return (data, meta) if meta is not None else data

        def __repr__(self):
            return f"{self.description or 'progress'}: a progress bar over {self.max} items"

    return ProgressBar


def progress(iterable, total: int | None = None, description: str = ""):
    """Yield from ``iterable`` while an ipywidgets progress bar counts; when the loop ends (or stops early)
    one printed line says how far it got, e.g. ``measuring: 5/5 done``.

    That line is the output a saved notebook keeps (GitHub, nbconvert, nbval): the bar itself is live
    state, and replacing it (``clear_output``, an ``Output`` widget, or a display update, which nbval does
    not see) would break strict notebook checks.  Without a display the loop still runs and prints the line.
    """
    from IPython.display import display

    if total is None:
        total = len(iterable)
    name = description or "progress"
    bar = _bar_class()(value=0, min=0, max=max(total, 1), description=description)
    display(bar)
    done, finished = 0, False
    try:
        for item in iterable:
            yield item
            done += 1
            bar.value = done
        finished = True
    finally:   # also on break (the generator is closed) and on an exception in the loop
        bar.bar_style = "success" if finished else "danger"
        print(f"{name}: {done}/{total} done" if finished else f"{name}: stopped after {done}/{total}")
