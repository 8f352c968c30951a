"""MarkingExplorer, DLPackInspector, AlgebraPlayground and the chart helper, without a browser."""

from __future__ import annotations

import gc
import re

import numpy as np
import pytest

pytest.importorskip("ipywidgets", reason="the widgets need the Jupyter stack (make test installs it)")
pytest.importorskip("anywidget", reason="the widgets need anywidget (make test installs it)")
import torch

import workbench as wb
from widgets.charts import _rows, plot_overhead
from widgets.dlpack_inspector import DLPackInspector
from widgets.marking import MarkingExplorer
from widgets.playground import AlgebraPlayground


def rows(view) -> dict:
    return dict(view.rows())


# -- MarkingExplorer ---------------------------------------------------------------------------
def test_marking_layout_dynamic_deduces_leading_dim():
    m = MarkingExplorer(torch.zeros(4, 8))
    assert m.error == "" and str(m.static_layout) == "(4,8):(8,1)"
    r = rows(m)
    assert r["marked"] == "(?,?):(?{i64},1)"
    assert r["dynamic shapes"] == "(1, 1): mode(s) 0, 1 became ?"
    assert r["dynamic strides"] == "(1, 0): mode(s) 0 became ?"
    assert r["leading_dim"] == "1 (deduced)"
    assert m.marked_canvas.row_dynamic and not m.static_canvas.row_dynamic


def test_marking_shows_only_the_chosen_markings_controls():
    m = MarkingExplorer(torch.zeros(4, 3))
    assert m.layout_dynamic_controls.layout.display is None and m.compact_controls.layout.display == "none"
    m.operation_control.value = "mark_compact_shape_dynamic"
    assert m.layout_dynamic_controls.layout.display == "none" and m.compact_controls.layout.display is None
    m.operation_control.value = "static"
    assert m.layout_dynamic_controls.layout.display == "none" and m.compact_controls.layout.display == "none"


def test_marking_draws_large_tensors_without_enumerating():
    m = MarkingExplorer(np.zeros((2048, 2048), np.float32))
    assert (m.static_canvas.rows, m.marked_canvas.cols) == (2048, 2048)
    assert m.static_canvas.source.layout._offsets is None and len(m.to_svg()) < 1_000_000


def test_marking_errors_are_shown_not_raised():
    m = MarkingExplorer(torch.zeros(4, 8))
    m.leading_dim_control.value = 0            # a control change, as in the browser
    assert m.error == "ValueError: Expected strides[leading_dim] == 1, but got 8."
    assert m.marked_layout is None and m.tensor is None
    assert "wb-error" in m.info.value and "strides[leading_dim] == 1" in m.info.value
    assert "Expected strides[leading_dim] == 1" in m.to_svg()
    m.set("mark_compact_shape_dynamic", mode=0, divisibility=0)
    assert m.error == "ValueError: Expected divisibility >= 1, but got 0."
    m.set("mark_compact_shape_dynamic", mode=0, divisibility=3)
    assert "not divisible by the divisibility(3)" in m.error
    m.set("mark_compact_shape_dynamic", mode=0, stride_order="1,x")
    assert m.error.startswith("ValueError: Expected stride_order as comma-separated ints")
    m.set("mark_compact_shape_dynamic", mode=0, divisibility=2)   # recovers
    assert m.error == "" and str(m.marked_layout) == "(?{div=2},8):(8,1)"
    assert rows(m)["stride_order"] == "(0, 1) (deduced)"


def test_marking_refuses_non_compact_where_cute_dsl_is_wrong():
    # CuTe DSL turns (16):(2) into (?):(1); the workbench refuses and the explorer says why
    m = MarkingExplorer(np.arange(32, dtype=np.float32)[::2], "mark_compact_shape_dynamic")
    assert m.error.startswith("ValueError: Expected a compact tensor")
    m.operation_control.value = "mark_layout_dynamic"
    assert m.error == "" and str(m.marked_layout) == "(?):(?{i64})"


