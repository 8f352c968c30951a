"""PNG of a view: its static SVG picture, rasterized here (no browser, no display, no per-cell plotting).

The PNG is the SVG drawn pixel for pixel, so it shows exactly what the SVG shows: every cell or the
overview and first tile, the legend, the notes and the "left out" line.  The SVG comes from this package
(:mod:`widgets.svg`, :mod:`widgets.atoms_view`) and uses a small vocabulary, which is all this draws:
``<svg>`` (nested, placed at x, y), ``<g>`` (inherited fill, stroke, text-anchor, font-weight,
``translate``), ``<rect>``, ``<line>`` (horizontal or vertical, optionally dashed), ``<text>``, ``<path>``
made of axis-aligned rectangles (``M x y h w v h h -w z``), and ``<image>`` holding a PNG this package
wrote.  Anything else is refused with its name.  Text uses matplotlib's bundled DejaVu Sans Mono through
its FreeType wrapper: each glyph is rendered once and then copied, so a 64x64 grid of labels takes
milliseconds rather than the seconds of one matplotlib text artist per cell.
"""

from __future__ import annotations

import base64
import re
import struct
import xml.etree.ElementTree as ET
import zlib
from functools import lru_cache

import numpy as np

from .svg import _png

NS = "{http://www.w3.org/2000/svg}"
_INHERITED = ("fill", "stroke", "stroke-width", "text-anchor", "font-weight", "font-size", "stroke-dasharray")
_PATH_RECT = re.compile(r"M(-?[\d.]+) (-?[\d.]+)h(-?[\d.]+)v(-?[\d.]+)h(-?[\d.]+)z")
_TRANSLATE = re.compile(r"translate\((-?[\d.]+),\s*(-?[\d.]+)\)")


@lru_cache(maxsize=1024)
def _rgb(color: str):
    if color in (None, "none"):
        return None
    c = color.lstrip("#")
    if len(c) == 3:
        c = "".join(ch * 2 for ch in c)
    if len(c) != 6:
        raise ValueError(f"Expected a colour as #rrggbb or #rgb, but got {color!r}.")
    return np.array([int(c[k:k + 2], 16) for k in (0, 2, 4)], np.float32)


@lru_cache(maxsize=8)
def _font(bold: bool, px: int):
    """(glyph cache dict, advance in px, ascent in px) for DejaVu Sans Mono at ``px`` pixels."""
    from matplotlib import ft2font
    from matplotlib.font_manager import FontProperties, findfont

    path = findfont(FontProperties(family="DejaVu Sans Mono", weight="bold" if bold else "normal"))
    face = ft2font.FT2Font(path)
    face.set_size(px, 72)                        # 72 dpi: points are pixels
    advance = face.load_char(ord("0")).linearHoriAdvance / 65536   # monospace: one advance for every glyph
    ascent = round(px * face.ascender / face.units_per_EM)
    return {"face": face}, advance, ascent


def _glyph(bold: bool, px: int, ch: str):
    """(alpha float32 (h, w), x offset, top offset from the baseline) of one character, rendered once."""
    cache, _, _ = _font(bold, px)
    g = cache.get(ch)
    if g is None:
        face = cache["face"]
        face.set_text(ch, 0.0)
        face.draw_glyphs_to_bitmap(antialiased=True)
        a = np.asarray(face.get_image(), np.float32) / 255.0
        m = face.load_char(ord(ch))
        ink_r, ink_c = np.flatnonzero(a.any(axis=1)), np.flatnonzero(a.any(axis=0))
        if ink_r.size == 0:   # a blank glyph
            g = cache[ch] = (a[:0, :0], 0, 0)
        else:   # place the ink where the glyph's metrics put it: bearing right of the pen, height above the baseline
            a = a[ink_r[0]:ink_r[-1] + 1, ink_c[0]:ink_c[-1] + 1]
            g = cache[ch] = (a, int(round(m.horiBearingX / 64)), int(round(m.horiBearingY / 64)))
    return g


