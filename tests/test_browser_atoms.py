"""A real browser drives MMAView and CopyView in JupyterLab.

Reuses the JupyterLab + Chromium fixture of test_browser_widgets.py (imported, not copied); writes
its own notebook into the served root and runs it cell by cell:

* SM80 TiledMMA: click a C cell to select its thread; the A, B and C canvases outline exactly that
  thread's cells (their ``data-selected-cells`` and the pixels under one outline); hover an A cell.
* CopyView of an LDSM copy over a row-major shared-memory tile: the read-out gives the 8-way conflict and
  the swizzle that removes it.
* SM90 64x256x16 SS GMMA: all three panels are drawn at C's cell size, a hover on C goes to the kernel and
  back (the cell's observer answers in the read-out), and the A and B panels say they are read from shared
  memory by the whole warpgroup (selecting a thread outlines none of their cells).
* Every view fits the output area of a 1400 px window with the file browser open: the panels open scaled
  so that the widest fits ("fit"), "1:1" draws them at full size; clicks and hovers land on the cell under
  the pointer at any scale.

The kernel's view of the hovers and selections is printed by read-back cells and checked at the end; before
each read-back the test waits for the kernel's own answer to the last hover to appear in the page (the
cell's observer writes it into the read-out), so the read-back never races the hover's sync.  How long the
views take is printed, never asserted: under load a bound would reject good work.
"""

from __future__ import annotations

import ast
import json
import os
import re
import time

import pytest
from test_browser_widgets import CHROMIUM, FLAGS, REPO, _run_cell, lab  # noqa: F401 - lab is the fixture

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CELL_VIEW = """\
import sys
sys.path.insert(0, {repo!r})
import workbench as wb
from workbench.atoms import copy_atom, make_tiled_copy_A, make_tiled_mma, mma_atom
from widgets.atoms_view import CopyView, MMAView
seen = []
v = MMAView(make_tiled_mma(mma_atom("SM80_16x8x16_F32F16F16F32_TN"), wb.make_layout((2, 2, 1)), (32, 32, 16)))
def echo(ch):   # the kernel's answer to a hover, shown in the page: what the test waits for
    if ch["new"]:
        seen.append(dict(ch["new"]))
        v.readout = v.readout[:1] + [f"kernel saw {{ch['new']['panel']}}({{ch['new']['row']}},{{ch['new']['col']}})"]
v.observe(echo, "hover")
v"""

CELL_READBACK = """\
print("KERNEL", {"thread": v.thread, "hover": seen[-1] if seen else None,
                 "cells": [sum(1 for t in p["thr"] if t == v.thread) for p in v.panels]})"""

CELL_COPY = """\
mma64 = make_tiled_mma(mma_atom("SM80_16x8x16_F32F16F16F32_TN"), wb.make_layout((2, 2, 1)), (32, 32, 64))
CopyView(make_tiled_copy_A(copy_atom("SM75_U32x4_LDSM_N", wb.Float16), mma64), wb.make_layout((32, 64), stride=(64, 1)))"""

# the observer answers a hover from the kernel: the read-out changing in the page is the round trip
CELL_GMMA = """\
g = MMAView(wb.make_tiled_mma(wb.mma_atom("SM90_64x256x16_F32F16F16_SS")))
g_seen = []
def answer(ch):
    if ch["new"]:
        g_seen.append(dict(ch["new"]))
        g.readout = g.readout[:1] + [f"kernel saw {ch['new']['panel']}({ch['new']['row']},{ch['new']['col']})"]
g.observe(answer, "hover")
g"""

CELL_GMMA_READBACK = """\
print("KERNEL", {"thread": g.thread, "hover": g_seen[-1] if g_seen else None,
                 "c_cells": sum(1 for t in g.panels[2]["thr"] if t == g.thread)})"""

def _cell(page, i):
    return page.locator(".jp-Notebook .jp-Cell").nth(i)


def _readback(page, i):
    _run_cell(page, i)
    out = _cell(page, i).locator(".jp-OutputArea-output")
    from playwright.sync_api import expect

    expect(out).to_contain_text("KERNEL", timeout=60_000)
    return ast.literal_eval(out.inner_text().split("KERNEL", 1)[1].strip())


def _at(panel, rows, cols, r, c):
    """The position (relative to the canvas box) of cell (r, c)'s centre at the scale the panel is shown."""
    box = panel.bounding_box()
    w, h = (box["width"] - 2) / cols, (box["height"] - 2) / rows   # 1 px border each side
    return {"x": 1 + (c + 0.5) * w, "y": 1 + (r + 0.5) * h}