def test_marking_given_stride_order_and_static():
    m = MarkingExplorer(torch.zeros(4, 8).t(), "static")     # (8,4):(1,8)
    assert str(m.marked_layout) == "(8,4):(1,8)" and m.error == ""
    m.set("mark_compact_shape_dynamic", mode=1, stride_order=(1, 0))
    assert m.error == "" and str(m.marked_layout) == "(8,?):(1,8)"
    assert rows(m)["stride_order"] == "(1, 0) (given)"
    assert repr(m) == "MarkingExplorer(Float32[8, 4], operation='mark_compact_shape_dynamic')"
    with pytest.raises(TypeError, match="__dlpack__"):
        MarkingExplorer([1, 2, 3])


def test_marking_svg_is_deterministic_modulo_nothing():
    a = MarkingExplorer(torch.zeros(4, 8)).to_svg()
    b = MarkingExplorer(torch.zeros(4, 8)).to_svg()
    assert a == b and "(?,?):(?{i64},1)" in a


# -- DLPackInspector ---------------------------------------------------------------------------
def test_inspector_fields_torch_slice():
    x = torch.arange(12, dtype=torch.float16).reshape(3, 4)[:, 1:]
    d = DLPackInspector(x)
    r = dict(d.capsule_rows())
    assert r["capsule name"] == "dltensor_versioned"
    assert r["dtype"] == "code 2 (kDLFloat), bits 16, lanes 1 -> Float16"
    assert r["device"] == "(1, 0) kDLCPU"
    assert r["shape"] == "(3, 3)" and r["strides"] == "(4, 1) elements"
    assert int(r["data"], 16) + int(r["byte_offset"]) == x.data_ptr()
    i = dict(d.interpretation_rows())
    assert i["layout"] == "(3,3):(4,1)" and i["element_type"] == "Float16" and i["memspace"] == "generic"
    assert int(i["data_ptr"].split()[0], 16) == x.data_ptr()
    assert d.dltensor.ndim == 2 and d.dltensor.strides[0] == 4
    assert repr(d) == "DLPackInspector(torch.Tensor, dltensor_versioned, shape=(3, 3))"


def test_inspector_read_only_numpy_and_raw_capsule():
    a = np.arange(6, dtype=np.int8).reshape(2, 3)
    a.flags.writeable = False
    d = DLPackInspector(a)
    r = dict(d.capsule_rows())
    assert r["flags"] == "0x1 (READ_ONLY)" and r["version"].startswith("1.")
    assert dict(d.interpretation_rows())["read_only"] == "True"
    cap = torch.arange(4).__dlpack__()
    dc = DLPackInspector(cap)
    assert dict(dc.capsule_rows())["capsule name"] == "dltensor"
    assert dict(dc.interpretation_rows()) == {"from_dlpack": "not applied (a raw capsule)"}
    svg = d.to_svg()
    assert svg.count("<svg") == 3 and "READ_ONLY" in svg


def test_inspector_keeps_producer_alive_until_closed():
    import sys

    a = np.arange(8.0)
    base = sys.getrefcount(a)
    d = DLPackInspector(a)
    assert sys.getrefcount(a) > base          # the consumed capsule's owner holds the array
    assert d.fields.shape == (8,)
    d.close()                                   # ipywidgets keeps open widgets registered
    del d
    gc.collect()
    assert sys.getrefcount(a) == base         # the deleter ran (once: the count is exact)


# -- AlgebraPlayground -------------------------------------------------------------------------
def test_playground_operations_and_shared_colouring():
    p = AlgebraPlayground("(8,4):(1,8)", "4:2", "logical_divide")
    assert str(p.result) == str(wb.logical_divide(wb.parse_layout("(8,4):(1,8)"), wb.parse_layout("4:2")))
    ga, gb, gr = p.grids()
    # B's value i is a coordinate of A: coloured like A(i); the result is coloured by its offsets
    a_color = dict(zip(ga.keys.astype(int).tolist(), ga.colors.tolist()))
    assert gb.colors.tolist() == [a_color[int(p.A(int(k)))] for k in gb.keys]
    assert all(a_color[int(k)] == c for k, c in zip(gr.keys, gr.colors))
    p.op_control.value = "composition"
    assert str(p.result) == str(wb.composition(p.A, p.B))
    p.op_control.value = "complement"
    p.b_control.value = "64"
    assert str(p.result) == str(wb.complement(p.A, 64))
    p.op_control.value = "coalesce"
    assert rows(p)["call"] == "wb.coalesce(A)" and str(p.result) == "32:1"


