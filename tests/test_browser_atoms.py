"""A real browser drives an MMAView in JupyterLab: click a C cell to select its thread, hover an A cell.

Reuses the JupyterLab + Chromium fixture of test_browser_widgets.py (imported, not copied); writes
its own notebook into the served root, runs it, then checks the page (the status line under the
panels) and what the kernel reads back (the selected thread and the hover the browser sent).
"""

from __future__ import annotations

import ast
import json
import os

import pytest
from test_browser_widgets import CHROMIUM, FLAGS, REPO, _run_cell, lab  # noqa: F401 - lab is the fixture

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CELL_VIEW = """\
import sys
sys.path.insert(0, {repo!r})
import workbench as wb
from workbench.atoms import make_tiled_mma, mma_atom
from widgets.atoms_view import MMAView
seen = []
v = MMAView(make_tiled_mma(mma_atom("SM80_16x8x16_F32F16F16F32_TN"), wb.make_layout((2, 2, 1)), (32, 32, 16)))
v.observe(lambda ch: seen.append(dict(ch["new"])) if ch["new"] else None, "hover")
v"""

CELL_READBACK = """\
print("KERNEL", {"thread": v.thread, "hover": seen[-1] if seen else None})"""


def test_mma_view_in_jupyterlab(lab, tmp_path):  # noqa: F811 - the imported fixture
    from playwright.sync_api import expect, sync_playwright

    def cell(src):
        return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}

    nb = {"cells": [cell(CELL_VIEW.format(repo=str(REPO))), cell(CELL_READBACK)],
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
            _run_cell(page, 0)
            c_panel = page.locator(".wb-atoms canvas[data-panel='C']")
            c_panel.wait_for(state="visible", timeout=90_000)
            cs = 1100 // 32  # the view's cell size for a 32-cell side
            # C(1, 2) belongs to thread 5 (lane 5 of the first atom: row 5 // 4, columns 2 * (5 % 4) + {0, 1})
            c_panel.click(position={"x": 2 * cs + cs / 2, "y": 1 * cs + cs / 2})
            a_panel = page.locator(".wb-atoms canvas[data-panel='A']")
            a_panel.hover(position={"x": 3 * cs + cs / 2, "y": 9 * cs + cs / 2})
            expect(page.locator(".wb-atoms-status")).to_have_text("A: (T5, V3) -> (M=9, K=3)")
            if os.environ.get("WB_SCREENSHOT"):
                page.screenshot(path=os.environ["WB_SCREENSHOT"], full_page=True)
            _run_cell(page, 1)
            out = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output")
            expect(out).to_contain_text("KERNEL", timeout=60_000)
            text = out.inner_text()
        finally:
            browser.close()
    state = ast.literal_eval(text.split("KERNEL", 1)[1].strip())
    assert state["thread"] == 5
    assert state["hover"] == {"panel": "A", "thread": 5, "value": 3, "row": 9, "col": 3}