def test_atoms_views_in_jupyterlab(lab, tmp_path):  # noqa: F811 - the imported fixture
    from playwright.sync_api import expect, sync_playwright

    def cell(src):
        return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}

    nb = {"cells": [cell(CELL_VIEW.format(repo=str(REPO))), cell(CELL_READBACK), cell(CELL_COPY),
                    cell(CELL_GMMA), cell(CELL_GMMA_READBACK)],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "root" / "atoms.ipynb").write_text(json.dumps(nb))
    base, token = lab
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab/tree/atoms.ipynb?token={token}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            page.wait_for_function(
                "() => { const s = window.jupyterapp?.shell?.currentWidget?.sessionContext;"
                " return s && s.session && s.session.kernel && s.session.kernel.status === 'idle'; }",
                timeout=90_000)
            # -- SM80: select a thread in C, see its cells outlined in A, B and C -----------------------
            _run_cell(page, 0)
            view = _cell(page, 0).locator(".wb-atoms")
            c_panel = view.locator("canvas[data-panel='C']")
            c_panel.wait_for(state="visible", timeout=90_000)
            page.evaluate("() => window.jupyterapp.shell.activateById('filebrowser')")   # a 1400 px window, browser open
            # 128 threads whose cells would not fit one screen: the view opens as an overview by warp
            expect(view).to_have_attribute("data-mode", "warps")
            # the panels open within the output area, none cut off
            # (waited for: the view refits when the output area narrows as the file browser opens)
            page.wait_for_function("""v => { const area = v.closest('.jp-OutputArea-output').getBoundingClientRect();
                return [...v.querySelectorAll('canvas')].map(c => c.getBoundingClientRect())
                    .every(b => b.left >= area.left - 1 && b.right <= area.right + 1); }""", arg=view.element_handle())
            cs = int(view.locator("canvas[data-panel='A']").get_attribute("data-cell"))
            # C(1, 2) belongs to thread 5 (lane 5 of the first atom: row 5 // 4, columns 2 * (5 % 4) + {0, 1})
            c_panel.click(position=_at(c_panel, 32, 32, 1, 2))
            for name in "ABC":
                expect(view.locator(f"canvas[data-panel='{name}']")).to_have_attribute("data-selected-cells", "8")
            a_panel = view.locator("canvas[data-panel='A']")
            # A(9, 3) is thread 5's: its outline (2 px, black) runs down the cell's left edge
            px = a_panel.evaluate(f"c => Array.from(c.getContext('2d').getImageData({3 * cs + 1}, {9 * cs + cs // 2}, 1, 1).data)")
            assert px[:3] == [0, 0, 0], px
            a_panel.hover(position=_at(a_panel, 32, 16, 9, 3))
            expect(view.locator(".wb-atoms-status")).to_have_text("A: (T5, V3) -> (M=9, K=3)")
            expect(view.locator(".wb-atoms-readout")).to_contain_text("kernel saw A(9,3)")   # synced: read back now
            # "every cell" draws the panels with T#V# labels at 30 px a cell; clicks still land on their cells
            view.locator("button.wb-level").click()
            expect(view).to_have_attribute("data-mode", "cells")
            expect(a_panel).to_have_attribute("data-cell", "30")
            assert a_panel.bounding_box()["width"] == 16 * 30 + 2
            if os.environ.get("WB_SCREENSHOT"):
                page.screenshot(path=os.environ["WB_SCREENSHOT"], full_page=True)
            state = _readback(page, 1)
            assert state["thread"] == 5 and state["cells"] == [8, 8, 8]
            assert state["hover"] == {"panel": "A", "thread": 5, "value": 3, "row": 9, "col": 3}

            # -- CopyView: bank conflicts before and after the swizzle ---------------------------------
            _run_cell(page, 2)
            readout = _cell(page, 2).locator(".wb-atoms-readout")
            expect(readout).to_contain_text("smem (32,64):(64,1): 512 wavefronts (ideal 64), worst 8-way")
            expect(readout).to_contain_text("swizzled S<3,3,3> o 0 o (32,64):(64,1): 64 wavefronts (ideal 64), worst 1-way")

            # -- SM90 64x256 GMMA: drawn, hover round trip, shared-memory operands ----------------------
            t0 = time.monotonic()
            _run_cell(page, 3)
            gview = _cell(page, 3).locator(".wb-atoms")
            gc = gview.locator("canvas[data-panel='C']")
            expect(gc).to_have_attribute("data-drawn", re.compile(r"[1-9]"), timeout=90_000)
            drawn_s = time.monotonic() - t0   # printed, not asserted
            cs = int(gc.get_attribute("data-cell"))
            assert gc.evaluate("c => [c.width, c.height]") == [256 * cs, 64 * cs]
            # one cell size for all panels: A (64 x 16) and B (256 x 16) at C's, so their lengths compare
            for name, (rows, cols) in (("A", (64, 16)), ("B", (256, 16))):
                size = gview.locator(f"canvas[data-panel='{name}']").evaluate("c => [c.width, c.height]")
                assert size == [cols * cs, rows * cs], (name, size)
            notes = gview.locator(".wb-atoms-note")
            expect(notes).to_have_count(2)
            expect(notes.nth(0)).to_contain_text("A from shared memory: read by all 128 threads of the warpgroup")
            expect(notes.nth(1)).to_contain_text("B from shared memory")
            t0 = time.monotonic()
            gc.hover(position=_at(gc, 64, 256, 3, 5))
            expect(gview.locator(".wb-atoms-readout")).to_contain_text("kernel saw C(3,5)", timeout=30_000)
            hover_s = time.monotonic() - t0
            gc.click(position=_at(gc, 64, 256, 3, 5))
            expect(gc).not_to_have_attribute("data-selected-cells", "0")
            c_outlined = int(gc.get_attribute("data-selected-cells"))
            for name in "AB":   # shared operands: nothing to outline, the note says why
                expect(gview.locator(f"canvas[data-panel='{name}']")).to_have_attribute("data-selected-cells", "0")
            ga = gview.locator("canvas[data-panel='A']")
            ga.hover(position=_at(ga, 64, 16, 2, 1))
            expect(gview.locator(".wb-atoms-status")).to_have_text(
                "A: shared memory, read by T0..T127 together -> (M=2, K=1)")
            expect(gview.locator(".wb-atoms-readout")).to_contain_text("kernel saw A(2,1)")   # synced: read back now
            state = _readback(page, 4)
            print(f"GMMA 64x256: drawn {drawn_s:.2f} s after the cell ran, hover round trip {hover_s:.3f} s")
        finally:
            browser.close()
    assert state["hover"]["panel"] == "A" and state["thread"] >= 0
    assert state["c_cells"] == c_outlined   # the canvas outlined every C cell of the selected thread


