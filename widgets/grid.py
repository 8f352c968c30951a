"""The drawable state of a coordinate grid, shared by the canvas widget and the SVG renderer.

A :class:`Grid` is plain data: ``rows x cols`` cells, each with a numeric *key* (the value a
click selects and hover reports: an offset for a layout, a thread id for a TV layout), a text
label and a palette index.  Rows and columns carry their coordinate labels and the periods at
which nested sub-modes start a new group, so the nesting of a mode like ``(2,3)`` shows as
heavier rules every 2 cells.  Nothing here imports a Jupyter package.

:func:`fold_layout` turns any Layout into such a grid the way CuTe prints layouts: a rank-2
layout ``(M,N)`` is ``M`` rows by ``N`` columns with cell ``(m,n) = L(m,n)``; a rank-1 layout
is one column (``print_latex`` appends ``1:0``); a rank-r layout with r > 2 keeps mode 0 as
rows and folds modes ``1..r-1`` into one nested column mode, colexicographically.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from workbench.atoms.conflicts import BANK_BYTES, BANKS
from workbench.layout import ComposedLayout, Dyn, F2Layout, Layout
from workbench.layout import inttuple as it
from workbench.layout.window import mode_offsets, offset_bounds, window_offsets

from .colors import QUALITATIVE, SEQUENTIAL, scale_indices

PALETTE = SEQUENTIAL   # colour by offset: a position on one scale (legend), never a repeating set
# CuTe's print_latex_tv thread colours (TikzColor_TV), in its order: they repeat every 8 threads,
# and the legend says so; the T/V labels name the thread.
TV_PALETTE = (
    "#afafff", "#afffaf", "#ffffaf", "#ffafaf", "#d2d2ff", "#d2ffd2", "#ffffd2", "#ffd2d2",
)
MAX_LABELS = 1 << 20   # an axis lists all its labels only up to this length (views ask for windows)
COLOR_BY = ("offset", "row", "column", "tile", "mode", "layout", "value", "bank", "chunk")
# shared memory, as workbench.atoms.conflicts counts it: 32 banks of 4 bytes; a 16-byte chunk is what one thread's
# 128-bit access (or one ldmatrix row) reads, 8 of them to a 128-byte row of banks, and what a swizzle permutes
CHUNK_BYTES = 16
CHUNKS = BANKS * BANK_BYTES // CHUNK_BYTES


def _hue_wheel(n: int) -> tuple:
    """``n`` colours around the hue circle, alternately lighter and darker (neighbours stay apart)."""
    import colorsys

    out = []
    for k in range(n):
        r, g, b = colorsys.hls_to_rgb(k / n, 0.62 if k % 2 else 0.75, 0.75)
        out.append(f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}")
    return tuple(out)


BANK_PALETTE = _hue_wheel(BANKS)          # bank k: hue k/32 (a cycle, as the banks are)
CHUNK_PALETTE = _hue_wheel(CHUNKS)
EXACT = 1 << 53        # float64 keys are exact integers below this; larger offsets are labelled from int64
RANK1_COLUMNS = "one (a rank-1 layout)"   # what a view says of the appended 1:0


@dataclass
class Axis:
    """One axis of the grid: the layout mode drawn along it; its labels are made on demand."""

    title: str            # the mode as CuTe prints it, e.g. "(2,?):(1,?{i64}) = (2,8):(1,16)"
    n: int                # number of cells along the axis
    groups: list          # periods (in cells) of nested sub-mode boundaries, innermost first
    dynamic: bool         # whether any shape or stride leaf of the mode is dynamic
    shape: object = None  # runtime shape of a nested mode (labels are its natural coordinates); None: 0..n-1

    def label(self, i: int) -> str:
        if self.shape is None:
            return str(int(i))
        return it.format_inttuple(it._idx2crd(int(i), self.shape))

    @property
    def labels(self) -> list:
        if self.n > MAX_LABELS:
            raise ValueError(f"Expected an axis of at most {MAX_LABELS} cells to list its labels, but this one has "
                             f"{self.n}; ask for a window with .label(i).")
        return [self.label(i) for i in range(self.n)]

    @property
    def label_chars(self) -> int:
        """Width of the widest label, in characters (the last coordinate has the most digits)."""
        return max(len(self.label(0)), len(self.label(self.n - 1))) if self.n else 1


class ThreadValueTexts(Sequence):
    """The ``T#V#`` labels of a TV grid, made when read: a 2^20-cell tile never formats a million strings."""

    def __init__(self, thread: np.ndarray, value: np.ndarray):
        self.thread, self.value = thread, value
        owned = thread >= 0
        self.max_len = len(f"T{thread.max()}V{value[owned].max()}") if owned.any() else 0

    def __len__(self) -> int:
        return len(self.thread)

    def __getitem__(self, i: int) -> str:
        t = int(self.thread[i])
        return f"T{t}V{int(self.value[i])}" if t >= 0 else ""

    def __eq__(self, other) -> bool:
        if isinstance(other, ThreadValueTexts):
            return np.array_equal(self.thread, other.thread) and np.array_equal(self.value, other.value)
        return isinstance(other, Sequence) and len(other) == len(self) and all(a == b for a, b in zip(self, other))

    __hash__ = None