def test_playground_errors_in_place():
    p = AlgebraPlayground()
    p.a_control.value = "(4,2:(1,4)"
    assert p.error.startswith("CuteTextError: Expected ',' or ')'") and p.result is None   # a ValueError
    assert "wb-error" in p.info.value
    assert p.canvases[2].layout.display == "none"
    p.a_control.value = "(4,2):(1,4)"
    assert p.error == "" and p.canvases[2].layout.display is None
    with pytest.raises(ValueError, match="operation"):
        AlgebraPlayground(operation="transpose")
    big = AlgebraPlayground("(64,128):(1,64)", "(2,2):(1,2)", "logical_product")
    assert rows(big)["not drawn"] == "A, result: more than 4096 cells (use LayoutView for any size)"
    assert big.canvases[0].layout.display == "none" and big.canvases[1].layout.display is None


def test_playground_svg_golden():
    from test_widgets_layout import check_golden

    check_golden("playground_logical_divide.svg", AlgebraPlayground("(8,4):(1,8)", "4:2", "logical_divide").to_svg())


# -- charts ------------------------------------------------------------------------------------
def test_chart_rows_and_plot():
    import matplotlib

    matplotlib.use("Agg")
    r = _rows({"wb.from_dlpack": [1.0, 2.0, 3.0], "CuTe DSL from_dlpack": 6.0})
    assert r[0]["us"] == 2.0 and r[0]["lo"] == 1.5 and r[1]["us"] == 6.0
    ax = plot_overhead({"rows": [{"name": "ours", "us": 1.0}, {"name": "anchor", "us": 4.0, "anchor": True}]},
                       baseline="anchor")
    texts = [t.get_text() for t in ax.texts]
    assert texts == [" 1.00  (0.25x)", " 4.00  (1.00x)"]
    assert [p.get_width() for p in ax.patches] == [1.0, 4.0]
    # a label starts after its whisker, so the whisker never strikes through it
    ax = plot_overhead({"wide": [1.0, 1.0, 5.0, 5.0], "narrow": [2.0]})
    whisker_end = max(line.get_xdata()[1] for line in ax.lines)
    assert ax.texts[0].get_position()[0] == whisker_end == 5.0
    assert ax.get_xlim()[1] >= 5.0 * 1.35
    with pytest.raises(ValueError, match="baseline"):
        plot_overhead({"a": 1.0}, baseline="b")
    with pytest.raises(ValueError, match="at least one"):
        plot_overhead({})


def test_no_addresses_in_reprs():
    for v in (MarkingExplorer(torch.zeros(2, 2)), DLPackInspector(torch.zeros(2)), AlgebraPlayground()):
        assert not re.search(r"0x[0-9a-f]{6,}", repr(v)) and " at 0x" not in repr(v)


def test_charts_read_the_committed_benchmark_results():
    import json
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")
    from widgets.charts import _rows, plot_overhead

    res = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    launch = json.loads((res / "dsl-H100.json").read_text())["launch"]
    rows = {r["name"]: r for r in _rows(launch)}
    assert not rows["dsl_pointer_bypass"]["anchor"] and rows["cupy_RawKernel"]["anchor"]
    assert rows["dsl_pointer_bypass"]["us"] == launch["paths"]["dsl_pointer_bypass"]["median_us"]
    ax = plot_overhead(launch, baseline="ctypes_cuLaunchKernel_prebuilt")
    assert len(ax.patches) == len(launch["paths"])
    conv = json.loads((res / "conversion-cpu.json").read_text())
    rows = {r["name"]: r for r in _rows(conv)}
    assert rows["CuTe DSL from_dlpack(torch)"]["anchor"] and not rows["workbench from_dlpack(torch)"]["anchor"]
    plot_overhead(conv, baseline="CuTe DSL from_dlpack(torch)")
    gpu = json.loads((res / "conversion-gpu-H100.json").read_text())
    assert {r["name"] for r in _rows(gpu) if not r["anchor"]} >= {"wb.from_dlpack(torch cuda)"}