# -- the sizes of real kernels: notebook 10's rung-2 MMA and copies, notebook 11's Hopper MMA and TMA box -------
CELL_KERNELS = """\
import sys
sys.path.insert(0, {repo!r})
import workbench as wb
from IPython.display import display
from workbench.kernels import gemm_ladder as G
from workbench.kernels.gemm_hopper import HopperGemm
from widgets import CopyView, LayoutView, MMAView, TmaBoxView
rungs = G.ladder()
r2, r3 = rungs[1], rungs[2]
cfg = HopperGemm(bm=128, bn=64, bk=64, stages=2)
display(MMAView(r2.mma, thread=37), CopyView(r3.copies["g2s"], thread=0),
        CopyView(r3.copies["A"], r3.smem["A"](None, None, 0), thread=0))
hv = MMAView(cfg.mma, thread=130)
hv"""

CELL_BOX = """\
import numpy as np
box = LayoutView(cfg.box["A"])
a, b = np.zeros((130, 136), np.float16), np.zeros((70, 136), np.float16)
display(box, TmaBoxView(cfg.tma(a, b)[0]))"""

# every live tiled view's height, its level of detail and the label sizes it draws at (the page's own numbers)
TILED = """() => [...document.querySelectorAll('.wb-atoms')].map(v => ({
  height: v.getBoundingClientRect().height, mode: v.dataset.mode,
  labels: [...v.querySelectorAll('canvas')].filter(c => c.offsetParent).map(c => +c.dataset.labelPx)}))"""