@dataclass
class Grid:
    """Everything needed to draw one grid, row-major over ``rows x cols``.

    ``keys`` is float64 so that a missing cell (NaN: a tile position no thread owns) fits next to
    exact integers below 2**53; ``colors`` indexes ``palette``.
    """

    title: str
    rows: Axis
    cols: Axis
    keys: np.ndarray                  # float64 (rows*cols,)
    colors: np.ndarray                # uint8 (rows*cols,)
    texts: list | None = None         # per-cell labels (a list or ThreadValueTexts); None: the integer key
    palette: tuple = PALETTE
    selected: float | None = None     # key whose cells are highlighted
    key_name: str = "offset"
    notes: list = field(default_factory=list)
    legend: dict = field(default_factory=dict)   # what a colour means (see LayoutSource.legend)
    scale: bool = False                           # colours are a function of the keys (so of their mean)

    @property
    def shape(self) -> tuple:
        return (self.rows.n, self.cols.n)

    # -- the source protocol of widgets.tiles: cells of a window given by row and column indices ----
    def keys_at(self, r: np.ndarray, c: np.ndarray) -> np.ndarray:
        return self.keys.reshape(self.shape)[np.ix_(r, c)]

    def colors_at(self, r: np.ndarray, c: np.ndarray, keys: np.ndarray) -> np.ndarray:
        return self.colors.reshape(self.shape)[np.ix_(r, c)]

    def texts_at(self, r: np.ndarray, c: np.ndarray, keys: np.ndarray):
        if self.texts is None:
            return None
        nc = self.cols.n
        return [self.texts[i * nc + j] for i in r.tolist() for j in c.tolist()]

    def label_chars(self) -> int:
        if self.texts is not None:
            known = getattr(self.texts, "max_len", None)
            return known if known is not None else max((len(t) for t in self.texts), default=1)
        k = self.keys[~np.isnan(self.keys)]
        return max((len(str(int(x))) for x in (k.min(), k.max())), default=1) if k.size else 1

    def text(self, i: int) -> str:
        if self.texts is not None:
            return self.texts[i]
        k = self.keys[i]
        return "" if k != k else str(int(k))


def _is_dynamic(t) -> bool:
    return any(type(x) is Dyn for x in it.flatten(t))


def _mode_title(shape, stride) -> str:
    return f"{it.format_inttuple(shape)}:{it.format_inttuple(stride)}"


