"""A real browser drives a LayoutView in JupyterLab: hover a cell, click it, move a control.

The test starts JupyterLab on a free 127.0.0.1 port with a token in a temporary root holding a
generated notebook, opens it in Debian's Chromium through Playwright, runs the first cell, and
then checks both sides: what the page shows (the read-out under the widget) and what the kernel
reads back afterwards (the hover and selection the browser sent, the colour control's value).
The server is always killed.  Skips cleanly when Chromium or Playwright is missing.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("ipywidgets", reason="the widgets need the Jupyter stack (make test installs it)")
pytest.importorskip("anywidget", reason="the widgets need anywidget (make test installs it)")

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]
REPO = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CELL_VIEW = """\
import sys
sys.path.insert(0, {repo!r})
import workbench as wb
from IPython.display import display
from widgets.layout_view import LayoutView
from widgets.tv_view import TVLayoutView
seen = []
# broadcast along the first sub-mode of the columns: (1,(0,1)) and (1,(1,1)) share offset 9
v = LayoutView(wb.make_layout((4, (2, 3)), stride=(1, (0, 8))))
v.canvas.observe(lambda ch: seen.append(tuple(ch["new"])) if ch["new"] else None, "hover")
display(v)
tvv = TVLayoutView(wb.Layout(((8, 4), 2), ((1, 16), 8)), (8, 8))
tvv"""

CELL_READBACK = """\
h = seen[-1] if seen else None
print("KERNEL", {"hover": h, "text": v.describe(*h) if h else "",
                 "selected": v.selected_offset, "cells": v.selected_cells, "color_by": v.color_by,
                 "row1_colors": v.grid.colors[6:12].tolist(), "thread": tvv.thread})"""


CELL_LARGE = """\
import sys
sys.path.insert(0, {repo!r})
import numpy as np
import workbench as wb
from IPython.display import display
from widgets import AlgebraPlayground, LayoutView, MarkingExplorer
big = LayoutView(wb.make_layout((1024, 1024)))
vec = LayoutView(wb.make_layout((4, 4096)))
display(big, vec)"""

# grids from one cell to thousands, narrow ones with long mode strings, a long vector, dynamic modes, and the tools
CELL_SIZES = """\
t = wb.from_dlpack(np.zeros((3, 5), np.float32)).mark_layout_dynamic()
for L in ["1:0", "(2,(2,2)):(1,(65536,1048576))", "(1,1000):(1,1)", "((2,2),(2,2)):((1,4),(2,8))", "4096:1"]:
    display(LayoutView(wb.parse_layout(L)))
display(LayoutView(t), AlgebraPlayground("(8,4):(1,8)", "(4,2):(2,16)", "logical_divide"),
        MarkingExplorer(np.zeros((4, 3), np.float32)))
from widgets import ExplainView   # the README's example: 8 steps, the last two of 12288 cells
display(ExplainView(wb.explain(wb.zipped_divide, wb.make_layout((100, 90)), (32, 32))))"""


def _notebook(path: Path, sources: list | None = None) -> None:
    def cell(src):
        return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}

    if sources is None:
        sources = [CELL_VIEW.format(repo=str(REPO)), CELL_READBACK]
    nb = {
        "cells": [cell(src) for src in sources],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, timeout: float, proc: subprocess.Popen) -> None:
    """Poll ``url`` until it answers 200; between tries, wait on the server process itself (a server that
    exits ends the wait at once)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        try:
            proc.wait(timeout=0.3)
        except subprocess.TimeoutExpired:
            continue
        raise RuntimeError(f"JupyterLab exited early with code {proc.returncode}")
    raise TimeoutError(f"JupyterLab did not answer {url} within {timeout} s")