def test_views_at_kernel_sizes(lab, tmp_path):  # noqa: F811 - the imported fixture
    """At 1400x900: the tiled views open within one screen height with labels of at least 9 px (an overview by
    warp and one warp's cells), the Hopper MMAView's read-out stays in the window while a cell deep in C is
    hovered, and that cell is outlined; notebook 11's swizzled box and TMA box open coloured by 16-byte chunk."""
    from playwright.sync_api import expect, sync_playwright

    def cell(src):
        return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}

    nb = {"cells": [cell(CELL_KERNELS.format(repo=str(REPO))), cell(CELL_BOX)],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "root" / "kernels.ipynb").write_text(json.dumps(nb))
    base, token = lab
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab/tree/kernels.ipynb?token={token}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            page.wait_for_function(
                "() => { const s = window.jupyterapp?.shell?.currentWidget?.sessionContext;"
                " return s && s.session && s.session.kernel && s.session.kernel.status === 'idle'; }",
                timeout=90_000)
            _run_cell(page, 0)
            views = _cell(page, 0).locator(".wb-atoms")
            expect(views).to_have_count(4, timeout=120_000)
            hv = views.nth(3)
            hc = hv.locator("canvas[data-panel='C']")
            expect(hc).to_have_attribute("data-drawn", re.compile(r"[1-9]"), timeout=90_000)
            page.wait_for_function(TILED.replace("() =>", "() => (") + ").every(v => v.mode)")
            tiled = page.evaluate(TILED)
            print("tiled views (height px, level, label px):", [(round(v["height"]), v["mode"], v["labels"]) for v in tiled])
            for v in tiled:   # one screen at the default zoom, every drawn label readable
                assert v["height"] <= 900, v
                assert all(px >= 9 for px in v["labels"] if px), v
                assert any(px >= 9 for px in v["labels"]), v
            # hover a cell deep in the Hopper C: the read-out is in the window and the cell is outlined
            hc.scroll_into_view_if_needed()
            page.mouse.wheel(0, 300)   # the view's top scrolls away, as in a read notebook
            page.wait_for_function("c => c.getBoundingClientRect().bottom > 0", arg=hc.element_handle())
            hc.hover(position=_at(hc, 128, 64, 120, 60))
            expect(hc).to_have_attribute("data-hovered", "120,60")
            tip = page.locator(".wb-atoms-tip").filter(has_text="C: (T").first
            expect(tip).to_be_visible()
            expect(tip).to_contain_text("-> (M=120, N=60)")
            box = tip.bounding_box()
            print(f"Hopper C(120, 60) hovered: read-out at y = {box['y']:.0f}..{box['y'] + box['height']:.0f} px")
            assert 0 <= box["y"] and box["y"] + box["height"] <= 900 and 0 <= box["x"] and box["x"] + box["width"] <= 1400
            # the outline is drawn: the hovered cell's edge is red on the canvas
            cs = float(hc.get_attribute("data-cell"))
            red = hc.evaluate(f"c => Array.from(c.getContext('2d').getImageData({60 * cs + cs / 2}, "
                              f"{max(0, 120 * cs - max(0, (8 - cs) / 2)) + 1}, 1, 1).data)")
            assert red[0] > 180 and red[1] < 80, red
            # click it: the detail opens that warp's cells at the readable size
            hc.click(position=_at(hc, 128, 64, 120, 60))
            det = hv.locator("canvas.wb-atoms-detail-canvas")
            expect(det).to_have_attribute("data-detail", "C")
            expect(hv.locator(".wb-atoms-detail-title")).to_contain_text("C, warp 7 (T224..T255)")
            assert float(det.get_attribute("data-label-px")) >= 9
            # notebook 11's box: coloured by 16-byte chunk when it opens, every one of its 64 columns (8 chunks) in
            # the width at cells of about 11 px: the 8x8 chunk pattern is one glance (the heat map of 25 % was stripes)
            _run_cell(page, 1)
            grids = _cell(page, 1).locator(".wb-grid")
            expect(grids).to_have_count(2, timeout=90_000)
            for k in range(2):
                expect(grids.nth(k).locator(".wb-legend")).to_contain_text("16-byte chunk")
                c = grids.nth(k).locator("canvas.wb-canvas")
                expect(c).to_have_attribute("data-lod", "colour")
                geo = c.evaluate("c => ({...c.dataset, width: c.width / (window.devicePixelRatio || 1)})")
                assert float(geo["cellH"]) >= 10 and float(geo["left"]) + 64 * float(geo["cellW"]) <= geo["width"] + 1, geo
                print(f"box {k}: cells {float(geo['cellW']):.1f} px, zoom {float(geo['zoom']):.3f}")
            shots = os.environ.get("WB_SCREENSHOT_DIR")
            if shots:   # the pictures under docs/ (live views at their default zoom)
                for b in page.locator(".jp-toast-button", has_text="No").all():   # JupyterLab's news question
                    b.click()
                for name, loc in (("nb10_mma_rung2_live.png", views.nth(0)), ("nb10_copy_ldsm_live.png", views.nth(2)),
                                  ("nb11_mma_hopper_live.png", hv), ("nb11_box_live.png", grids.nth(0))):
                    loc.scroll_into_view_if_needed()
                    loc.screenshot(path=os.path.join(shots, name))
        finally:
            browser.close()
