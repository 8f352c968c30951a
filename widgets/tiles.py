"""Windows of a grid, computed on demand: exact tiles of cells, and aggregated tiles (a heat map).

A *source* (:class:`widgets.grid.Grid` or :class:`widgets.grid.LayoutSource`) answers ``keys_at(rows,
cols)``, ``colors_at`` and ``texts_at`` for index arrays.  ``tile(source, r0, c0, nr, nc, step)`` is
the window of ``nr x nc`` blocks of ``step x step`` cells from ``(r0, c0)``: with ``step == 1`` the
cells themselves; above, each block is summarised from at most ``SAMPLES x SAMPLES`` evenly spaced
cells (the mean key; a scale colours the mean, categories colour the block's first cell), so a tile
costs the same whatever the grid's size.  ``overview`` is the whole grid in at most ``OVERVIEW``
blocks per axis: what the canvas and the static SVG draw first.
"""

from __future__ import annotations

import warnings

import numpy as np

SAMPLES = 4
OVERVIEW = 256
MAX_TILE_CELLS = 1 << 20


def overview_step(shape: tuple, blocks: int = OVERVIEW) -> int:
    nr, nc = shape
    return max(1, -(-nr // blocks), -(-nc // blocks))


def _positions(start: int, nblocks: int, step: int, n: int) -> np.ndarray:
    k = min(step, SAMPLES)
    within = (np.arange(k) * step) // k
    pos = start + np.arange(nblocks)[:, None] * step + within[None, :]
    return np.minimum(pos, n - 1)


def tile(source, r0: int, c0: int, nr: int, nc: int, step: int = 1) -> tuple[dict, np.ndarray, np.ndarray]:
    """(meta, keys float64 (nr*nc,), colours uint8 (nr*nc,)) of a window; meta carries what the canvas
    draws with it: the window, the row and column labels (exact tiles) and the cell texts."""
    R, C = source.shape
    if R == 0 or C == 0:   # an empty tensor: nothing to draw, an empty window (labels of the other axis kept)
        meta = {"r0": 0, "c0": 0, "nr": 0, "nc": 0, "step": 1, "row_labels": [], "col_labels": []}
        return meta, np.zeros(0, "<f8"), np.zeros(0, np.uint8)
    for name, v in (("r0", r0), ("c0", c0), ("nr", nr), ("nc", nc), ("step", step)):
        if type(v) is not int or v < (1 if name in ("nr", "nc", "step") else 0):
            raise ValueError(f"Expected {name} to be a {'positive' if name in ('nr', 'nc', 'step') else 'non-negative'} "
                             f"int, but got {v!r}.")
    if r0 >= R or c0 >= C:
        raise ValueError(f"Expected a window starting inside the {R}x{C} grid, but got ({r0}, {c0}).")
    nr, nc = min(nr, -(-(R - r0) // step)), min(nc, -(-(C - c0) // step))
    if nr * nc > MAX_TILE_CELLS:
        raise ValueError(f"Expected a tile of at most {MAX_TILE_CELLS} blocks, but got {nr}x{nc}.")
    meta = {"r0": r0, "c0": c0, "nr": nr, "nc": nc, "step": step}
    if step == 1:
        r, c = np.arange(r0, r0 + nr), np.arange(c0, c0 + nc)
        keys = source.keys_at(r, c)
        colors = source.colors_at(r, c, keys)
        texts = source.texts_at(r, c, keys)
        meta["row_labels"] = [source.rows.label(i) for i in r.tolist()]
        meta["col_labels"] = [source.cols.label(j) for j in c.tolist()]
        if texts is not None:
            meta["texts"] = texts
        return meta, np.ascontiguousarray(keys, "<f8").reshape(-1), np.ascontiguousarray(colors, np.uint8).reshape(-1)
    rp, cp = _positions(r0, nr, step, R), _positions(c0, nc, step, C)
    kr, kc = rp.shape[1], cp.shape[1]
    rs, cs = rp.reshape(-1), cp.reshape(-1)
    keys = source.keys_at(rs, cs)
    with warnings.catch_warnings():   # a block no thread owns is all NaN: its mean is NaN, on purpose
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(keys.reshape(nr, kr, nc, kc), axis=(1, 3))
        if getattr(source, "scale", False) and hasattr(source, "colors_of"):
            q = source.quantity_at(rs, cs, keys)
            colors = source.colors_of(np.nanmean(np.asarray(q, float).reshape(nr, kr, nc, kc), axis=(1, 3)))
        else:
            first = keys.reshape(nr, kr, nc, kc)[:, 0, :, 0]
            colors = source.colors_at(rp[:, 0], cp[:, 0], first)
    return meta, np.ascontiguousarray(mean, "<f8").reshape(-1), np.ascontiguousarray(colors, np.uint8).reshape(-1)


def overview(source, blocks: int = OVERVIEW) -> tuple[dict, np.ndarray, np.ndarray]:
    """The whole grid as one tile of at most ``blocks`` blocks per axis."""
    step = overview_step(source.shape, blocks)
    R, C = source.shape
    return tile(source, 0, 0, -(-R // step), -(-C // step), step)