def axis_of(shape, stride) -> Axis:
    """The axis for one (possibly nested) mode: natural coordinates as labels, nesting periods."""
    vshape = it_values(shape)
    flat = [int(s) for s in it.flatten(vshape)]
    n = int(np.prod(flat)) if flat else 1
    nested = type(shape) is tuple and len(it.flatten(shape)) > 1
    groups, p = [], 1
    for s in flat[:-1]:
        p *= s
        if 1 < p < n:
            groups.append(p)
    dynamic = _is_dynamic(shape) or _is_dynamic(stride)
    title = _mode_title(shape, stride)
    if dynamic:  # the ? notation first, then what this live tensor holds
        title += f" = {_mode_title(it_values(shape), it_values(stride))}"
    return Axis(title, n, groups, dynamic, vshape if nested else None)


def it_values(t):
    """Runtime values of an IntTuple; a symbolic ``?`` cannot be drawn and says so."""
    if type(t) is tuple:
        return tuple(it_values(e) for e in t)
    if type(t) is Dyn:
        if t.value is None:
            raise ValueError(f"Expected a dynamic value with a runtime value to draw, but got the symbolic {t!r}.")
        return t.value
    return t


def fold(layout: Layout) -> tuple[Layout, Layout]:
    """Split a layout into (row mode, column mode) as described in the module docstring.
    A swizzled (composed) layout folds as its outer shape:stride; its offsets are the swizzled ones."""
    if type(layout) is ComposedLayout:
        layout = layout.outer
    if type(layout) is F2Layout:   # an F2 layout folds the same way; its modes keep their XOR strides
        return _fold_f2(layout)
    if type(layout) is not Layout:
        raise TypeError(f"Expected a wb.Layout, but got {type(layout).__name__}.")
    shp, std = layout.shape, layout.stride
    if type(shp) is not tuple:
        return layout, Layout(1, 0)
    if len(shp) == 0:  # the empty layout ():() is one element at offset 0
        return Layout(1, 0), Layout(1, 0)
    if len(shp) == 1:
        return Layout(shp[0], std[0]), Layout(1, 0)
    if len(shp) == 2:
        return Layout(shp[0], std[0]), Layout(shp[1], std[1])
    return Layout(shp[0], std[0]), Layout(shp[1:], std[1:])


def _fold_f2(layout):
    shp, bs = layout.shape, layout.bases
    one = F2Layout(1, ())
    if type(shp) is not tuple:
        return layout, one
    if len(shp) == 0:
        return one, one
    if len(shp) <= 2:
        return layout[0], (layout[1] if len(shp) == 2 else one)
    return layout[0], F2Layout(shp[1:], bs[1:])


def folded(layout):
    """The rank-2 layout (rows, columns) with the same offsets as ``layout`` (see :func:`fold`)."""
    rmode, cmode = fold(layout)
    if type(layout) is F2Layout:
        return F2Layout((rmode.shape, cmode.shape), (rmode.bases, cmode.bases))
    two = Layout((rmode.shape, cmode.shape), (rmode.stride, cmode.stride))
    if type(layout) is ComposedLayout:
        return ComposedLayout(layout.inner, layout.offset, two)
    return two


def folded_offsets(layout: Layout) -> np.ndarray:
    """Offsets as a (rows, cols) array: cell (r, c) holds L(r + rows*c), which is L(r, c) after folding."""
    src = LayoutSource(layout)
    nr, nc = src.shape
    return window_offsets(src.folded, np.arange(nr), np.arange(nc))


def _format_value(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "T" if v else "F"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, complex | np.complexfloating):
        return f"{v.real:.3g}{v.imag:+.3g}j"
    return f"{float(v):.4g}"