@pytest.fixture
def lab(tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api")
    root = tmp_path / "root"
    root.mkdir()
    _notebook(root / "view.ipynb")
    _notebook(root / "large.ipynb", [CELL_LARGE.format(repo=str(REPO)), CELL_SIZES])
    port, token = _free_port(), "wbtest" + os.urandom(8).hex()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), PYTHONPATH=str(REPO))
    log = open(tmp_path / "lab.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", "--ServerApp.allow_root=True", "--LabApp.expose_app_in_browser=True",
         f"--ServerApp.root_dir={root}", f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
         f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--NotebookNotary.db_file=:memory:"],   # trust given in one test (or run) is not remembered by the next
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        _wait_http(f"http://127.0.0.1:{port}/api/status?token={token}", 90, proc)
        yield f"http://127.0.0.1:{port}", token
    except Exception:
        log.flush()
        print((tmp_path / "lab.log").read_text(errors="replace")[-4000:])
        raise
    finally:
        # the kernel runs in the server's session: end the whole group, then make sure
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        log.close()
        shutil.rmtree(root, ignore_errors=True)


def _run_cell(page, index: int) -> None:
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def test_layout_view_in_jupyterlab(lab):
    from playwright.sync_api import expect, sync_playwright

    base, token = lab
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab/tree/view.ipynb?token={token}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            # the kernel must be up before typing: JupyterLab shows its state in the toolbar
            page.wait_for_function(
                "() => { const s = window.jupyterapp?.shell?.currentWidget?.sessionContext;"
                " return s && s.session && s.session.kernel && s.session.kernel.status === 'idle'; }",
                timeout=90_000)
            _run_cell(page, 0)
            canvas = page.locator(".wb-grid canvas.wb-canvas").first
            canvas.wait_for(state="visible", timeout=90_000)
            expect(page.locator(".wb-grid .wb-title").first).to_have_text("(4,(2,3)):(1,(0,8))")

            geo = canvas.evaluate("c => ({...c.dataset})")
            cw, ch, left, top = (float(geo[k]) for k in ("cellW", "cellH", "left", "top"))
            assert (int(geo["rows"]), int(geo["cols"])) == (4, 6)
            row, col = 1, 2  # coordinate (1,(0,1)) -> 1*1 + 0*0 + 1*8 = 9
            canvas.hover(position={"x": left + col * cw + cw / 2, "y": top + row * ch + ch / 2})
            readout = page.locator(".wb-grid .wb-readout").first
            expect(readout).to_have_text("index 9  coordinate (1,(0,1))  offset 9")

            canvas.click(position={"x": left + col * cw + cw / 2, "y": top + row * ch + ch / 2})
            expect(readout).to_contain_text("selected offset 9: 2 cells")

            # move a control: colour by row instead of offset (the kernel's legend for it shows: synced)
            page.locator(".widget-dropdown select").first.select_option("row")
            expect(page.locator(".wb-legend-title").first).to_have_text("colour: row index")

            # and the TV view's thread slider, from the keyboard: -1 (none) -> 2
            handle = page.locator(".widget-slider .noUi-handle").first
            handle.focus()
            for _ in range(3):
                page.keyboard.press("ArrowRight")
            expect(page.locator(".wb-tv-readout")).to_contain_text("T2: V0@(2, 0)->2, V1@(2, 1)->10")
            expect(page.locator(".wb-grid .wb-readout").nth(1)).to_contain_text("selected thread 2: 2 cells")

            if os.environ.get("WB_SCREENSHOT"):  # for looking at the page while developing
                page.screenshot(path=os.environ["WB_SCREENSHOT"], full_page=True)
            _run_cell(page, 1)
            out = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output")
            expect(out).to_contain_text("KERNEL", timeout=60_000)
            text = out.inner_text()
            # colour by mode: the second drop-down appears, the legend names the sub-mode
            view = page.locator(".jp-Notebook .jp-Cell").nth(0)
            modes = view.locator(".widget-dropdown select").nth(1)
            assert not modes.is_visible()
            view.locator(".widget-dropdown select").first.select_option("mode")
            expect(modes).to_be_visible()
            expect(view.locator(".wb-legend-title").first).to_have_text("colour: coordinate in get<1,0>: 2:0")
            modes.select_option(label="get<1,1>: 3:8")
            expect(view.locator(".wb-legend-title").first).to_have_text("colour: coordinate in get<1,1>: 3:8")
        finally:
            browser.close()
    state = ast.literal_eval(text.split("KERNEL", 1)[1].strip())  # the dict the kernel printed
    assert state["hover"] == (1, 2)
    assert state["text"] == "index 9  coordinate (1,(0,1))  offset 9"
    assert state["selected"] == 9
    assert state["cells"] == [(1, 2), (1, 3)]
    assert state["color_by"] == "row"
    assert state["row1_colors"] == [1] * 6
    assert state["thread"] == 2  # row 1 -> palette entry 1 everywhere in that row


# -- large grids, zoom, tiles on demand, and text that fits -------------------------------------
INK = """(c) => {   // share of non-white pixels in the grid area of a view's canvas
  const d = c.dataset, g = c.getContext('2d'), r = window.devicePixelRatio || 1;
  const x = Math.round(+d.left * r) + 2, y = Math.round(+d.top * r) + 2;
  const gw = Math.min(c.width / r - +d.left, +d.cols * +d.cellW - +d.ox), gh = Math.min(c.height / r - +d.top, +d.rows * +d.cellH - +d.oy);
  const w = Math.max(1, Math.floor(gw * r) - 4), h = Math.max(1, Math.floor(gh * r) - 4);
  const px = g.getImageData(x, y, w, h).data;
  let ink = 0;
  for (let i = 0; i < px.length; i += 4) if (px[i] < 245 || px[i + 1] < 245 || px[i + 2] < 245) ink++;
  return ink / (w * h);
}"""

# every caption block: no horizontal overflow, inside the view, and below the block before it; the same for
# what sits in the body beside the grid (the minimap and the legend): inside the view, the minimap at its own
# small size and the legend right under it, never pushed down by a stretched minimap
FIT = """(root) => {
  const bad = [], rb = root.getBoundingClientRect();
  const area = root.closest('.jp-OutputArea-output').getBoundingClientRect();
  if (rb.right > area.right + 1 || rb.left < area.left - 1) bad.push('the view leaves the output area');
  const inside = (el, b) => {
    if (el.scrollWidth > el.clientWidth + 1) bad.push(el.className + ' overflows: ' + el.textContent.slice(0, 60));
    if (b.right > rb.right + 1 || b.left < rb.left - 1) bad.push(el.className + ' leaves the view');
  };
  let prev = null;
  for (const el of root.querySelectorAll(':scope > div')) {
    const b = el.getBoundingClientRect();
    if (b.height === 0) continue;
    inside(el, b);
    if (prev && b.top < prev.bottom - 0.5) bad.push(el.className + ' overlaps ' + prev.className);
    prev = b;
  }
  for (const el of root.querySelectorAll('.wb-body > *, .wb-side > *')) {
    const b = el.getBoundingClientRect();
    if (b.height === 0) continue;
    inside(el, b);
    if (b.bottom > rb.bottom + 1) bad.push(el.className + ' leaves the view at the bottom');
  }
  const mini = root.querySelector('.wb-minimap'), legend = root.querySelector('.wb-legend');
  const mb = mini.getBoundingClientRect(), lb = legend.getBoundingClientRect();
  if (mb.height > 0 && (mb.width > 170 || mb.height > 170)) bad.push(`minimap stretched to ${mb.width}x${mb.height}`);
  if (mb.height > 0 && lb.top > mb.bottom + 10) bad.push(`legend ${lb.top - mb.bottom}px below the minimap`);
  return bad;
}"""

# the toolbar's parts apart (the zoom and the hint on one line with a gap; the zoom's level separated by " · ");
# captions that wrap at the output area's width (not at a narrow grid's) and between words: a word is split
# over two lines only when it is longer than its line
TEXT = r"""(root) => {
  let words = 0, bars = 0;
  const bad = [], area = root.closest('.jp-OutputArea-output').getBoundingClientRect();
  const z = root.querySelector('.wb-zoom'), h = root.querySelector('.wb-hint');
  if (z && h && z.offsetParent && h.offsetParent) {
    const zb = z.getBoundingClientRect(), hb = h.getBoundingClientRect();
    bars++;
    if (Math.abs(zb.top - hb.top) < 2 && hb.left - zb.right < 8) bad.push(`toolbar: the hint ${hb.left - zb.right}px after the zoom`);
    if (!/^zoom [0-9.]+% \u00b7 \S/.test(z.textContent)) bad.push('toolbar: ' + z.textContent);
  }
  for (const el of root.querySelectorAll('.wb-title, .wb-subtitle, .wb-notes, .wb-coltitle, .wb-rowtitle, .wb-readout')) {
    if (!el.offsetParent || !el.textContent.trim()) continue;
    const mw = parseFloat(getComputedStyle(el).maxWidth);
    if (mw < area.width - 40) bad.push(`${el.className} wraps at ${mw}px in an output of ${area.width}px`);
    const w = el.getBoundingClientRect().width;
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const re = /\S+/g;
      let m;
      while ((m = re.exec(n.data))) {
        const r = document.createRange();
        r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        words++;
        const rects = [...r.getClientRects()].filter((q) => q.width > 0);
        const lines = new Set(rects.map((q) => Math.round(q.top))).size;
        if (lines > 1 && rects.reduce((a, q) => a + q.width, 0) <= w) bad.push(`${el.className} breaks '${m[0].slice(0, 40)}' mid-word`);
      }
    }
  }
  return {bad, words, bars};
}"""


def _white_right_edge(png: bytes) -> bool:
    """True when the last 2 pixel columns of a screenshot are background (its first and last rows, which
    rounding may take from the neighbours, aside): no text is cut at the box's edge."""
    import io

    from PIL import Image

    im = Image.open(io.BytesIO(png)).convert("L")
    w, h = im.size
    return all(im.getpixel((x, y)) > 235 for x in range(max(0, w - 2), w) for y in range(1, h - 1))


def test_large_views_zoom_hover_and_text_fit(lab):
    from playwright.sync_api import expect, sync_playwright

    base, token = lab
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab/tree/large.ipynb?token={token}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            page.wait_for_function(
                "() => { const s = window.jupyterapp?.shell?.currentWidget?.sessionContext;"
                " return s && s.session && s.session.kernel && s.session.kernel.status === 'idle'; }",
                timeout=90_000)
            _run_cell(page, 0)
            views = page.locator(".jp-Cell").nth(0).locator(".wb-grid")
            expect(views).to_have_count(2, timeout=90_000)
            big, vec = views.nth(0), views.nth(1)
            bc, vc = big.locator("canvas.wb-canvas"), vec.locator("canvas.wb-canvas")
            # large layouts open fitted, aspect kept: the 1024x1024 grid is a square, drawn everywhere
            expect(bc).to_have_attribute("data-lod", re.compile("^heat map"))
            geo = bc.evaluate("c => ({...c.dataset})")
            assert float(geo["cellW"]) == float(geo["cellH"]) and float(geo["zoom"]) < 0.1
            assert bc.evaluate(INK) > 0.9 and vc.evaluate(INK) > 0.5
            # a long vector keeps a visible thickness: (4,4096) is 4 square cells of 40 px tall, scrolling along
            vgeo = vc.evaluate("c => ({...c.dataset})")
            assert float(vgeo["cellW"]) == float(vgeo["cellH"]) and 4 * float(vgeo["cellH"]) >= 40
            assert not big.locator("canvas.wb-minimap").is_visible()   # all of it is in view
            expect(big.locator(".wb-hint")).to_have_text("Ctrl+wheel zooms, drag pans")
            # the wheel scrolls the page, never the grid; Ctrl+wheel zooms
            scroller = page.locator(".jp-WindowedPanel-outer").first
            before = scroller.evaluate("e => e.scrollTop")
            bc.hover()
            page.mouse.wheel(0, 300)
            page.wait_for_function("([b]) => document.querySelector('.jp-WindowedPanel-outer').scrollTop !== b", arg=[before])
            assert float(bc.get_attribute("data-zoom")) == float(geo["zoom"]) and bc.get_attribute("data-oy") == geo["oy"]
            bc.scroll_into_view_if_needed()
            bc.hover()
            page.keyboard.down("Control")
            page.mouse.wheel(0, -100)
            page.keyboard.up("Control")
            page.wait_for_function("([z]) => +document.querySelector('.wb-grid canvas.wb-canvas').dataset.zoom > z",
                                   arg=[float(geo["zoom"])])
            for view in (big, vec):   # full size from here on: the minimap shows where the viewport is
                view.locator("button.wb-one").click()
            expect(bc).to_have_attribute("data-lod", "labels")
            expect(vc).to_have_attribute("data-zoom", "1")
            assert big.locator("canvas.wb-minimap").is_visible() and vec.locator("canvas.wb-minimap").is_visible()
            # hover the (4,4096) vector: the kernel's read-out for that cell
            geo = vc.evaluate("c => ({...c.dataset})")
            cw, ch, left, top, ox, oy = (float(geo[k]) for k in ("cellW", "cellH", "left", "top", "ox", "oy"))
            assert (int(geo["rows"]), int(geo["cols"])) == (4, 4096)
            x, y = left + 5.5 * cw, top + 2.5 * ch   # the sixth visible column (1:1 zoomed about the centre)
            r, c = int((y - top + oy) // ch), int((x - left + ox) // cw)
            vc.hover(position={"x": x, "y": y})
            expect(vec.locator(".wb-readout")).to_have_text(f"index {r + 4 * c}  coordinate ({r},{c})  offset {r + 4 * c}")
            # jump to the middle through the minimap: the kernel sends that window, labels come back
            mini = big.locator("canvas.wb-minimap")
            box = mini.bounding_box()
            mini.click(position={"x": box["width"] / 2, "y": box["height"] / 2})
            expect(bc).to_have_attribute("data-lod", "labels")
            geo = bc.evaluate("c => ({...c.dataset})")
            cw, ch, left, top, ox, oy = (float(geo[k]) for k in ("cellW", "cellH", "left", "top", "ox", "oy"))
            view = bc.bounding_box()
            # the viewport's centre is the grid's centre: the click maps by the minimap's displayed size
            fx = (ox + (view["width"] - left) / 2) / (1024 * cw)
            fy = (oy + (view["height"] - top) / 2) / (1024 * ch)
            assert abs(fx - 0.5) < 0.05 and abs(fy - 0.5) < 0.05, (fx, fy)
            x, y = left + 3.5 * cw, top + 2.5 * ch
            r, c = int((y - top + oy) // ch), int((x - left + ox) // cw)
            bc.hover(position={"x": x, "y": y})
            expect(big.locator(".wb-readout")).to_have_text(f"index {r + 1024 * c}  coordinate ({r},{c})  offset {r + 1024 * c}")
            # zoom out until cells are a pixel: an aggregated heat map, still drawn everywhere
            for _ in range(6):
                big.locator("button.wb-zoom-out").click()
            expect(bc).to_have_attribute("data-lod", re.compile("^heat map"))
            assert float(bc.get_attribute("data-zoom")) < 0.05 and bc.evaluate(INK) > 0.9
            big.locator("button.wb-one").click()
            expect(bc).to_have_attribute("data-zoom", "1")
            # the long vector: zoomed out far enough, the kernel answers with 2x2 (or coarser) block means
            for _ in range(3):
                vec.locator("button.wb-zoom-out").click()
            expect(vc).to_have_attribute("data-lod", re.compile("^heat map: each pixel block = mean of [248]x"))
            assert vc.evaluate(INK) > 0.9

            _run_cell(page, 1)
            sizes = page.locator(".jp-Cell").nth(1).locator(".wb-grid")
            expect(sizes).to_have_count(6 + 3 + 2 + 8, timeout=90_000)
            # the 4096:1 vector: its minimap (small, beside the grid) and its legend are on screen in the view
            longvec = sizes.nth(4)
            expect(longvec.locator(".wb-title")).to_have_text("4096:1")
            longvec.locator("button.wb-one").click()
            expect(longvec.locator("canvas.wb-canvas")).to_have_attribute("data-zoom", "1")
            for part in ("canvas.wb-minimap", ".wb-legend"):
                el = longvec.locator(part)
                el.scroll_into_view_if_needed()
                assert el.is_visible(), part
            vb, mb, lb = (longvec.bounding_box(), longvec.locator("canvas.wb-minimap").bounding_box(),
                          longvec.locator(".wb-legend").bounding_box())
            assert mb["height"] <= 170 and lb["y"] + lb["height"] <= vb["y"] + vb["height"] + 1, (mb, lb, vb)
            # its minimap's centre is the vector's middle
            longvec.locator("canvas.wb-minimap").click(position={"x": mb["width"] / 2, "y": mb["height"] / 2})
            lc = longvec.locator("canvas.wb-canvas")
            expect(lc).to_have_attribute("data-lod", "labels")
            g2 = lc.evaluate("c => ({...c.dataset})")
            fy = (float(g2["oy"]) + (lc.bounding_box()["height"] - float(g2["top"])) / 2) / (4096 * float(g2["cellH"]))
            assert abs(fy - 0.5) < 0.05, fy
            # JupyterLab's own floating boxes (toasts, the cell toolbar) must not sit over the screenshots
            page.add_style_tag(content=".Toastify, .jp-toast-container, .jp-cell-toolbar { display: none !important; }")
            page.wait_for_function("() => [...document.querySelectorAll('.jp-cell-toolbar')].every(e => !e.offsetParent)")
            bars = 0
            for k in range(sizes.count()):
                root = sizes.nth(k)
                assert root.evaluate(FIT) == [], root.locator(".wb-title").text_content()
                text = root.evaluate(TEXT)
                assert text["bad"] == [] and text["words"] > 0, (root.locator(".wb-title").text_content(), text)
                bars += text["bars"]
                for part in ("wb-title", "wb-coltitle", "wb-rowtitle", "wb-readout"):
                    shot = root.locator("." + part).screenshot()
                    if os.environ.get("WB_SCREENSHOT"):
                        Path(os.environ["WB_SCREENSHOT"] + f".{k}.{part}.png").write_bytes(shot)
                    assert _white_right_edge(shot), (k, part)
            assert bars > 0   # toolbars were measured
            # the playground's B panel keeps its width (it wraps rather than squeezes)
            widths = page.evaluate("""() => [...document.querySelectorAll('.jp-Cell:nth-child(2) canvas.wb-canvas')]
                .map(c => [c.getBoundingClientRect().width, parseFloat(c.style.width)])""")
            assert all(abs(a - b) < 1 for a, b in widths)
            if os.environ.get("WB_SCREENSHOT"):
                page.screenshot(path=os.environ["WB_SCREENSHOT"] + ".large.png", full_page=True)
            # MarkingExplorer shows only mark_layout_dynamic's argument
            cell = page.locator(".jp-Cell").nth(1)
            assert cell.get_by_text("leading_dim").first.is_visible()
            assert not cell.get_by_text("stride_order").first.is_visible()
        finally:
            browser.close()
