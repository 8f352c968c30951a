"""Notebook 09 (the overhead lab): reading the committed results."""

import json
import pathlib

import workbench as wb

from . import exercise


def _gpu_result() -> dict:
    root = pathlib.Path(wb.__file__).resolve().parents[1]
    return json.loads((root / "benchmarks" / "results" / "lab-gpu-H100.json").read_text())


@exercise("09.1", "Which path has the lowest median host time for 1 tensor argument on the H100?",
          hint="compare the '1' column of the launch table, every row")
def _():
    paths = _gpu_result()["suites"]["launch"]["paths"]
    timed = {p: r["1"]["median_us"] for p, r in paths.items() if "1" in r and "median_us" in r["1"]}
    return min(timed, key=timed.get)


@exercise("09.2", "Is the pointer bypass at or below the driver floor for every tensor count on the H100?",
          hint="the bypass_over_driver_floor ratios")
def _():
    launch = _gpu_result()["suites"]["launch"]
    return all(launch["paths"]["pointer bypass"][n]["median_us"] <=
               launch["paths"]["driver floor (ctypes cuLaunchKernel)"][n]["median_us"] for n in map(str, launch["counts"]))


@exercise("09.3", "Which exception does wb.from_dlpack raise for a torch tensor that requires grad?",
          hint="DLPack's own error for a tensor it cannot express")
def _():
    import torch
    try:
        wb.from_dlpack(torch.ones(2, requires_grad=True))
    except Exception as e:
        return type(e)
    raise AssertionError("wb.from_dlpack accepted a tensor that requires grad")