def default_tile(axis: Axis) -> int:
    """Tile length along an axis when none is given: the innermost nested period; for a flat mode
    the largest divisor in [2, 8] (8 when there is none, the last tile partial), and for a flat mode
    of at most 8 cells about half of it, so an unnested (8,8) shows 4x4 tiles, never one colour."""
    if axis.groups:
        return axis.groups[0]
    n = axis.n
    if n > 8:
        return next((d for d in range(8, 1, -1) if n % d == 0), 8)
    half = next((d for d in range(n // 2, 1, -1) if n % d == 0), 1)
    return half if half > 1 else max(1, -(-n // 2))


def mode_paths(shape) -> list:
    """Every (sub-)mode of a shape as an index path, depth first: ``(4,(2,3))`` -> (0,), (1,), (1,0), (1,1).
    A rank-1 (integer) shape has one mode, the whole layout: ``()``."""
    if type(shape) is not tuple or not shape:   # (the empty layout too: one cell, one mode)
        return [()]
    out = []

    def walk(s, prefix):
        for k, e in enumerate(s):
            out.append(prefix + (k,))
            if type(e) is tuple:
                walk(e, prefix + (k,))

    walk(shape, ())
    return out


def _get(t, path):
    for k in path:
        t = t[k]
    return t


def mode_name(layout, path: tuple) -> str:
    """``get<1,0>: 2:4``: the mode as CuTe's ``get<...>`` names it, with its shape:stride."""
    outer = layout.outer if type(layout) is ComposedLayout else layout
    shape, stride = _get(outer.shape, path), _get(outer.stride, path)
    sub = _mode_title(shape, stride)
    if _is_dynamic(shape) or _is_dynamic(stride):   # the ? notation, then what this live tensor holds
        sub += f" = {_mode_title(it_values(shape), it_values(stride))}"
    return f"get<{','.join(map(str, path))}>: {sub}" if path else f"the layout: {sub}"


def _leaf_span(shape, path) -> tuple[int, int]:
    """(size of the leaves before the mode in colexicographic order, size of the mode): the mode's
    coordinate of the 1-D index i is ``(i // before) % size``."""
    leaves = [int(x) for x in it.flatten(shape)]
    first, t = 0, shape
    for k in path:
        first += sum(len(it.flatten(e)) for e in t[:k])
        t = t[k]
    count = len(it.flatten(t))
    before, size = 1, 1
    for x in leaves[:first]:
        before *= x
    for x in leaves[first:first + count]:
        size *= x
    return before, size


class LayoutSource:
    """A layout's grid, computed window by window: nothing here enumerates the whole layout.

    ``keys_at(rows, cols)`` gives the offsets of a window (through :func:`workbench.layout.window.window_offsets`),
    ``colors_at`` their palette indices for the chosen colouring, ``texts_at`` the cell labels when the
    cells show a tensor's values (``values``: a host array with the tensor's shape).
    """

    def __init__(self, layout, color_by: str = "offset", color_layout: Layout | None = None,
                 selected: float | None = None, values: np.ndarray | None = None, tile: tuple | None = None,
                 mode: tuple | int | None = None, element_bits: int | None = None):
        rmode, cmode = fold(layout)
        self.layout = layout
        self.rows, self.cols = axis_of(rmode.shape, rmode.stride), axis_of(cmode.shape, cmode.stride)
        outer = layout.outer if type(layout) is ComposedLayout else layout
        self.rank1 = type(outer.shape) is not tuple or len(outer.shape) <= 1
        if self.rank1:   # the column mode is print_latex's appended 1:0, not a mode of the layout
            self.cols.title = RANK1_COLUMNS
        it_values(layout.shape), it_values(layout.stride)   # a symbolic ? cannot be drawn and says so
        self.folded = folded(layout)
        self.title = str(layout)
        self.key_name = "offset"
        self.selected = None if selected is None else float(selected)
        self.bounds = offset_bounds(layout)
        # offsets past 2**53 are not exact in the float64 keys: their labels come from the int64 offsets
        self.exact_labels = max(abs(self.bounds[0]), abs(self.bounds[1])) >= EXACT
        self.values = values
        self.element_bits = element_bits   # what 'bank' and 'chunk' need: an offset's byte address
        if values is not None and int(np.prod(values.shape)) != self.rows.n * self.cols.n:
            raise ValueError(f"Expected values with {self.rows.n * self.cols.n} elements for {layout}, but got shape {values.shape}.")
        self.notes = []
        if type(layout.shape) is tuple and len(layout.shape) > 2:
            self.notes.append(f"rank {len(layout.shape)}: modes 1..{len(layout.shape) - 1} folded into columns")
        if type(layout) is ComposedLayout:   # the title's notation, and the other one explained here
            if layout.ptr_bits is not None:
                self.notes.append(f"swizzled: Sw{str(layout.cute_swizzle)[1:]} permutes the byte addresses of {layout.ptr_bits}-bit "
                                  f"elements (CuTe C++'s notation); a cell shows the element offset, on which the same "
                                  f"swizzle is {layout.inner} (CuTe DSL's notation)")
            else:
                self.notes.append(f"swizzled: each cell is {layout.inner}({layout.offset} + the axes' shape:stride)")
        for name, ax in (("rows", self.rows), ("columns", self.cols)) if type(layout) is ComposedLayout else ():
            if ax.shape is not None and type(ax.shape) is tuple:   # a nested mode's labels are natural coordinates
                flat = [int(x) for x in it.flatten(ax.shape)]
                if sum(x > 1 for x in flat) < 2:
                    continue
                terms = " + ".join([chr(105 + k) if k == 0 else f"{int(np.prod(flat[:k]))}*{chr(105 + k)}"
                                    for k in range(len(flat))])
                self.notes.append(f"{name} labelled ({','.join(chr(105 + k) for k in range(len(flat)))}) of "
                                  f"{it.format_inttuple(ax.shape)}: {name[:-1] if name == 'rows' else 'column'} {terms}")
        if type(layout) is F2Layout:
            self.notes.append("F2: each cell is the XOR of the bases ([b0,b1,...], or d, 2d, 4d... for a stride d) "
                              "of its coordinate's bits")
        outer = layout.outer if type(layout) is ComposedLayout else layout
        self._vshape = it_values(outer.shape)
        self.modes = mode_paths(self._vshape)
        nested = [m for m in self.modes if len(m) > 1]
        self.tile = (default_tile(self.rows), default_tile(self.cols))
        self.mode = nested[0] if nested else self.modes[0]
        self.set_color(color_by, color_layout, tile=tile, mode=mode)

    @property
    def shape(self) -> tuple:
        return (self.rows.n, self.cols.n)

    def _check_tile(self, tile) -> tuple:
        if (type(tile) is not tuple or len(tile) != 2 or any(type(x) is not int or x < 1 for x in tile)):
            raise ValueError(f"Expected tile as (rows, cols) of positive ints, but got {tile!r}.")
        return tile

    def _check_mode(self, mode) -> tuple:
        path = (mode,) if type(mode) is int else mode
        if path not in self.modes:
            names = ", ".join(str(m) for m in self.modes[:12]) + (", ..." if len(self.modes) > 12 else "")
            raise ValueError(f"Expected mode to be one of the layout's (sub-)modes {names}, but got {mode!r}.")
        return path

    def set_color(self, color_by: str, color_layout: Layout | None = None, *, tile: tuple | None = None,
                  mode: tuple | int | None = None) -> None:
        """Choose the colouring; ``tile`` and ``mode`` (kept when None) are what 'tile' and 'mode' colour by."""
        n = self.rows.n * self.cols.n
        if color_by not in COLOR_BY:
            raise ValueError(f"Expected color_by to be one of {', '.join(COLOR_BY)}, but got {color_by!r}.")
        if color_by == "layout":
            if color_layout is None:
                raise ValueError("Expected a color_layout when color_by='layout', but got None.")
            if type(color_layout) is not Layout:
                raise TypeError(f"Expected color_layout to be a wb.Layout, but got {type(color_layout).__name__}.")
            if int(color_layout.size) != n:
                raise ValueError(f"Expected a color_layout of size {n}, but got {color_layout} of size {color_layout.size}.")
        if color_by == "value" and self.values is None:
            raise ValueError("Expected a tensor with host values when color_by='value', but got a layout only.")
        if color_by in ("bank", "chunk") and self.element_bits is None:
            raise ValueError(f"Expected an element type (element_type=wb.Float16, say) to colour by {color_by}: an "
                             f"offset's bank depends on the element's size, but got a layout only.")
        if tile is not None:
            self.tile = self._check_tile(tile)
        if mode is not None:
            self.mode = self._check_mode(mode)
        self.color_by, self.color_layout = color_by, color_layout
        self.scale = color_by in ("offset", "value")
        self.palette = {"bank": BANK_PALETTE, "chunk": CHUNK_PALETTE}.get(color_by, SEQUENTIAL if self.scale else QUALITATIVE)
        if color_by == "value":
            v = np.asarray(self.values, dtype=float)
            self.value_bounds = (float(np.nanmin(v)), float(np.nanmax(v))) if v.size else (0.0, 0.0)

    def bank_of(self, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bank, 16-byte chunk within the 128-byte row of banks) of each offset's first byte."""
        byte = np.asarray(offsets, np.int64) * self.element_bits // 8
        return (byte // BANK_BYTES) % BANKS, (byte // CHUNK_BYTES) % CHUNKS

    @property
    def legend(self) -> dict:
        q = len(QUALITATIVE)
        if self.color_by in ("bank", "chunk"):   # a cycle: the hue wheel, its ends named
            bank = self.color_by == "bank"
            n = BANKS if bank else CHUNKS
            return {"kind": "scale", "label": f"colour: shared-memory {'bank' if bank else '16-byte chunk'} "
                    f"({self.element_bits}-bit elements)", "lo": 0, "hi": n - 1, "stops": list(self.palette),
                    "note": (f"bank = (byte address / {BANK_BYTES}) mod {BANKS}" if bank else
                             f"chunk = (byte address / {CHUNK_BYTES}) mod {CHUNKS}: the 4 banks a 128-bit access reads")
                    + "; hover a cell for its bank; a swizzle permutes them row by row"}
        if self.color_by == "offset":
            lo, hi = self.bounds
            return {"kind": "scale", "label": "colour: offset", "lo": lo, "hi": hi,
                    "note": "a position on this scale; cell labels give exact offsets"}
        if self.color_by == "value":
            lo, hi = self.value_bounds
            return {"kind": "scale", "label": "colour: tensor value", "lo": f"{lo:.4g}", "hi": f"{hi:.4g}"}
        if self.color_by in ("mode", "tile"):   # numbered categories: each swatch says which numbers it stands for
            pr, pc = self.tile
            if self.color_by == "mode":
                size = _leaf_span(self._vshape, self.mode)[1]
                what, name = f"coordinate in {mode_name(self.layout, self.mode)}", "coordinate"
            else:
                size = -(-self.rows.n // pr) * -(-self.cols.n // pc)
                what, name = f"tile of {pr}x{pc} cells (numbered down the columns)", "tile"
            entries = [[QUALITATIVE[k], f"{name} {k}" + (f", {k + q}, ..." if size > k + q else "")]
                       for k in range(min(q, size))]
            rep = f" mod {q} (repeats every {q})" if size > q else ""
            out = {"kind": "swatches", "label": f"colour: {what}{rep}", "entries": entries}
            if self.color_by == "tile":
                out["note"] = f"{size} tiles; tile=(rows, cols) sets their size"
            return out
        what = {"row": "row index", "column": "column index", "layout": f"{self.color_layout}(index)"}[self.color_by]
        kinds = {"row": self.rows.n, "column": self.cols.n, "layout": q}[self.color_by]
        if self.color_by != "layout" and kinds <= q:   # every row (column) its own colour: nothing repeats
            entries = [[QUALITATIVE[k], f"{what} {k}"] for k in range(kinds)]
            return {"kind": "swatches", "label": f"colour: {what}", "entries": entries}
        entries = [[QUALITATIVE[k], f"{what} mod {q} = {k}"] for k in range(min(q, kinds))]
        return {"kind": "swatches", "label": f"colour: {what} mod {q} (repeats every {q})", "entries": entries}

    def offsets_at(self, r: np.ndarray, c: np.ndarray) -> np.ndarray:
        """The exact (int64) offsets of a window: what read-outs and labels show."""
        return window_offsets(self.folded, r, c)

    def keys_at(self, r: np.ndarray, c: np.ndarray) -> np.ndarray:
        return self.offsets_at(r, c).astype(np.float64)

    def _values_at(self, r: np.ndarray, c: np.ndarray) -> np.ndarray:
        flat = r[:, None] + self.rows.n * c[None, :]            # the 1-D (colexicographic) index
        return self.values[np.unravel_index(flat, self.values.shape, order="F")]

    def quantity_at(self, r: np.ndarray, c: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """What a scale colours (an offset or a value), so an aggregate can be coloured by its mean."""
        return np.asarray(self._values_at(r, c), float) if self.color_by == "value" else keys

    def colors_of(self, quantity: np.ndarray) -> np.ndarray:
        lo, hi = self.value_bounds if self.color_by == "value" else self.bounds
        return scale_indices(quantity, lo, hi)

    def colors_at(self, r: np.ndarray, c: np.ndarray, keys: np.ndarray) -> np.ndarray:
        q = len(QUALITATIVE)
        if self.scale:
            return self.colors_of(self.quantity_at(r, c, keys))
        if self.color_by == "row":
            idx = np.broadcast_to(r[:, None], keys.shape)
        elif self.color_by == "column":
            idx = np.broadcast_to(c[None, :], keys.shape)
        elif self.color_by == "tile":
            pr, pc = self.tile
            idx = (r // pr)[:, None] + ((self.rows.n + pr - 1) // pr) * (c // pc)[None, :]
        elif self.color_by in ("bank", "chunk"):
            bank, chunk = self.bank_of(keys)
            return (bank if self.color_by == "bank" else chunk).astype(np.uint8)
        elif self.color_by == "mode":   # the mode's digits of the 1-D index (its coordinate, colexicographic)
            before, size = _leaf_span(self._vshape, self.mode)
            flat = r[:, None].astype(np.int64) + self.rows.n * c[None, :].astype(np.int64)
            idx = (flat // before) % size
        else:  # a colour layout is evaluated at the same 1-D index as the drawn layout
            flat = (r[:, None] + self.rows.n * c[None, :]).reshape(-1)
            C = self.color_layout
            idx = mode_offsets(C.shape, C.stride, flat).reshape(keys.shape)
        return np.mod(idx, q).astype(np.uint8)

    def texts_at(self, r: np.ndarray, c: np.ndarray, keys: np.ndarray):
        if self.values is not None:
            return [_format_value(v) for v in self._values_at(r, c).reshape(-1).tolist()]
        if self.exact_labels:
            return [str(x) for x in self.offsets_at(r, c).reshape(-1).tolist()]
        return None

    def label_chars(self) -> int:
        if self.values is not None:
            nr, nc = self.shape
            r, c = np.arange(min(nr, 64)), np.arange(min(nc, 64))
            return max((len(t) for t in self.texts_at(r, c, None)), default=1)
        return max(len(str(b)) for b in self.bounds)

    def to_grid(self, limit: int = MAX_LABELS) -> Grid:
        """All cells at once (small layouts only: the eager form that tools and tests read)."""
        nr, nc = self.shape
        if nr * nc > limit:
            raise ValueError(f"Expected a layout of at most {limit} cells to enumerate, but got {self.layout} with "
                             f"{nr * nc}; views of large layouts compute windows (LayoutSource.keys_at).")
        r, c = np.arange(nr), np.arange(nc)
        keys = self.keys_at(r, c)
        g = Grid(title=self.title, rows=self.rows, cols=self.cols, keys=keys.reshape(-1),
                 colors=self.colors_at(r, c, keys).reshape(-1), texts=self.texts_at(r, c, keys),
                 palette=self.palette, selected=self.selected, notes=list(self.notes), legend=self.legend,
                 scale=self.scale)
        return g


def layout_grid(layout: Layout, color_by: str = "offset", color_layout: Layout | None = None,
                selected: int | None = None) -> Grid:
    """The grid of a (small) layout: each cell is labelled and keyed by its offset."""
    return LayoutSource(layout, color_by, color_layout, selected).to_grid()
