"""Colour scales for the views, chosen so that colour never claims more than it can say.

* ``SEQUENTIAL``: 256 steps of viridis (perceptually uniform, readable by the common colour-vision
  deficiencies and in greyscale), for a quantity such as an offset: a colour is a position on the
  scale shown in the legend, and neighbouring values get neighbouring colours; exact values are in
  the cell labels, never implied by equal colours.
* ``QUALITATIVE``: Paul Tol's "light" scheme (9 colours, colour-blind safe, black text readable on
  each), for categories such as a row or a tile; the legend says what the colour repeats over.
"""

from __future__ import annotations

import numpy as np

# viridis at 9 evenly spaced stops (matplotlib's table); linear interpolation in between
_VIRIDIS_STOPS = ((68, 1, 84), (71, 44, 122), (59, 81, 139), (44, 113, 142), (33, 144, 141),
                  (39, 173, 129), (92, 200, 99), (170, 220, 50), (253, 231, 37))


def _interpolate(stops, n: int) -> tuple:
    s = np.asarray(stops, float)
    x = np.linspace(0, len(s) - 1, n)
    i = np.minimum(x.astype(int), len(s) - 2)
    f = (x - i)[:, None]
    rgb = np.rint(s[i] * (1 - f) + s[i + 1] * f).astype(int)
    return tuple(f"#{r:02x}{g:02x}{b:02x}" for r, g, b in rgb)


SEQUENTIAL = _interpolate(_VIRIDIS_STOPS, 256)
QUALITATIVE = ("#77aadd", "#99ddff", "#44bb99", "#bbcc33", "#aaaa00", "#eedd88", "#ee8866", "#ffaabb", "#dddddd")


def scale_indices(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Index into SEQUENTIAL of each value on the scale [lo, hi] (NaN and a flat scale: index 0)."""
    v = np.asarray(values, float)
    span = float(hi) - float(lo)
    if span <= 0:
        return np.zeros(v.shape, np.uint8)
    idx = np.rint((np.nan_to_num(v, nan=lo) - lo) * (255.0 / span))
    return np.clip(idx, 0, 255).astype(np.uint8)


def text_color(hex_color: str) -> str:
    """Black or white, whichever reads better on ``hex_color`` (WCAG relative luminance)."""
    rgb = [int(hex_color[k:k + 2], 16) / 255 for k in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return "#000000" if lum > 0.179 else "#ffffff"
