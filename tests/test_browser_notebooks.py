"""The stored teaching notebooks in a real JupyterLab + Chromium, as a new user opens them.

Reuses the JupyterLab fixture of test_browser_widgets.py; copies the stored notebooks into the served root
and opens each one at a 1400 px window with the file browser open, without running anything:

* untrusted (as any notebook from a clone opens): every view's static picture is drawn (the PNG of the
  picture output), as wide as it is or the output area, never wider; no "model not found" anywhere;
* opening marks no notebook modified (its stream outputs are stored merged, as JupyterLab holds them);
* trusted ("Trust Notebook"): every picture is drawn from its SVG, still no "model not found";
* run a view's cell: the live view appears and its stored picture (the output before it) is hidden, so
  the page shows the view once;
* `make lab`'s command prints a URL that opens the tour itself.

Everything asserted is waited for (Playwright's expect, wait_for_function): nothing sleeps a fixed time.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest
from test_browser_widgets import CHROMIUM, FLAGS, REPO, _free_port, _wait_http, lab  # noqa: F401 - lab is the fixture

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VIEW = "application/vnd.jupyter.widget-view+json"
NOTEBOOKS = [p for p in sorted((REPO / "notebooks").glob("*.ipynb")) if VIEW in p.read_text(encoding="utf-8")
             if not os.environ.get("WB_NOTEBOOKS") or p.name in os.environ["WB_NOTEBOOKS"].split(",")]
KERNEL_IDLE = ("() => { const s = window.jupyterapp?.shell?.currentWidget?.sessionContext;"
               " return s && s.session && s.session.kernel && s.session.kernel.status === 'idle'; }")
LOADED = ("() => { const w = window.jupyterapp?.shell?.currentWidget;"
          " return !!(w && w.context && w.context.isReady && w.content && w.content.widgets.length); }")
THEMES = ("JupyterLab Dark", "JupyterLab Dark High Contrast", "JupyterLab Light")
# the first live view's colours against the theme's variables (the canvas says which it drew with)
THEMED_COLOURS = """(scope) => {
  const root = document.querySelector(scope + ' .wb-grid'), canvas = root.querySelector('canvas.wb-canvas');
  const css = getComputedStyle(root), v = (n) => css.getPropertyValue(n).trim();
  const computed = (c) => { const d = document.createElement('div'); d.style.color = c; document.body.appendChild(d);
                            const m = getComputedStyle(d).color; d.remove(); return m; };
  const rgb = (c) => computed(c).match(/\\d+/g).slice(0, 3).map(Number);
  const g = canvas.getContext('2d').getImageData(1, 1, 1, 1).data;   // the canvas's corner: its background
  return {bg: JSON.stringify(rgb(canvas.dataset.bg)), layout0: JSON.stringify(rgb(v('--jp-layout-color0'))),
          title: getComputedStyle(root.querySelector('.wb-title')).color, font1: computed(v('--jp-ui-font-color1')),
          bg_rgb: [g[0], g[1], g[2]], drawn: JSON.stringify([g[0], g[1], g[2]])};
}"""
THEMED = "(scope) => { const r = (" + THEMED_COLOURS + ")(scope); return r.bg === r.layout0 && r.drawn === r.layout0; }"
# every stored picture: drawn (decoded, non-zero size) and no wider than its output area
PICTURES = """([scope, kind]) => [...document.querySelectorAll(scope + ' .jp-OutputArea-output img')]
  .filter(img => img.src.startsWith('data:image/' + kind))
  .map(img => { const area = img.closest('.jp-OutputArea-output').getBoundingClientRect();
                return {natural: img.naturalWidth, shown: img.getBoundingClientRect().width, area: area.width}; })"""


def _pictures(path) -> int:
    """How many static pictures of views the stored notebook holds."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return sum(1 for c in nb["cells"] for o in c.get("outputs", [])
               if "image/svg+xml" in o.get("data", {}) and "".join(o["data"].get("text/plain", "")).startswith("picture of"))


