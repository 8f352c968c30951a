"""ExplainView: every step of wb.explain drawn as a grid at any size (or shown as text when it is not a layout),
each step coloured on its own scale with its own legend, and a static SVG under 1 MB that names every step and
states its formula."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

pytest.importorskip("ipywidgets", reason="the widgets need the Jupyter stack (make test installs it)")
pytest.importorskip("anywidget", reason="the widgets need anywidget (make test installs it)")

import workbench as wb
from widgets import ExplainView
from widgets.canvas import GridCanvas
from widgets.colors import scale_indices
from widgets.svg import SVG_MAX_BYTES
from workbench.layout.explanation import OPERATIONS

P = wb.parse_layout
CASES = {
    "composition": ("(6,2):(8,2)", "(4,3):(3,1)"),
    "complement": ("(2,2):(1,6)", 24),
    "logical_divide": ("(4,2,3):(2,1,8)", "4:2"),
    "zipped_divide": ("(9,(4,8)):(59,(13,1))", ("3:3", "(2,4):(1,8)")),
    "tiled_divide": ("(9,(4,8)):(59,(13,1))", ("3:3", None)),
    "flat_divide": ("100:1", 32),
    "logical_product": ("(2,2):(4,1)", "6:1"),
    "zipped_product": ("(2,5):(5,1)", (3, 4)),
    "tiled_product": ("(2,5):(5,1)", (3, 4)),
    "flat_product": ("(2,5):(5,1)", "(3,4):(1,3)"),
    "blocked_product": ("(2,5):(5,1)", "(3,4):(1,3)"),
    "raked_product": ("8:1", 4),
    "nullspace": ("(4,2,3):(1,0,0)",),
    "recast_layout": (32, 16, "(8,64):(64,1)"),
}


def texts(svg: str) -> list[str]:
    return [e.text for e in ET.fromstring(svg).iter() if e.text]


def test_every_op_has_a_case():
    assert set(CASES) == set(OPERATIONS)


@pytest.mark.parametrize("op", sorted(CASES))
def test_view_draws_every_step(op):
    ex = wb.explain(op, *CASES[op])
    v = ExplainView(ex)
    svg = v.to_svg()
    assert len(svg.encode("utf-8")) < SVG_MAX_BYTES
    lines = texts(svg)   # parsed: one well-formed document; the text as a reader sees it (unescaped)
    for k, step in enumerate(ex.steps, 1):
        assert f"{k}. {step.name}" in lines and step.formula in lines and step.why in lines, step
    assert any(str(ex.result) in t for t in lines)
    # every step here is a small layout: each is a drawn grid, titled and captioned
    grids = v.grids()
    assert all(g is not None for g in grids) and len(grids) == len(ex.steps)
    assert [c.title for c in v.panels] == [f"{k}. {s.name}" for k, s in enumerate(ex.steps, 1)]
    assert all(isinstance(c, GridCanvas) and c.subtitle == s.formula and s.why in c.notes
               for c, s in zip(v.panels, ex.steps))
    # each step on its own scale, from its own smallest to its largest offset, with its own legend
    for g, c in zip(grids, v.panels):
        k = g.keys[~np.isnan(g.keys)]
        assert c.legend["kind"] == "scale" and (c.legend["lo"], c.legend["hi"]) == (int(k.min()), int(k.max()))
        assert g.colors.tolist() == scale_indices(g.keys, k.min(), k.max()).tolist()


def test_view_from_op_and_args_and_its_bundle(tmp_path):
    v = ExplainView(wb.logical_divide, "(4,2,3):(2,1,8)", "4:2")
    assert repr(v) == "ExplainView(logical_divide: 3 steps, result ((2,2),(2,3)):((4,1),(2,8)))"
    bundle = v._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data
    assert v.static_bundle()["image/svg+xml"] == v.to_svg().replace("<svg ", '<svg class="wb-static" ', 1)
    v.save(tmp_path / "x.svg")
    v.save(tmp_path / "x.png")
    assert (tmp_path / "x.svg").read_text() == v.to_svg()
    assert (tmp_path / "x.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(TypeError, match="Expected an Explanation"):
        ExplainView(P("4:1"))
    with pytest.raises(TypeError, match="an Explanation alone"):
        ExplainView(wb.explain(wb.complement, "4:2", 24), 3)


def test_the_readmes_example_draws_every_step_each_on_its_own_scale():
    # zipped_divide((100,90),(32,32)): steps 7 and 8 (12288 cells) were text, and one scale 0..9627 made
    # steps 1-5 (offsets up to 127) one colour
    v = ExplainView(wb.explain(wb.zipped_divide, wb.make_layout((100, 90)), (32, 32)))
    assert all(isinstance(c, GridCanvas) for c in v.panels) and len(v.panels) == 8
    sizes = [c.rows * c.cols for c in v.panels]
    assert sizes[-1] == sizes[-2] == 12288
    assert [c.legend["hi"] for c in v.panels][:5] == [96, 127, 127, 64, 95]   # each its own range
    for c in v.panels[:5]:   # so a small step shows many colours, not one
        assert len(set(np.frombuffer(c.tile_colors, np.uint8).tolist())) >= min(4, c.rows * c.cols)
    svg = v.to_svg()
    assert len(svg.encode("utf-8")) < SVG_MAX_BYTES and "not drawn" not in svg
    big = v.panels[-1]   # a large step: the canvas has its overview and answers a hover
    big.hover = [1000, 11]
    off = v.sources()[-1].offsets_at(np.array([1000]), np.array([11]))[0, 0]
    assert big.hover_text == f"index {1000 + 1024 * 11}  coordinate ((8,31),(3,2))  offset {off}"


def test_large_steps_are_drawn_and_the_picture_stays_under_1mb():
    # 8192-cell steps are drawn too (their overview and first tile in the picture); 64x64 steps within the budget
    v = ExplainView(wb.composition, wb.make_layout(8192), wb.make_layout((64, 128), stride=(128, 1)))
    svg = v.to_svg()
    assert len(svg.encode("utf-8")) < SVG_MAX_BYTES
    lines = texts(svg)
    assert all(isinstance(c, GridCanvas) for c in v.panels)
    assert all(s.formula in lines for s in v.explanation.steps)
    v = ExplainView(wb.logical_divide, wb.make_layout((64, 64)), (8, None))
    assert len(v.to_svg().encode("utf-8")) < SVG_MAX_BYTES
    # many steps: a rank-3 by-mode composition draws what the budget holds and lists the rest as text
    A = wb.make_layout(((4, 4, 4), (4, 4, 4), (4, 4, 4)))
    T = (P("(4,4):(4,1)"), P("(4,4):(4,1)"), P("(4,4):(4,1)"))
    v = ExplainView(wb.composition, A, T)
    svg = v.to_svg()
    assert len(svg.encode("utf-8")) < SVG_MAX_BYTES and len(v.explanation.steps) > 15
    lines = texts(svg)
    assert all(s.formula in lines for s in v.explanation.steps)
