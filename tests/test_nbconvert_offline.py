"""Saved notebooks show their views anywhere: ``nbconvert --to html`` rendered offline in Chromium.

A view writes two outputs: its static picture (``image/svg+xml`` and ``image/png``) and then the widget
(``application/vnd.jupyter.widget-view+json``).  nbconvert draws a widget whenever the notebook stores widget state
(``metadata.widgets``, which executors write by default) and then the page fetches a widget manager
from a CDN: offline, or on any viewer without that script, no view is shown at all.  The notebooks are
therefore saved without widget state (execute them with ``store_widget_state=False``, e.g.
``jupyter nbconvert --execute --inplace --ExecutePreprocessor.store_widget_state=False``), so the static
picture is what every viewer shows, and a live kernel still renders the widget.  This test checks both:
no notebook stores widget state, and each notebook's HTML, loaded with every network request refused,
draws every view.
"""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]
VIEW = "application/vnd.jupyter.widget-view+json"


def _views(nb: dict) -> list[str]:
    """The <title> of the static picture of every view output, in order."""
    out = []
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if "image/svg+xml" in data and "".join(data.get("text/plain", "")).startswith("picture of"):
                svg = "".join(data["image/svg+xml"])
                m = re.search(r"<title>(.*?)</title>", svg)
                out.append(m.group(1) if m else "")
    return out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_stores_no_widget_state(path):
    nb = json.loads(path.read_text())
    assert "widgets" not in nb["metadata"], (
        f"{path.name} stores widget state: nbconvert's HTML would then fetch a widget manager from a CDN and show "
        f"no view offline; re-execute it with store_widget_state=False")


@pytest.mark.browser
def test_nbconvert_html_shows_every_view_offline(tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api")
    nbconvert = pytest.importorskip("nbconvert")
    import nbformat
    from playwright.sync_api import sync_playwright

    pages, expected = [], {}
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        text, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
        out = tmp_path / (path.stem + ".html")
        out.write_text(text, encoding="utf-8")
        pages.append(out)
        expected[out.name] = _views(json.loads(path.read_text()))
    assert sum(len(v) for v in expected.values()) >= 10   # the series shows its views

    refused = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.route(re.compile(r"^(https?|wss?)://"), lambda route: (refused.append(route.request.url), route.abort()))
            for out in pages:
                page.goto(out.as_uri(), wait_until="load")
                page.wait_for_function("() => [...document.images].every(i => i.complete)")
                # nbconvert embeds each picture as <img src="data:image/svg+xml;base64,...">: decode, draw, count ink
                drawn = page.evaluate("""() => [...document.querySelectorAll('.jp-RenderedSVG img')].map(img => {
                    const svg = atob(img.src.split(',')[1]);
                    const m = svg.match(/<title>(.*?)<\\/title>/);
                    const c = document.createElement('canvas');
                    c.width = img.naturalWidth; c.height = img.naturalHeight;
                    const g = c.getContext('2d');
                    g.drawImage(img, 0, 0);
                    const px = c.width && c.height ? g.getImageData(0, 0, c.width, c.height).data : [];
                    let ink = 0;
                    for (let i = 0; i < px.length; i += 4) if (px[i] < 200 && px[i + 3] > 0) ink++;
                    return {title: m ? m[1] : '', w: img.naturalWidth, h: img.naturalHeight,
                            shown: img.getBoundingClientRect().width, ink: ink / Math.max(1, c.width * c.height)};
                })""")
                titles = [html.unescape(d["title"]) for d in drawn]
                for want in expected[out.name]:   # each view's drawing is on the page, decoded and drawn
                    assert html.unescape(want) in titles, (out.name, want, titles)
                    d = drawn[titles.index(html.unescape(want))]
                    assert d["w"] > 50 and d["h"] > 50 and d["shown"] > 50 and d["ink"] > 0.02, (out.name, d)
                assert page.locator(".jupyter-widgets script[type='application/vnd.jupyter.widget-view+json']").count() == 0
        finally:
            browser.close()
    assert not [u for u in refused if "widget" in u or "unpkg" in u], refused   # no widget manager was wanted
