"""How a view reaches a notebook: its static picture as an output of its own, then the live widget.

The picture output holds the SVG (marked ``class="wb-static"`` so that a live view can hide it), the same
picture as a PNG (what JupyterLab draws in an untrusted notebook, and VS Code) and a line of text; the widget
output holds the widget.  ``save`` writes a file whole or not at all.  The stored notebooks are checked
here too: each view's picture output comes right before its widget output, whose ``model_id`` is blank (so
JupyterLab hides it instead of saying "model not found"), and stream outputs are merged.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

pytest.importorskip("ipywidgets", reason="the widgets need the Jupyter stack (make test installs it)")
pytest.importorskip("anywidget", reason="the widgets need anywidget (make test installs it)")

import workbench as wb  # noqa: E402
from widgets import CopyView, DLPackInspector, ExplainView, LayoutView, MMAView, TVLayoutView  # noqa: E402
from widgets.base import STATIC_CSS  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
VIEW = "application/vnd.jupyter.widget-view+json"


def _published(view) -> list:
    """The display_data messages displaying ``view`` publishes, in order."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    sent = []
    pub = shell.display_pub
    old = pub.publish
    pub.publish = lambda data, metadata=None, **kw: sent.append(data)
    try:
        from IPython.display import display

        display(view)
    finally:
        pub.publish = old
    return sent


def _views():
    import numpy as np

    mma = wb.make_tiled_mma(wb.mma_atom("SM80_16x8x16_F32F16F16F32_TN"), wb.make_layout((2, 2, 1)), (32, 32, 16))
    return [LayoutView("(4,2):(1,4)"), TVLayoutView(wb.Layout(((8, 4), 2), ((1, 16), 8)), (8, 8)), MMAView(mma),
            ExplainView("logical_divide", "(4,2,3):(2,1,8)", "4:2"), DLPackInspector(np.zeros((2, 3), np.float32)),
            CopyView(wb.make_tiled_copy_A(wb.copy_atom("SM75_U32x4_LDSM_N", wb.Float16), mma))]