def _images(path, trusted: bool) -> dict:
    """How many outputs JupyterLab draws as each kind of image: untrusted, the PNG (a safe type) of every
    output that has one; trusted, the SVG where there is one."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    out = {"png": 0, "svg+xml": 0}
    for c in nb["cells"]:
        for o in c.get("outputs", []):
            d = o.get("data", {})
            if trusted and "image/svg+xml" in d:
                out["svg+xml"] += 1
            elif "image/png" in d:
                out["png"] += 1
    return out


def _open(page, base, token, name) -> str:
    """Open a notebook with the file browser beside it; the CSS selector of its panel."""
    page.goto(f"{base}/lab/tree/{name}?token={token}")
    page.wait_for_function(LOADED, timeout=90_000)
    page.wait_for_function(f"() => window.jupyterapp.shell.currentWidget.context.path === {json.dumps(name)}")
    page.evaluate("() => window.jupyterapp.shell.activateById('filebrowser')")
    page.wait_for_function("() => document.querySelector('#filebrowser')?.offsetWidth > 100")
    return "#" + page.evaluate("() => window.jupyterapp.shell.currentWidget.id")


def _all_drawn(page, scope, kind, count):
    """Scroll every picture into view (the notebook renders lazily) and wait until each is decoded."""
    imgs = page.locator(f"{scope} .jp-OutputArea-output img[src^='data:image/{kind}']")
    from playwright.sync_api import expect

    expect(imgs).to_have_count(count, timeout=60_000)
    for k in range(count):
        imgs.nth(k).scroll_into_view_if_needed()
    page.wait_for_function(f"""() => [...document.querySelectorAll("{scope} .jp-OutputArea-output img[src^='data:image/{kind}']")]
        .every(i => i.complete && i.naturalWidth > 0)""", timeout=60_000)
    return page.evaluate(PICTURES, [scope, kind])


def test_stored_notebooks_show_every_picture(lab, tmp_path):  # noqa: F811 - the imported fixture
    from playwright.sync_api import expect, sync_playwright

    base, token = lab
    for path in NOTEBOOKS:   # the fixture serves tmp_path / "root"
        shutil.copy(path, tmp_path / "root" / path.name)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            assert os.environ.get("WB_NOTEBOOKS") or (len(NOTEBOOKS) >= 8 and sum(_pictures(p) for p in NOTEBOOKS) >= 30)
            for path in NOTEBOOKS:
                assert _images(path, trusted=False)["png"] >= _pictures(path) >= 1, path.name   # every picture has its PNG
                scope = _open(page, base, token, path.name)
                drawn = _all_drawn(page, scope, "png", _images(path, trusted=False)["png"])
                assert all(d["natural"] > 50 and 50 < d["shown"] <= d["area"] + 1 for d in drawn), (path.name, drawn)
                expect(page.get_by_text("model not found")).to_have_count(0)
                assert page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty") is False, path.name
                page.evaluate("() => window.jupyterapp.shell.currentWidget.close()")
            # trusted: the SVG pictures, and still no error for the widget outputs (stored without a model id)
            path = next((p for p in NOTEBOOKS if p.name == "01_layouts.ipynb"), NOTEBOOKS[0])
            scope = _open(page, base, token, path.name)
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:trust'); }")   # (its promise waits for the dialog)
            page.locator(".jp-Dialog button.jp-mod-accept").click()
            drawn = _all_drawn(page, scope, "svg+xml", _images(path, trusted=True)["svg+xml"])
            assert all(d["natural"] > 50 and 50 < d["shown"] <= d["area"] + 1 for d in drawn), drawn
            expect(page.get_by_text("model not found")).to_have_count(0)
            expect(page.get_by_text("Error displaying widget")).to_have_count(0)
            # run the notebook up to its first view: the live view appears, its stored picture is hidden
            page.wait_for_function(KERNEL_IDLE, timeout=90_000)
            cells = page.locator(f"{scope} .jp-Cell")
            first_view = next(i for i, c in enumerate(json.loads(path.read_text())["cells"])
                              if any(VIEW in o.get("data", {}) for o in c.get("outputs", [])))
            page.evaluate("""(i) => { const w = window.jupyterapp.shell.currentWidget; w.content.activeCellIndex = i;
                                      window.jupyterapp.commands.execute('notebook:run-all-above'); }""", first_view + 1)
            cell = cells.nth(first_view)
            expect(cell.locator(".wb-grid canvas.wb-canvas")).to_be_visible(timeout=90_000)
            expect(cell.locator("img[src*='wb-static']")).to_be_hidden()
            # theme colours: the canvas background and the text follow JupyterLab's theme variables
            for theme in THEMES:
                page.evaluate("(t) => { window.jupyterapp.commands.execute('apputils:change-theme', {theme: t}); }", theme)
                page.wait_for_function("(t) => document.body.dataset.jpThemeName === t", arg=theme, timeout=60_000)
                page.wait_for_function(THEMED, arg=scope, timeout=60_000)
                colours = page.evaluate(THEMED_COLOURS, scope)
                assert colours["bg"] == colours["layout0"] and colours["title"] == colours["font1"], (theme, colours)
                assert (theme == "JupyterLab Light") == (sum(colours["bg_rgb"]) > 3 * 128), (theme, colours)
        finally:
            browser.close()


def test_make_lab_prints_the_tours_url(tmp_path):
    """The command of `make lab` (its JupyterLab arguments, read from the Makefile) prints a URL that opens the
    tour: the page it names is the notebook, not the Launcher."""
    make = (REPO / "Makefile").read_text()
    args = re.search(r"^LAB_ARGS\s*:=\s*(.*)$", make, re.M).group(1)
    assert "$(LAB_ARGS)" in re.search(r"^lab:.*\n\t(.*)$", make, re.M).group(1)
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", *shlex.split(args), "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         "--ServerApp.allow_root=True", f"--ServerApp.root_dir={REPO}", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         f"--LabApp.workspaces_dir={tmp_path / 'ws'}"],
        env={**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config")},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        url = None
        for line in proc.stdout:   # the server prints its URL once it listens
            m = re.search(r"(http://127\.0\.0\.1:\d+/\S*\?token=\w+)", line)
            if m:
                url = m.group(1)
                break
        assert url is not None and "/lab/tree/notebooks/00_tour.ipynb?" in url, url
        _wait_http(url, 90, proc)   # it prints the URL just before it listens: the page it names answers
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
