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
print("KERNEL", {"hover": h, "text": f"{v.coordinate(*h)} -> {v.offset(*h)}" if h else "",
                 "selected": v.selected_offset, "cells": v.selected_cells, "color_by": v.color_by,
                 "row1_colors": v.grid.colors[6:12].tolist(), "thread": tvv.thread})"""


def _notebook(path: Path) -> None:
    def cell(src):
        return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}

    nb = {
        "cells": [cell(CELL_VIEW.format(repo=str(REPO))), cell(CELL_READBACK)],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, timeout: float, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"JupyterLab did not answer {url} within {timeout} s")


@pytest.fixture
def lab(tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api")
    root = tmp_path / "root"
    root.mkdir()
    _notebook(root / "view.ipynb")
    port, token = _free_port(), "wbtest" + os.urandom(8).hex()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), PYTHONPATH=str(REPO))
    log = open(tmp_path / "lab.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", "--ServerApp.allow_root=True", "--LabApp.expose_app_in_browser=True",
         f"--ServerApp.root_dir={root}", f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
         f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
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
            expect(readout).to_have_text("(1,(0,1)) -> 9")

            canvas.click(position={"x": left + col * cw + cw / 2, "y": top + row * ch + ch / 2})
            expect(readout).to_contain_text("selected offset 9: 2 cells")

            # move a control: colour by row instead of offset
            page.locator(".widget-dropdown select").first.select_option("row")

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
        finally:
            browser.close()
    state = ast.literal_eval(text.split("KERNEL", 1)[1].strip())  # the dict the kernel printed
    assert state["hover"] == (1, 2)
    assert state["text"] == "(1,(0,1)) -> 9"
    assert state["selected"] == 9
    assert state["cells"] == [(1, 2), (1, 3)]
    assert state["color_by"] == "row"
    assert state["row1_colors"] == [1] * 6
    assert state["thread"] == 2  # row 1 -> palette entry 1 everywhere in that row