def _decode_png(data: bytes) -> np.ndarray:
    """An (h, w, 3) array from a PNG written by :func:`widgets.svg._png` (8-bit RGB, filter 0 rows)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("Expected an embedded PNG, but got other image data.")
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", chunk[:10])
            if (depth, ctype) != (8, 2):
                raise ValueError(f"Expected an 8-bit RGB PNG, but got bit depth {depth}, colour type {ctype}.")
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + 3 * w)
    if raw[:, 0].any():
        raise ValueError("Expected PNG rows without filters (as this package writes them).")
    return raw[:, 1:].reshape(h, w, 3)


class _Canvas:
    def __init__(self, width: int, height: int):
        self.a = np.full((height, width, 3), 255.0, np.float32)
        self.shape = (height, width)

    def fill(self, x0, y0, x1, y1, rgb, alpha: float = 1.0) -> None:
        h, w = self.shape
        x0, y0, x1, y1 = int(x0 + 0.5), int(y0 + 0.5), int(x1 + 0.5), int(y1 + 0.5)   # coordinates are >= 0 here
        x0, y0, x1, y1 = (x0 if x0 > 0 else 0), (y0 if y0 > 0 else 0), (x1 if x1 < w else w), (y1 if y1 < h else h)
        if x1 <= x0 or y1 <= y0:
            return
        if alpha >= 1:
            self.a[y0:y1, x0:x1] = rgb
        else:
            view = self.a[y0:y1, x0:x1]
            view *= 1 - alpha
            view += rgb * alpha

    def frame(self, x, y, w, h, rgb, width) -> None:
        t, alpha = max(1, int(round(width))), min(1.0, width)   # hairlines: one pixel, lighter
        self.fill(x, y, x + w, y + t, rgb, alpha)
        self.fill(x, y + h - t, x + w, y + h, rgb, alpha)
        self.fill(x, y + t, x + t, y + h - t, rgb, alpha)
        self.fill(x + w - t, y + t, x + w, y + h - t, rgb, alpha)

    def line(self, x1, y1, x2, y2, rgb, width, dash) -> None:
        t, alpha = max(1, int(round(width))), min(1.0, width)
        if x1 != x2 and y1 != y2:
            raise ValueError(f"Expected a horizontal or vertical line, but got ({x1},{y1})-({x2},{y2}).")
        lo, hi = (min(x1, x2), max(x1, x2)) if y1 == y2 else (min(y1, y2), max(y1, y2))
        on, off = dash if dash else (hi - lo + 1, 0)
        p = lo
        while p < hi:
            q = min(hi, p + on)
            if y1 == y2:
                self.fill(p, y1 - t / 2, q, y1 + t / 2 + (t == 1) * 0.5, rgb, alpha)
            else:
                self.fill(x1 - t / 2, p, x1 + t / 2 + (t == 1) * 0.5, q, rgb, alpha)
            p = q + off

    def text(self, x, y, s, rgb, anchor, bold, px) -> None:
        _, adv, _ = _font(bold, px)
        if anchor == "middle":
            x -= adv * len(s) / 2
        elif anchor == "end":
            x -= adv * len(s)
        H, W = self.a.shape[:2]
        for k, ch in enumerate(s):
            if ch == " ":
                continue
            a, dx, top = _glyph(bold, px, ch)
            gx, gy = int(round(x + k * adv)) + dx, int(round(y)) - top
            h, w = a.shape
            x0, y0, x1, y1 = max(gx, 0), max(gy, 0), min(gx + w, W), min(gy + h, H)
            if x1 <= x0 or y1 <= y0:
                continue
            al = a[y0 - gy:y1 - gy, x0 - gx:x1 - gx, None]
            view = self.a[y0:y1, x0:x1]
            view[...] = view * (1 - al) + rgb * al

    def image(self, x, y, w, h, arr) -> None:
        H, W = self.a.shape[:2]
        x, y, w, h = int(round(x)), int(round(y)), int(round(w)), int(round(h))
        if w <= 0 or h <= 0:
            return
        rows = np.minimum(np.arange(h) * arr.shape[0] // h, arr.shape[0] - 1)   # nearest: pixelated, as the SVG asks
        cols = np.minimum(np.arange(w) * arr.shape[1] // w, arr.shape[1] - 1)
        x0, y0, x1, y1 = max(x, 0), max(y, 0), min(x + w, W), min(y + h, H)
        if x1 > x0 and y1 > y0:
            self.a[y0:y1, x0:x1] = arr[np.ix_(rows[y0 - y:y1 - y], cols[x0 - x:x1 - x])]


def _num(v, default=0.0) -> float:
    return float(v) if v not in (None, "") else default


def _draw(el, canvas: _Canvas, ox: float, oy: float, style: dict) -> None:
    tag = el.tag[len(NS):] if el.tag.startswith(NS) else el.tag
    st = dict(style)
    for k in _INHERITED:
        if k in el.attrib:
            st[k] = el.attrib[k]
    g = el.get
    if tag in ("svg", "g"):
        if tag == "svg" and style.get("_nested"):
            ox, oy = ox + _num(g("x")), oy + _num(g("y"))
        m = _TRANSLATE.search(g("transform") or "")
        if m:
            ox, oy = ox + float(m.group(1)), oy + float(m.group(2))
        st["_nested"] = True
        for child in el:
            _draw(child, canvas, ox, oy, st)
        return
    if tag == "title":
        return
    fill, stroke = st.get("fill", "#000000"), st.get("stroke")
    width = _num(st.get("stroke-width"), 1.0)
    if tag == "rect":
        x, y, w, h = ox + _num(g("x")), oy + _num(g("y")), _num(g("width")), _num(g("height"))
        if _rgb(fill) is not None:
            canvas.fill(x, y, x + w, y + h, _rgb(fill))
        if _rgb(stroke) is not None and width > 0:
            canvas.frame(x, y, w, h, _rgb(stroke), width)
    elif tag == "line":
        dash = st.get("stroke-dasharray")
        dash = tuple(float(v) for v in dash.split(",")) if dash else None
        canvas.line(ox + _num(g("x1")), oy + _num(g("y1")), ox + _num(g("x2")), oy + _num(g("y2")),
                    _rgb(stroke or "#000000"), width, dash)
    elif tag == "text":
        canvas.text(ox + _num(g("x")), oy + _num(g("y")), el.text or "", _rgb(fill), st.get("text-anchor", "start"),
                    st.get("font-weight") == "bold", int(round(_num(st.get("font-size"), 11.0))))
    elif tag == "path":
        d = g("d") or ""
        rects = _PATH_RECT.findall(d)
        if len("".join("M{} {}h{}v{}h{}z".format(*r) for r in rects)) != len(d):
            raise ValueError(f"Expected a path of axis-aligned rectangles (M x y h w v h h -w z), but got {d[:60]!r}.")
        for x, y, w, h, _ in rects:
            x, y, w, h = ox + float(x), oy + float(y), float(w), float(h)
            if _rgb(fill) is not None:
                canvas.fill(x, y, x + w, y + h, _rgb(fill))
            if _rgb(stroke) is not None:
                canvas.frame(x, y, w, h, _rgb(stroke), width)
    elif tag == "image":
        href = g("href") or g("{http://www.w3.org/1999/xlink}href") or ""
        if not href.startswith("data:image/png;base64,"):
            raise ValueError(f"Expected an embedded PNG image, but got {href[:40]!r}.")
        arr = _decode_png(base64.b64decode(href.split(",", 1)[1]))
        canvas.image(ox + _num(g("x")), oy + _num(g("y")), _num(g("width")), _num(g("height")), arr)
    else:
        raise ValueError(f"Expected one of the SVG elements this package writes, but got <{tag}>.")


def svg_to_array(svg: str) -> np.ndarray:
    """The (h, w, 3) uint8 raster of an SVG written by this package."""
    root = ET.fromstring(svg)
    w, h = int(float(root.get("width"))), int(float(root.get("height")))
    canvas = _Canvas(w, h)
    _draw(root, canvas, 0.0, 0.0, {"font-size": root.get("font-size", "11")})
    return np.clip(np.rint(canvas.a), 0, 255).astype(np.uint8)


def png_bytes(svg: str) -> bytes:
    """The PNG file of ``svg`` (from this package), pixel for pixel."""
    return _png(svg_to_array(svg), level=6)   # level 6: a few times faster than 9 on megapixel pictures


def save_png(svg: str, path) -> None:
    """Write ``svg`` (from this package) as a PNG file, whole or not at all."""
    from .base import write_atomically

    write_atomically(path, data=png_bytes(svg))