@pytest.mark.parametrize("k", range(6))
def test_display_writes_the_picture_then_the_widget(k):
    view = _views()[k]
    first, second = _published(view)
    assert set(first) == {"image/svg+xml", "image/png", "text/plain"}
    assert first["image/svg+xml"] == view.to_svg().replace("<svg ", '<svg class="wb-static" ', 1)
    assert base64.b64decode(first["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
    assert first["text/plain"] == f"picture of {view!r}"
    assert VIEW in second and "image/svg+xml" not in second and second["text/plain"] == repr(view)
    assert first == _published(view)[0]   # the same picture every time (nbval compares it)


def test_the_live_view_hides_its_picture_by_css():
    # the rule: a picture output right before an output holding a live view is hidden
    assert ':has(img[src*="wb-static"]):has(+ .jp-OutputArea-child .wb-live)' in STATIC_CSS
    from widgets.canvas import GridCanvas, LiveMark

    assert GridCanvas._css == STATIC_CSS and LiveMark._css == STATIC_CSS and MMAView._css == STATIC_CSS
    for name in ("grid.js", "atoms_view.js"):
        assert "wb-live" in (REPO / "widgets" / name).read_text()


def test_save_that_raises_leaves_no_file(tmp_path):
    big = LayoutView(wb.make_layout((256, 256)))
    with pytest.raises(ValueError, match="at most 16384 cells for TikZ"):
        big.save(tmp_path / "big.tex")
    assert not (tmp_path / "big.tex").exists()
    assert [p.name for p in tmp_path.iterdir()] == []   # no temporary file left either
    (tmp_path / "kept.tex").write_text("old")
    with pytest.raises(ValueError):
        big.save(tmp_path / "kept.tex")
    assert (tmp_path / "kept.tex").read_text() == "old"   # an existing file is not truncated
    small = LayoutView(wb.make_layout((4, 4)))
    small.save(tmp_path / "kept.tex")
    assert (tmp_path / "kept.tex").read_text() == small.to_tikz()
    small.save(tmp_path / "s.png")
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"


NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_stored_notebooks_hold_pictures_and_open_unmodified(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        outs = cell.get("outputs", [])
        for a, b in zip(outs, outs[1:]):   # JupyterLab merges these on load: the notebook would be modified
            assert not (a["output_type"] == b["output_type"] == "stream" and a["name"] == b["name"]), cell["source"]
        for i, o in enumerate(outs):
            if VIEW in o.get("data", {}):
                assert o["data"][VIEW]["model_id"] == "", (path.name, "a widget output keeps its model id")
                pic = outs[i - 1].get("data", {}) if i else {}
                assert {"image/svg+xml", "image/png"} <= set(pic), (path.name, cell["source"])
        assert "execution" not in cell.get("metadata", {})
    assert "widgets" not in nb["metadata"]


def test_readme_names_no_invented_binder_url():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "OWNER/REPO" not in readme and "mybinder.org/v2/gh/<owner>/<repository>/HEAD" in readme


def test_the_tours_cost_chart_says_what_it_draws():
    """The 00_tour chart: the file it draws in its title and print-out, a log axis when one bar dwarfs the rest,
    and the comparisons it states read from that file (no "about half" where the file says 0.73 vs 0.77 us)."""
    nb = json.loads((REPO / "notebooks" / "00_tour.ipynb").read_text(encoding="utf-8"))
    i = next(k for k, c in enumerate(nb["cells"]) if "plot_overhead(rows" in "".join(c["source"]))
    out = "".join("".join(o.get("text", "")) for o in nb["cells"][i]["outputs"] if o["output_type"] == "stream")
    shown = out.splitlines()[0].split(":", 1)[0]
    assert (REPO / "benchmarks" / "results" / shown).is_file(), out[:200]   # the file it names is a committed file
    lab = json.loads((REPO / "benchmarks" / "results" / shown).read_text())
    assert "x the workbench's" in out   # the comparison lines, computed from the file
    prose = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "about half" not in prose and "committed CPU result" not in prose
    assert any(o.get("data", {}).get("image/png") for o in nb["cells"][i]["outputs"])   # the chart itself
    # the chart of that file is on a log axis (a 93,542 us bar next to 5 us ones), titled with the file's name
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from widgets import plot_overhead

    suite = lab["suites"]["launch" if "launch" in lab["suites"] else "convert"]
    key = "4" if "launch" in lab["suites"] else "torch"
    rows = [{"name": p, "us": v[key]["median_us"]} for p, v in suite["paths"].items() if "median_us" in v.get(key, {})]
    ax = plot_overhead(rows, title=shown)
    vals = [r["us"] for r in rows]
    assert ax.get_xscale() == ("log" if max(vals) > 30 * min(vals) else "linear")
    assert plot_overhead({"a": 1.0, "b": 2.0}).get_xscale() == "linear"
    assert plot_overhead({"a": 1.0, "b": 93542.0}).get_xscale() == "log"


def test_tv_view_of_a_whole_atom_points_at_tile_and_the_atoms_views():
    mma = wb.make_tiled_mma(wb.mma_atom("SM80_16x8x16_F32F16F16F32_TN"), wb.make_layout((2, 2, 1)), (32, 32, 16))
    with pytest.raises(TypeError, match=r"got a TiledMMA: draw it with MMAView\(x\).*TVLayoutView\(x.tv_layout_C_tiled, tile=\(M, N\)\)"):
        TVLayoutView(mma)
    cp = wb.make_tiled_copy_A(wb.copy_atom("SM75_U32x4_LDSM_N", wb.Float16), mma)
    with pytest.raises(TypeError, match=r"got a TiledCopy: draw it with CopyView\(x\)"):
        TVLayoutView(cp)
    with pytest.raises(TypeError, match=r"Expected tile= with the TV layout.*tile=\(8, 8\).*but got None"):
        TVLayoutView(wb.Layout(((8, 4), 2), ((1, 16), 8)))
    TVLayoutView(mma.tv_layout_C_tiled, tile=(32, 32))   # what the message says works


def test_rank1_layouts_name_their_one_column():
    from widgets.grid import RANK1_COLUMNS

    assert LayoutView("8:2").canvas.col_title == RANK1_COLUMNS == "one (a rank-1 layout)"
    v = ExplainView(wb.logical_divide, "100:1", 32)   # its steps B*, (B, B*) ... include rank-1 layouts
    rank1 = [c for c in v.panels if hasattr(c, "col_title") and c.col_title == RANK1_COLUMNS]
    assert rank1 and not any(getattr(c, "col_title", "") == "1:0" for c in v.panels)
    assert "columns 1:0" not in v.to_svg()


def test_colour_by_bank_and_chunk_shows_the_swizzle():
    smem = wb.make_layout((8, 64), stride=(64, 1))
    sw = wb.composition(wb.Swizzle(3, 3, 3), smem)
    plain = LayoutView(smem, color_by="chunk", element_type=wb.Float16).grid.colors.reshape(8, 64)
    swz = LayoutView(sw, color_by="chunk", element_type=wb.Float16).grid.colors.reshape(8, 64)
    assert plain[:, ::8].tolist() == [list(range(8))] * 8               # every row: chunks 0..7 in order
    assert swz[:, ::8].tolist() == [[c ^ r for c in range(8)] for r in range(8)]   # Swizzle<3,3,3>: chunk ^ row
    banks = LayoutView(smem, color_by="bank", element_type=wb.Float16)
    assert banks.grid.colors.reshape(8, 64)[0, :8].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]   # two halves a bank
    assert banks.describe(1, 8) == "index 65  coordinate (1,8)  offset 72  bank 4  chunk 1"
    assert banks.canvas.legend["label"] == "colour: shared-memory bank (16-bit elements)"
    with pytest.raises(ValueError, match="Expected element_type="):
        LayoutView(smem, color_by="bank")
    mma = wb.make_tiled_mma(wb.mma_atom("SM80_16x8x16_F32F16F16F32_TN"), wb.make_layout((2, 2, 1)), (32, 32, 64))
    cp = wb.make_tiled_copy_A(wb.copy_atom("SM75_U32x4_LDSM_N", wb.Float16), mma)
    view = CopyView(cp, wb.make_layout((32, 64), stride=(64, 1)), color_by="chunk", thread=0)
    names = [p["name"] for p in view.panels]
    assert names == ["src", "dst", "smem", "swizzled"]
    import numpy as np

    before, after = (np.asarray(view.panels[k]["fill"]).reshape(32, 64) for k in (2, 3))
    assert before[:8, ::8].tolist() == [list(range(8))] * 8
    assert after[:8, ::8].tolist() == [[c ^ r for c in range(8)] for r in range(8)]
    # thread 0's 8 rows of one ldmatrix phase: all in chunk 0 before (8-way), 8 different chunks after
    svg = view.to_svg()
    assert svg.startswith("<svg") and 'viewBox="0 0 ' in svg.split(">", 1)[0]
    with pytest.raises(ValueError, match="expected smem_layout="):
        CopyView(cp, color_by="bank")
