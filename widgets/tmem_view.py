"""Blackwell views: one CTA's tensor memory (``TmemView``), one UMMA atom (``MMAView(umma_atom)``, panels built here)
and the two UMMA descriptors (``UmmaSmemDescView``, ``UmmaInstrDescView``).

``TmemView(acc, copy=None, thread=None, allocator=None)`` draws the 128 lanes x 512 columns of one CTA's TMEM
(``workbench.atoms.tmem``): the allocations coloured, each cell of the accumulator ``acc`` (a ``TmemTensor``, e.g.
``atom.make_fragment_C(atom.partition_shape_C((M, N)))``) labelled with its (m, n), heavier rules every 32 lanes (the
quarter warp w of a warpgroup may touch: lanes 32*(w%4)..+31) and every 32 columns (the allocation granule).  With a
tcgen05 ld/st tiled copy (``wb.make_tmem_copy``) each cell also says which thread's register holds it, and picking a
thread outlines its cells.  Every cell is the TMEM model's own answer (``TmemTensor.lane_column``), never recomputed.

Sizes: a 128 x 256 fp32 accumulator is 32768 cells.  The live view is the grid canvas of every large view (an
overview heat map, zoom to readable cells); the static picture is an overview of the whole TMEM (one pixel block a
cell, lane quarters and allocations marked, the picked thread's cells in red) above a zoom window of readable,
labelled cells (the picked thread's quarter, or the accumulator's origin; ``window=`` picks another).

Nothing here ran on a Blackwell GPU: the objects are CuTe's (checked against CuTe C++ 4.2 with g++), drawn on the host.
"""

from __future__ import annotations

import base64
import html

import ipywidgets as W
import numpy as np

from workbench.atoms.sm100 import UmmaAtom, UmmaBlockScaledAtom
from workbench.atoms.tmem import TMEM_COLUMNS, TMEM_LANES, TmemAllocator, TmemTensor, TmemTiledCopy, tmem_column
from workbench.atoms.umma_desc import (
    _LAYOUT_NAME,
    UmmaInstrDescriptor,
    UmmaInstrDescriptorBlockScaled,
    UmmaSmemDescriptor,
)
from workbench.layout import Layout, complement, make_layout
from workbench.layout import inttuple as it
from workbench.layout import shape as it_shape

from .base import SvgFallback
from .canvas import GridCanvas
from .grid import TV_PALETTE, Axis, Grid
from .svg import _png, _rgb, grid_svg, table_svg, vstack_svg

__all__ = ["TmemView", "UmmaSmemDescView", "UmmaInstrDescView", "umma_panels", "tmem_cells"]

FREE = "#f4f4f4"                                   # columns no allocation holds
ALLOC = ("#77aadd", "#ee8866", "#44bb99", "#eedd88", "#99ddff", "#ffaabb", "#bbcc33", "#aaaa00")
QUARTER = ("#c6dbef", "#fdd0a2", "#c7e9c0", "#dadaeb")
SELECTED = "#d7191c"
PALETTE = (FREE,) + ALLOC + QUARTER + TV_PALETTE + ("#ffffff", SELECTED)
_A0, _Q0, _T0, _WHITE, _RED = 1, 1 + len(ALLOC), 1 + len(ALLOC) + len(QUARTER), len(PALETTE) - 2, len(PALETTE) - 1
COLOR_BY = ("allocation", "tensor", "quarter", "thread")
SHOW = ("mn", "tv")
ZOOM_LANES, ZOOM_COLUMNS = 32, 16                  # the static picture's window of labelled cells


def _sizes(shape) -> list:
    return [int(it.product(s)) for s in shape] if type(shape) is tuple else [int(shape)]


def accumulator_coordinates(tensor: TmemTensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(m, n, buffer) of every index of a TMEM tensor (colexicographic).  An accumulator ``((M_MMA, N_MMA), MMA_M,
    MMA_N, ...)`` gives m = m' + M_MMA * i, n = n' + N_MMA * j, and the further modes' index as the buffer; a
    rank-2 tensor ``(M, N, ...)`` gives its two coordinates and the rest as the buffer."""
    shape = tensor.layout.shape
    n_all = int(tensor.layout.size)
    i = np.arange(n_all, dtype=np.int64)
    if type(shape) is tuple and len(shape) >= 2 and type(shape[0]) is tuple and len(shape[0]) == 2:
        mm, nn = int(it.product(shape[0][0])), int(it.product(shape[0][1]))
        rest = _sizes(shape[1:])
        m_in, n_in, r = i % mm, (i // mm) % nn, i // (mm * nn)
        tm = r % rest[0]
        r = r // rest[0]
        tn = r % rest[1] if len(rest) > 1 else 0 * r
        buf = r // rest[1] if len(rest) > 1 else 0 * r
        return m_in + mm * tm, n_in + nn * tn, buf
    sizes = _sizes(shape)
    mm = sizes[0]
    nn = sizes[1] if len(sizes) > 1 else 1
    return i % mm, (i // mm) % nn, i // (mm * nn)


def copy_register_cells(tc: TmemTiledCopy, tensor: TmemTensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(thread, register, tensor index) of every register a tcgen05 ld (st) tiled copy fills (drains) over ``tensor``:
    the copy's register-side TV layout (a load's destination, a store's source) on its by-mode tiler, repeated over
    the tensor's tiles as CuTe's partition does (register v + V * tile, tiles colexicographic)."""
    load = tc.atom.instruction == "tcgen05_ld"
    tv = tc.layout_dst_tv_tiled if load else tc.layout_src_tv_tiled
    T, V = int(it.product(tv.shape[0])), int(it.product(tv.shape[1]))
    tiler = [t if isinstance(t, Layout) else make_layout(t) for t in tc.tiler_mn]
    flat = _sizes(tensor.layout.shape)
    if len(flat) != len(tiler):
        raise ValueError(f"TmemView: the copy's tiler has {len(tiler)} modes and the tensor {tensor} has {len(flat)}: "
                         "pass on= the TMEM tensor the copy was made for (wb.make_tmem_copy(atom, tensor)).")
    tsz = [int(t.size) for t in tiler]
    for f, s in zip(flat, tsz):
        if f % s:
            raise ValueError(f"TmemView: the copy's tile {tuple(tsz)} does not divide the tensor's modes {tuple(flat)}.")
    k = np.asarray(tv.offsets(), np.int64).reshape(V, T).T            # (T, V) -> index in the tile
    tiles = [complement(t, f) for t, f in zip(tiler, flat)]             # CuTe's zipped_divide: the tiles' own modes
    reps = [f // s for f, s in zip(flat, tsz)]
    nrep = int(np.prod(reps))
    threads, regs, index = [], [], []
    for r in range(nrep):
        rest, cr = r, []
        for n in reps:                                                 # this tile's coordinate among the tiles
            cr.append(rest % n)
            rest //= n
        kk, crd, stride = k.copy(), np.zeros_like(k), 1
        for j, (t, s) in enumerate(zip(tiler, tsz)):
            a = kk % s
            kk //= s
            crd += (_eval(t, a) + int(tiles[j](cr[j]))) * stride
            stride *= flat[j]
        threads.append(np.repeat(np.arange(T), V))
        regs.append(np.tile(np.arange(V), T) + V * r)
        index.append(crd.reshape(-1))
    return np.concatenate(threads), np.concatenate(regs), np.concatenate(index)


def _eval(layout: Layout, idx: np.ndarray) -> np.ndarray:
    return np.asarray(layout.offsets(), np.int64)[idx]


def tmem_cells(tensor: TmemTensor, columns: int = TMEM_COLUMNS) -> dict:
    """Per cell of the 128 x ``columns`` grid: the tensor index living there (-1 none; the first of the cell's
    32-bit word), and per sub-word (a byte of a scale-factor fragment, a half of a 16-bit tensor) the first index
    there (``"subs"``, lanes x columns x values a column), from the TMEM model's ``lane_column`` arithmetic (what
    the view draws; tests compare every index)."""
    n = int(tensor.layout.size)
    off = np.asarray(tensor.layout.offsets(), np.int64) + tensor.offset
    dp = tensor.dp
    per = dp // 65536
    lane = tmem_lane0(tensor) + off // dp
    col = tmem_column(tensor.base) + (off % dp) // per
    sub = (off % dp) % per
    idx = np.full((TMEM_LANES, columns), -1, np.int64)
    subs = np.full((TMEM_LANES, columns, per), -1, np.int64)
    inside = (lane < TMEM_LANES) & (col < columns)
    if not inside.all():
        j = int(np.flatnonzero(~inside)[0])
        raise ValueError(f"TmemView: element {j} of {tensor} lies at lane {int(lane[j])}, column {int(col[j])}, outside "
                         f"the {TMEM_LANES} x {columns} grid drawn (columns=).")
    order = np.lexsort((np.arange(n), sub))[::-1]          # the first value of a 32-bit column wins its label
    idx[lane[order], col[order]] = np.arange(n)[order]
    rev = np.arange(n)[::-1]                               # the first index of each sub-word wins it
    subs[lane[rev], col[rev], sub[rev]] = rev
    return {"index": idx, "lane": lane, "column": col, "sub": sub, "subs": subs}


def tmem_lane0(tensor: TmemTensor) -> int:
    return (tensor.base >> 16) & 0xFFFF


def is_sf_fragment(tensor: TmemTensor) -> bool:
    """Whether ``tensor`` is a scale-factor fragment (CuTe's ``tmem_sf_frg``: ((MN x copies, (VecSize, NSF)),
    num_MMA_MN, num_MMA_K, ...), the VecSize mode of stride 0)."""
    shp, std = tensor.layout.shape, tensor.layout.stride
    if type(shp) is not tuple or len(shp) < 3 or type(shp[0]) is not tuple or len(shp[0]) != 2:
        return False
    k, ks = shp[0][1], std[0][1]
    return (type(k) is tuple and len(k) == 2 and type(shp[0][0]) is tuple and len(shp[0][0]) in (2, 3)
            and all(int(s) == 0 for s in it.flatten(ks[0])))


def sf_coordinates(tensor: TmemTensor) -> dict:
    """Per index of a scale-factor fragment (``atom.make_fragment_SFA/SFB``), what CuTe's coordinates say it is:
    ``row`` (of A's M, or B's N, over the MMA tiles), ``block`` (the K block of VecSize values it scales, over the
    MMA's K tiles), ``copy`` (which replica: the fragment's first mode is MMA_MN rows x 4 copies, one a lane
    quarter, or x 2 for the 2x2 data path) and ``buffer`` (further modes).  The first mode ((32, MN/32), 4) or
    ((32, MN/64), 2, 2) is read colexicographically: j = row + MMA_MN * copy."""
    if not is_sf_fragment(tensor):
        raise ValueError(f"sf_coordinates: expected a scale-factor fragment ((MN, (VecSize, NSF)), num_MMA_MN, "
                         f"num_MMA_K, ...) (atom.make_fragment_SFA(...)), but got {tensor}.")
    shp = tensor.layout.shape
    first, (vs, nsf) = shp[0]
    rep = int(it.product(first[-1]))
    n_first = int(it.product(first))
    mn = n_first // rep
    vs, nsf = int(it.product(vs)), int(it.product(nsf))
    n_mn, n_k = int(it.product(shp[1])), int(it.product(shp[2]))
    i = np.arange(int(tensor.layout.size), dtype=np.int64)
    j, r = i % n_first, i // n_first
    s = (r // vs) % nsf
    r //= vs * nsf
    tm, r = r % n_mn, r // n_mn
    tk, buf = r % n_k, r // n_k
    return {"row": j % mn + mn * tm, "block": s + nsf * tk, "copy": j // mn, "buffer": buf, "mn": mn, "vs": vs,
            "copies": rep}


def pair_coordinates(tensor: TmemTensor, atom) -> list:
    """(m, n, buffer) of every index of one CTA's half of a 2-SM accumulator, per CTA of the pair: the fragment's
    first mode (M/2, N) is value j of the atom's CLayout for thread (CTA) v, C's offset ``tv_layout_C(v, j)``, and
    the further modes the atom's M and N tiles (``partition_shape_C``)."""
    m_atom, n_atom, _ = atom.shape_mnk
    tv = atom.tv_layout_C
    nv = int(tv[1].size)
    shape = tensor.layout.shape
    if not (type(shape) is tuple and len(shape) >= 3 and type(shape[0]) is tuple and int(it.product(shape[0])) == nv):
        raise ValueError(f"TmemView: pair= expects the accumulator of the pair's atom (atom.make_fragment_C("
                         f"atom.partition_shape_C((M, N)))): its first mode of {nv} values, but got {tensor}.")
    rest = _sizes(shape[1:])
    i = np.arange(int(tensor.layout.size), dtype=np.int64)
    j, r = i % nv, i // nv
    tm, r = r % rest[0], r // rest[0]
    tn, buf = (r % rest[1], r // rest[1]) if len(rest) > 1 else (0 * r, r)
    offs = np.asarray(tv.offsets(), np.int64).reshape(nv, int(tv[0].size))   # value-major: (v, thread)
    out = []
    for cta in range(int(tv[0].size)):
        off = offs[j, cta]
        out.append((off % m_atom + m_atom * tm, off // m_atom + n_atom * tn, buf))
    return out


def _allocations(allocator, tensors, columns):
    if allocator is None:   # what one tcgen05.alloc per tensor takes: a power of two >= 32 from its base column
        spans = []
        for t, c in tensors:
            c0 = tmem_column(t.base)
            used = int(c["column"].max()) - c0 + 1
            spans.append([c0, max(32, 1 << max(0, int(used - 1).bit_length()))])
        spans.sort()
        merged = []
        for c0, nc in spans:                      # tensors in one allocation (or overlapping guesses): one span
            if merged and c0 < merged[-1][0] + merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], c0 + nc - merged[-1][0])
            else:
                merged.append([c0, nc])
        return [tuple(s) for s in merged], True
    if isinstance(allocator, TmemAllocator):
        return sorted(allocator.allocations.items()), False
    if type(allocator) in (list, tuple) and all(type(a) in (tuple, list) and len(a) == 2 and all(type(x) is int for x in a)
                                                for a in allocator):
        return sorted((int(a), int(b)) for a, b in allocator), False
    raise TypeError(f"TmemView: expected allocator= a TmemAllocator or a list of (first column, columns), but got "
                    f"{type(allocator).__name__}.")


class _OffsetAxis(Axis):
    """An axis whose labels are numbers from ``start`` (a window of lanes or columns)."""

    def __init__(self, title, n, groups, start):
        super().__init__(title, n, groups, False, None)
        self.start = start

    def label(self, i: int) -> str:
        return str(self.start + int(i))


class _PairAxis(Axis):
    """The columns of a CTA pair side by side: CTA c's column k is drawn at c * columns + k, labelled ``c:k``."""

    def __init__(self, title, columns, ctas, start=0):
        super().__init__(title, columns * ctas, [32, columns], False, None)
        self.columns, self.start = columns, start

    def label(self, i: int) -> str:
        c, k = divmod(self.start + int(i), self.columns)
        return f"{c}:{k}"


class TmemSource:
    """The grid source (``widgets.tiles`` protocol) of TMEM (one CTA's, or a CTA pair's side by side) with its
    tensors, allocations and an optional tcgen05 copy: keys are the copy's threads (or the first tensor's indices),
    colours by ``color_by``."""

    def __init__(self, view, tid, tidx, alloc, thr, reg, columns, color_by, show, title, notes):
        self.view, self.tid, self.tidx, self.columns = view, tid, tidx, columns
        self.alloc_of, self.thr, self.reg = alloc, thr, reg
        self.ctas = tid.shape[1] // columns
        self.rows = Axis("lane (TMEM data path; rules every 32 lanes: one warp's quarter)", TMEM_LANES, [32], False)
        self.cols = (Axis("column (32 bits; rules every 32 columns: the allocation granule)", columns, [32], False)
                     if self.ctas == 1 else _PairAxis("CTA:column (CTA 0's TMEM, then CTA 1's; rules every 32 columns)",
                                                      columns, self.ctas))
        self.title, self.notes = title, notes
        self.palette = PALETTE
        self.scale = False
        self.selected = None
        self.key_name = "thread" if thr is not None else "index"
        self.color_by, self.show = color_by, show

    @property
    def shape(self):
        return (TMEM_LANES, self.tid.shape[1])

    def keys_at(self, r, c):
        if self.thr is not None:
            k = self.thr[np.ix_(r, c)]
        else:
            k = np.where(self.tid[np.ix_(r, c)] == 0, self.tidx[np.ix_(r, c)], -1)
        return np.where(k >= 0, k, np.nan).astype(np.float64)

    def colors_at(self, r, c, keys):
        own = self.tid[np.ix_(r, c)] >= 0
        if self.color_by == "allocation":
            a = self.alloc_of[np.ix_(r, c)]
            return np.where(a >= 0, _A0 + a % len(ALLOC), 0).astype(np.uint8)
        if self.color_by == "tensor":
            t = self.tid[np.ix_(r, c)]
            return np.where(t >= 0, _A0 + t % len(ALLOC), 0).astype(np.uint8)
        if self.color_by == "quarter":
            q = np.broadcast_to((r // 32)[:, None], own.shape)
            return np.where(own, _Q0 + q, 0).astype(np.uint8)
        t = self.thr[np.ix_(r, c)]
        return np.where(t >= 0, _T0 + t % 8, 0).astype(np.uint8)

    def text(self, lane, col) -> str:
        if self.show == "tv":
            t = int(self.thr[lane, col])
            return f"T{t}V{int(self.reg[lane, col])}" if t >= 0 else ""
        cta, k = divmod(int(col), self.columns)
        return self.view._label(lane, k, cta)

    def texts_at(self, r, c, keys):
        return [self.text(i, j) for i in r.tolist() for j in c.tolist()]

    def label_chars(self):
        if self.show == "tv":
            return len(f"T{int(self.thr.max())}V{int(self.reg.max())}")
        return self.view._label_chars()

    @property
    def legend(self):
        if self.color_by == "allocation":
            return {"kind": "swatches", "label": "colour: TMEM allocation (tcgen05.alloc)",
                    "entries": [[FREE, "not allocated"]] + [[ALLOC[k % len(ALLOC)], f"allocation {k}: columns {c0}.."
                                                             f"{c0 + nc - 1}"] for k, (c0, nc) in enumerate(self.allocs)]}
        if self.color_by == "tensor":
            return {"kind": "swatches", "label": "colour: the tensor a cell holds",
                    "entries": [[FREE, "none"]] + [[ALLOC[k % len(ALLOC)], name]
                                                   for k, name in enumerate(self.view.names)]}
        if self.color_by == "quarter":
            return {"kind": "swatches", "label": "colour: lane quarter of the tensors' cells",
                    "entries": [[QUARTER[q], f"lanes {32 * q}..{32 * q + 31}: warp {q} of each warpgroup (warps {q}, "
                                 f"{q + 4}, ...)"] for q in range(4)]}
        return {"kind": "swatches", "label": "colour: the copy's thread mod 8 (CuTe's TV colours)",
                "entries": [[TV_PALETTE[k], f"T{k}, T{k + 8}, ..."] for k in range(8)]}

    def window(self, lane0, col0, nl, nc) -> Grid:
        """A Grid of the cells lanes lane0.. x grid columns col0.. (eager, labelled: the static picture's zoom)."""
        r, c = np.arange(lane0, lane0 + nl), np.arange(col0, col0 + nc)
        keys = self.keys_at(r, c)
        cta, k0 = divmod(col0, self.columns)
        where = f"columns {k0}..{k0 + nc - 1}" + (f" of CTA {cta}" if self.ctas > 1 else "")
        cols = (_OffsetAxis("(32-bit TMEM columns)", nc, [], k0) if self.ctas == 1 else
                _PairAxis("(CTA:column)", self.columns, 1, col0))
        if self.ctas > 1:
            cols.n, cols.groups = nc, []
        g = Grid(title=f"zoom: lanes {lane0}..{lane0 + nl - 1}, {where}",
                 rows=_OffsetAxis("(TMEM lanes)", nl, [32] if nl > 32 else [], lane0),
                 cols=cols, keys=keys.reshape(-1),
                 colors=self.colors_at(r, c, keys).reshape(-1), texts=self.texts_at(r, c, keys),
                 palette=self.palette, selected=self.selected, key_name=self.key_name, legend=self.legend)
        return g


def _as_tensors(acc):
    if isinstance(acc, TmemTensor):
        return {"C": acc}, False
    if type(acc) is dict and acc and all(type(k) is str and k for k in acc) and all(isinstance(v, TmemTensor)
                                                                                   for v in acc.values()):
        return dict(acc), True
    raise TypeError(f"TmemView: expected a TMEM tensor (atom.make_fragment_C(atom.partition_shape_C((M, N))), a "
                    f"cfg.tmem_* of the Blackwell rung) or a dict of named TMEM tensors ({{'C': acc, 'SFA': tSFA, "
                    f"'SFB': tSFB}}), but got {type(acc).__name__}.")


class TmemView(SvgFallback, W.VBox):
    """``TmemView(acc, copy=None, on=None, thread=None, allocator=None, color_by=None, show=None, columns=None,
    window=None, pair=None)``: one CTA's tensor memory with the TMEM tensor ``acc`` in it, or with several named
    tensors (``acc`` a dict, e.g. ``{"C": acc, "SFA": tSFA, "SFB": tSFB}`` of a block-scaled MMA: scale-factor
    fragments are recognised by their shape and each cell names the A rows (B columns) and K blocks its bytes scale).

    ``copy``: a tcgen05 ld/st tiled copy (``wb.make_tmem_copy(atom, t)``) over ``on`` (default the first tensor;
    e.g. the rung's ``cfg.tmem_load`` over ``cfg.tmem_chunk``); each cell then names the thread and register it goes
    to, and ``thread`` picks one whose cells are outlined.  ``allocator``: a ``TmemAllocator`` or (first column,
    columns) pairs; by default the one allocation each tensor needs.  ``color_by``: 'allocation', 'tensor',
    'quarter' (lane quarter, i.e. the warp that may read it) or 'thread' (the copy's).  ``show``: cell labels 'mn'
    (an accumulator's (m, n), ``b:(m,n)`` in buffer b > 0; a scale-factor cell's ``name row kblocks``) or 'tv'
    (the copy's ``T#V#``).  ``window=(lane, column)``: the first cell of the static picture's zoom (a pair's
    column counts on from CTA 0's into CTA 1's).  ``pair``: a 2x1SM atom whose accumulator ``acc`` is (one CTA's
    half, as CuTe's ``partition_shape_C`` and ``tmem_frg`` give it): both CTAs' TMEM side by side, each cell
    labelled with the C(m, n) the atom's CLayout gives that CTA.  ``columns``: the columns drawn a CTA (default
    512, a pair: its allocation)."""

    def __init__(self, acc, copy=None, on=None, thread=None, allocator=None, color_by=None, show=None,
                 columns=None, window=None, pair=None):
        tensors, named = _as_tensors(acc)
        from workbench.atoms.sm100 import _UmmaCommon
        if pair is not None and not (isinstance(pair, _UmmaCommon) and pair.cta_group == 2):
            raise TypeError(f"TmemView: expected pair= a 2x1SM UMMA atom (wb.mma_atom('SM100_MMA_..._2x1SM_SS', ...)), "
                            f"but got {pair!r}.")
        if columns is not None and (type(columns) is not int or not 32 <= columns <= TMEM_COLUMNS or columns % 32):
            raise ValueError(f"TmemView: expected columns a multiple of 32 in 32..512, but got {columns!r}.")
        if copy is not None and not isinstance(copy, TmemTiledCopy):
            raise TypeError(f"TmemView: expected copy= a tcgen05 ld/st tiled copy (wb.make_tmem_copy(atom, tensor)), "
                            f"but got {type(copy).__name__}.")
        if on is not None and (copy is None or not isinstance(on, TmemTensor)):
            raise TypeError("TmemView: on= is the TMEM tensor the copy= was made for (a TmemTensor, with copy=).")
        self.names = list(tensors)
        self.tensors = [tensors[k] for k in self.names]
        self.roles = ["sf" if is_sf_fragment(t) else "acc" for t in self.tensors]
        if pair is not None and "sf" in self.roles:
            raise ValueError("TmemView: pair= draws a 2-SM accumulator; draw scale-factor fragments one CTA at a time "
                             "(without pair=).")
        acc = self.tensors[0]
        self.pair, self.ctas = pair, (2 if pair is not None else 1)
        cells = [tmem_cells(t, TMEM_COLUMNS) for t in self.tensors]
        if columns is None:
            columns = TMEM_COLUMNS
            if pair is not None:
                last = max(int(c["column"].max()) for c in cells) + 1
                columns = min(TMEM_COLUMNS, max(32, 1 << (last - 1).bit_length()))
        cells = [tmem_cells(t, columns) for t in self.tensors]
        if on is None and copy is not None:   # a copy made for one (M, N) tile of an accumulator: that tile
            shp = acc.layout.shape
            two = type(shp) is tuple and len(shp) >= 2 and type(shp[0]) is tuple and len(shp[0]) == 2
            on = acc[((None, None),) + (0,) * (len(shp) - 1)] if two and len(copy.tiler_mn) == 2 else acc
        self.acc, self.copy, self.on = acc, copy, (on if on is not None else acc)
        self.cells = cells[0]
        self.all_cells = cells
        self.coords = []
        for t, role in zip(self.tensors, self.roles):
            if role == "sf":
                self.coords.append([sf_coordinates(t)])
            elif pair is not None:
                self.coords.append(pair_coordinates(t, pair))
            else:
                self.coords.append([accumulator_coordinates(t)])
        self.mn = self.coords[0][0] if self.roles[0] == "acc" else None
        tid = np.full((TMEM_LANES, columns), -1, np.int64)
        tidx = np.full((TMEM_LANES, columns), -1, np.int64)
        for k, c in enumerate(cells):
            mine = c["index"] >= 0
            clash = mine & (tid >= 0)
            if clash.any():
                ln, co = (int(x[0]) for x in np.nonzero(clash))
                raise ValueError(f"TmemView: tensors {self.names[int(tid[ln, co])]!r} and {self.names[k]!r} both hold "
                                 f"lane {ln}, column {co}: give them separate columns (with_base).")
            tid[mine], tidx[mine] = k, c["index"][mine]
        self.allocations, assumed = _allocations(allocator, list(zip(self.tensors, cells)), columns)
        alloc_of = np.full((TMEM_LANES, columns), -1, np.int64)
        for k, (c0, nc) in enumerate(self.allocations):
            alloc_of[:, c0:min(columns, c0 + nc)] = k
        thr = reg = None
        self.num_threads = 0
        if copy is not None:
            t, v, idx = copy_register_cells(copy, self.on)
            oc = tmem_cells(self.on, columns)
            thr = np.full((TMEM_LANES, columns), -1, np.int64)
            reg = np.full((TMEM_LANES, columns), -1, np.int64)
            thr[oc["lane"][idx], oc["column"][idx]] = t
            reg[oc["lane"][idx], oc["column"][idx]] = v
            self.num_threads = int(copy.size)
            self._copy_cells = (t, v, oc["lane"][idx], oc["column"][idx])
        tile = (lambda a: np.hstack([a] * self.ctas)) if self.ctas > 1 else (lambda a: a)
        color_by = color_by or ("thread" if copy is not None else "allocation")
        show = show or "mn"
        if color_by not in COLOR_BY or (color_by == "thread" and copy is None):
            raise ValueError(f"TmemView: expected color_by one of {', '.join(c for c in COLOR_BY if copy or c != 'thread')},"
                             f" but got {color_by!r}.")
        if show not in SHOW or (show == "tv" and copy is None):
            raise ValueError(f"TmemView: expected show one of {', '.join(s for s in SHOW if copy or s != 'tv')}, but got "
                             f"{show!r}.")
        notes = []
        for name, t, c, role in zip(self.names, self.tensors, cells, self.roles):
            lanes = (int(c["lane"].min()), int(c["lane"].max()))
            cols = (int(c["column"].min()), int(c["column"].max()))
            what = ""
            if role == "sf":
                sc = self.coords[self.names.index(name)][0]
                what = (f" (scale factors: {t.value_type}, one per {sc['vs']} values along K, {sc['copies']} copies "
                        f"of each, one a {'lane quarter' if sc['copies'] == 4 else '32-lane half of a 64-lane half'}; "
                        f"{t.dp // 65536} a 32-bit column)")
            elif t.dp > 65536:
                what = " (two values a 32-bit column; the label names the first)"
            notes.append(f"{name + ': ' if named else ''}{t.value_type}: {t}; lanes {lanes[0]}..{lanes[1]}, columns "
                         f"{cols[0]}..{cols[1]}{what}")
        notes.append("allocations: " + ", ".join(f"columns {c0}..{c0 + nc - 1} ({nc})" for c0, nc in self.allocations)
                     + (" (the tcgen05.alloc these tensors need; pass allocator= for yours)" if assumed else ""))
        if pair is not None:
            m_atom = pair.shape_mnk[0]
            notes.append(f"a CTA pair ({pair.family}, M = {m_atom}): each CTA holds its half in its own TMEM at the same "
                         f"addresses, CTA c the C rows its CLayout {pair.tv_layout_C} gives thread c "
                         f"({m_atom // 2} a CTA); CTA 0's columns on the left, CTA 1's on the right")
        notes.append("warp w of a warpgroup may tcgen05.ld/st lanes 32*(w%4)..32*(w%4)+31 only")
        if copy is not None:
            notes.append(f"copy: {copy.atom.name} x {copy.size} threads over {self.on}; labels T#V#: thread, register"
                         + (" (each CTA's epilogue)" if pair is not None else ""))
        notes.append("compiled and emulated here: no Blackwell GPU ran this")
        title = (f"TMEM of one CTA: {TMEM_LANES} lanes x {columns} columns of 32 bits" if pair is None else
                 f"TMEM of a CTA pair: {TMEM_LANES} lanes x {columns} columns of 32 bits in each CTA, side by side")
        self.source = TmemSource(self, tile(tid), tile(tidx), tile(alloc_of), None if thr is None else tile(thr),
                                 None if reg is None else tile(reg), columns, color_by, show, title, notes)
        self.source.allocs = self.allocations
        self._window = window
        if window is not None:
            if (type(window) is not tuple or len(window) != 2 or any(type(x) is not int for x in window)
                    or not 0 <= window[0] < TMEM_LANES or not 0 <= window[1] < columns * self.ctas):
                raise ValueError(f"TmemView: expected window=(lane, column) inside the 128 x {columns * self.ctas} grid, "
                                 f"but got {window!r}.")
        self.canvas = GridCanvas()
        self.canvas.describe = self.describe_grid
        self.canvas.show(self.source, self._subtitle())
        opts = [("none", -1)] + [(str(k), k) for k in range(self.num_threads)]
        self.thread_control = W.Dropdown(options=opts, value=-1, description="thread")
        self.thread_control.layout.display = None if copy is not None else "none"
        self.color_control = W.Dropdown(options=[c for c in COLOR_BY if copy is not None or c != "thread"],
                                        value=color_by, description="colour by")
        self.readout = W.HTML()
        self.thread = thread
        self.thread_control.observe(lambda ch: self._select(ch["new"]), "value")
        self.color_control.observe(self._recolor, "value")
        self.canvas.observe(self._on_click, "selected")
        super().__init__([W.HBox([self.thread_control, self.color_control], layout=W.Layout(flex_flow="row wrap")),
                          self.canvas, self.readout])

    # -- labels ----------------------------------------------------------------------------------------------
    def _sf_values(self, k, lane, column):
        """(sub-word, row, block, copy, buffer) of each byte of scale-factor tensor ``k`` at (lane, column)."""
        sc = self.coords[k][0]
        out = []
        for s, i in enumerate(self.all_cells[k]["subs"][lane, column].tolist()):
            if i >= 0:
                out.append((s, int(sc["row"][i]), int(sc["block"][i]), int(sc["copy"][i]), int(sc["buffer"][i])))
        return out

    def _label(self, lane, column, cta=0) -> str:
        k = int(self.source.tid[lane, column])
        if k < 0:
            return ""
        i = int(self.source.tidx[lane, column])
        if self.roles[k] == "sf":
            vals = self._sf_values(k, lane, column)
            rows = {(r, b) for _, r, _, _, b in vals}
            blocks = [bl for _, _, bl, _, _ in vals]
            if len(rows) == 1:
                (r, b), = rows
                span = (f"{blocks[0]}-{blocks[-1]}" if blocks == list(range(blocks[0], blocks[0] + len(blocks)))
                        and len(blocks) > 1 else ",".join(map(str, blocks)))
                return f"{self.names[k]} {f'{b}:' if b else ''}{r} k{span}"
            return "|".join(f"{r}k{bl}" for _, r, bl, _, _ in vals)
        m, n, b = (int(x[i]) for x in self.coords[k][cta])
        return f"({m},{n})" if b == 0 else f"{b}:({m},{n})"

    def _label_chars(self) -> int:
        w = 1
        for k, role in enumerate(self.roles):
            if role == "sf":
                sc = self.coords[k][0]
                w = max(w, len(f"{self.names[k]} {int(sc['buffer'].max()) or ''}:{int(sc['row'].max())} "
                               f"k{int(sc['block'].max())}-{int(sc['block'].max())}"))
            else:
                for m, n, b in self.coords[k]:
                    bb = int(b.max())
                    w = max(w, len(f"{bb}:({int(m.max())},{int(n.max())})" if bb else f"({int(m.max())},{int(n.max())})"))
        return w

    # -- state -----------------------------------------------------------------------------------------------
    @property
    def thread(self):
        v = self.thread_control.value
        return None if v < 0 else v

    @thread.setter
    def thread(self, t):
        if t is not None and (self.copy is None or type(t) is not int or not 0 <= t < self.num_threads):
            raise ValueError(f"TmemView: expected thread None{f' or an int in [0, {self.num_threads})' if self.copy else ''}"
                             f"{' (this view has no copy= whose threads to pick)' if self.copy is None else ''}, but got "
                             f"{t!r}.")
        if self.thread_control.value != (-1 if t is None else t):
            self.thread_control.value = -1 if t is None else t
        else:
            self._select(-1 if t is None else t)

    def _select(self, t):
        self.source.selected = None if t < 0 else float(t)
        self.canvas.selected = self.source.selected
        self.readout.value = "<pre>" + html.escape("\n".join(self._readout_lines())) + "</pre>"

    def _on_click(self, change):
        v = change["new"]
        t = int(v) if v is not None and self.copy is not None and v == int(v) and 0 <= v < self.num_threads else -1
        if self.thread_control.value != t:
            self.thread_control.value = t

    def _recolor(self, change):
        self.source.color_by = change["new"]
        self.canvas.show(self.source, self._subtitle())

    def cell(self, lane: int, column: int, cta: int = 0) -> dict:
        """What lives at (lane, column) (of CTA ``cta`` of a pair): the tensor there (``tensor``: its name) and the
        first index of its 32-bit word, an accumulator's (m, n, buffer), a scale-factor fragment's ``sf`` (per byte:
        (byte, row, K block, copy, buffer)), the allocation, the copy's thread and register (None where none)."""
        if type(lane) is not int or type(column) is not int or not (0 <= lane < TMEM_LANES and 0 <= column < self.source.columns):
            raise ValueError(f"TmemView.cell: expected a lane in [0, 128) and a column in [0, {self.source.columns}), but "
                             f"got ({lane!r}, {column!r}).")
        if type(cta) is not int or not 0 <= cta < self.ctas:
            raise ValueError(f"TmemView.cell: expected cta in [0, {self.ctas}), but got {cta!r}.")
        g = cta * self.source.columns + column
        k = int(self.source.tid[lane, g])
        i = int(self.source.tidx[lane, g])
        a = int(self.source.alloc_of[lane, g])
        out = {"address": (lane << 16) | column, "cta": cta, "tensor": None if k < 0 else self.names[k],
               "index": None if k < 0 else i, "mn": None, "buffer": None, "sf": None,
               "allocation": None if a < 0 else a, "thread": None, "register": None}
        if k >= 0 and self.roles[k] == "acc":
            m, n, b = self.coords[k][cta]
            out["mn"], out["buffer"] = (int(m[i]), int(n[i])), int(b[i])
        elif k >= 0:
            out["sf"] = self._sf_values(k, lane, column)
        if self.source.thr is not None and self.source.thr[lane, g] >= 0:
            out["thread"], out["register"] = int(self.source.thr[lane, g]), int(self.source.reg[lane, g])
        return out

    def describe_grid(self, lane: int, col: int) -> str:
        cta, k = divmod(int(col), self.source.columns)
        return self.describe(int(lane), k, cta)

    def describe(self, lane: int, column: int, cta: int = 0) -> str:
        c = self.cell(lane, column, cta)
        text = (f"CTA {cta}  " if self.ctas > 1 else "") + f"lane {lane}  column {column}  address 0x{c['address']:08x} " \
            "(lane << 16 | column)"
        k = self.names.index(c["tensor"]) if c["tensor"] is not None else -1
        if c["mn"] is not None:
            text += f"  {self.tensors[k].value_type} {c['tensor']}{c['mn']}" + (f" of buffer {c['buffer']}"
                                                                               if c["buffer"] else "")
        if c["sf"] is not None:
            side = "A row" if c["tensor"].upper().endswith("A") else "B column" if c["tensor"].upper().endswith("B") \
                else "row"
            vs = self.coords[k][0]["vs"]
            text += f"  {c['tensor']} ({self.tensors[k].value_type}, copy {c['sf'][0][3]}): " + "; ".join(
                f"byte {s}: {side} {r}, K {vs * bl}..{vs * bl + vs - 1}" + (f" of buffer {b}" if b else "")
                for s, r, bl, _, b in c["sf"])
        text += "  allocation " + (str(c["allocation"]) if c["allocation"] is not None else "none")
        text += f"  lane quarter {lane // 32} (warp {lane // 32} of a warpgroup)"
        if c["thread"] is not None:
            text += f"  -> thread {c['thread']} register {c['register']}"
        return text

    def thread_cells(self, t: int) -> list[tuple[int, int, int]]:
        """(register, lane, column) of every register thread ``t`` of the copy loads (stores)."""
        if self.copy is None:
            raise ValueError("TmemView.thread_cells: this view has no copy=.")
        if type(t) is not int or not 0 <= t < self.num_threads:
            raise ValueError(f"TmemView.thread_cells: expected a thread in [0, {self.num_threads}), but got {t!r}.")
        th, v, ln, co = self._copy_cells
        sel = np.flatnonzero(th == t)
        return sorted((int(v[i]), int(ln[i]), int(co[i])) for i in sel)

    def _readout_lines(self) -> list[str]:
        lines = []
        t = self.thread
        if t is not None:
            cells = self.thread_cells(t)
            lanes = sorted({ln for _, ln, _ in cells})
            cols = sorted({c for _, _, c in cells})
            lines.append(f"T{t} (warp {t // 32}, lane quarter {(t // 32) % 4}): {len(cells)} registers from lanes "
                         f"{lanes[0]}..{lanes[-1]}, columns {cols[0]}..{cols[-1]}"
                         + (" (in each CTA of the pair)" if self.ctas > 1 else ""))
            lines.append("  " + ", ".join(f"V{v}@({ln},{c})" for v, ln, c in cells[:16]) + (" ..." if len(cells) > 16 else ""))
        return lines

    def _subtitle(self) -> str:
        n = sum(len(set(zip(c["lane"].tolist(), c["column"].tolist(), c["sub"].tolist()))) for c in self.all_cells)
        used = sum(len(set(zip(c["lane"].tolist(), c["column"].tolist()))) for c in self.all_cells)
        per = " in each CTA" if self.ctas > 1 else ""
        return f"{n} values in {used} cells{per}; colour by {self.source.color_by}"

    # -- the static picture ----------------------------------------------------------------------------------
    def _zoom_origin(self):
        if self._window is not None:
            return self._window
        if self.ctas > 1 and self.thread is None:      # a pair: CTA 0's first 16 lanes, CTA 1's below them
            return int(self.cells["lane"].min()) // 32 * 32, int(self.cells["column"].min())
        t = self.thread
        if t is not None:
            _, ln, co = self.thread_cells(t)[0]
            return (ln // 32) * 32, co
        return (int(self.cells["lane"].min()) // 32) * 32, int(self.cells["column"].min())

    def overview_svg(self) -> str:
        """The whole TMEM (of each CTA of a pair, side by side) as pixel blocks (2 x 2 px a cell, 1 x 2 for a pair
        of 512 columns), lane quarters labelled, allocations coloured, the picked thread's cells in red and the zoom
        window framed."""
        src = self.source
        nc = src.shape[1]
        r, c = np.arange(TMEM_LANES), np.arange(nc)
        col = src.colors_at(r, c, None).astype(np.int64)
        if src.selected is not None:
            col = np.where(src.thr == int(src.selected), _RED, col)
        px = 2
        pxc = 1 if nc > TMEM_COLUMNS else 2
        img = _rgb(PALETTE)[col]
        img = np.repeat(np.repeat(img, px, axis=0), pxc, axis=1)
        href = "data:image/png;base64," + base64.b64encode(_png(np.ascontiguousarray(img, np.uint8))).decode("ascii")
        left, top = 150, 40
        w, h = nc * pxc, TMEM_LANES * px
        z0, z1 = self._zoom_origin()
        two = self.ctas > 1 and self._window is None
        zl, zc = min(ZOOM_LANES // 2 if two else ZOOM_LANES, TMEM_LANES - z0), min(ZOOM_COLUMNS, nc - z1)
        what = (f"every cell of the {TMEM_LANES} x {src.columns} TMEM" if self.ctas == 1 else
                f"every cell of both CTAs' {TMEM_LANES} x {src.columns} TMEM, CTA 0 left, CTA 1 right")
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + w + 20}" height="{top + h + 30}" '
               f'viewBox="0 0 {left + w + 20} {top + h + 30}" font-family="DejaVu Sans Mono,Menlo,Consolas,monospace" '
               f'font-size="11">', f'<rect x="0" y="0" width="{left + w + 20}" height="{top + h + 30}" fill="#ffffff"/>',
               f'<text x="4" y="14" font-weight="bold">overview: {what}, {pxc} x {px} px a cell</text>',
               f'<text x="4" y="30" fill="#555555">{html.escape(self._overview_caption())}</text>',
               f'<image x="{left}" y="{top}" width="{w}" height="{h}" style="image-rendering:pixelated" href="{href}"/>']
        for q in range(4):
            y = top + 32 * q * px
            out.append(f'<line x1="{left - 4}" y1="{y}" x2="{left + w}" y2="{y}" stroke="#000000" stroke-width="1"/>')
            out.append(f'<text x="4" y="{y + 16 * px + 4}">lanes {32 * q}-{32 * q + 31}: warp {q}</text>')
        step = 64 if src.columns >= 128 else 32
        for cta in range(self.ctas):
            for k in range(0, src.columns + (1 if cta == self.ctas - 1 else 0), step):
                x = left + (cta * src.columns + k) * pxc
                out.append(f'<line x1="{x}" y1="{top - 3}" x2="{x}" y2="{top + h}" stroke="#777777" stroke-width="0.5"/>')
                out.append(f'<text x="{x}" y="{top + h + 14}" text-anchor="middle">{k}</text>')
            if self.ctas > 1:
                x = left + cta * src.columns * pxc
                out.append(f'<line x1="{x}" y1="{top - 8}" x2="{x}" y2="{top + h}" stroke="#000000" stroke-width="2"/>')
                out.append(f'<text x="{x + 4}" y="{top - 4}" font-weight="bold">CTA {cta}</text>')
        out.append(f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#000000"/>')
        for zx in [z1] + ([z1 + src.columns] if two and z1 < src.columns else []):
            out.append(f'<rect x="{left + zx * pxc}" y="{top + z0 * px}" width="{zc * pxc}" height="{zl * px}" '
                       f'fill="none" stroke="#000000" stroke-width="2" stroke-dasharray="4,2"/>')
        out.append(f'<text x="{left}" y="{top + h + 28}" fill="#555555">column; dashed frame: the zoom below</text>')
        out.append("</svg>")
        return "\n".join(out) + "\n"

    def _overview_caption(self) -> str:
        t = self.thread
        what = {"allocation": "colour: allocation", "quarter": "colour: lane quarter", "thread": "colour: thread mod 8",
                "tensor": "colour: tensor (" + ", ".join(self.names) + ")"}
        cap = what[self.source.color_by] + "; grey: not allocated / not the tensor's"
        if t is not None:
            cap += f"; red: thread {t}'s cells"
        return cap

    def to_svg(self) -> str:
        z0, z1 = self._zoom_origin()
        two = self.ctas > 1 and self._window is None
        zl, zc = min(ZOOM_LANES // 2 if two else ZOOM_LANES, TMEM_LANES - z0), min(ZOOM_COLUMNS, self.source.shape[1] - z1)
        zooms = [grid_svg(self.source.window(z0, z1, zl, zc), self._subtitle())]
        if two and z1 < self.source.columns:   # the same cells of the other CTA
            zooms.append(grid_svg(self.source.window(z0, z1 + self.source.columns, zl, zc), ""))
        head = table_svg(self.source.title, [("", n) for n in self.source.notes])
        return vstack_svg([head, self.overview_svg()] + zooms)

    def __repr__(self) -> str:
        what = repr(self.acc) if len(self.names) == 1 else "{" + ", ".join(self.names) + "}"
        return (f"TmemView({what}{', copy=' + self.copy.atom.name if self.copy is not None else ''}"
                f"{', pair=' + self.pair.family if self.pair is not None else ''}, thread={self.thread})")


# ---- UMMA atoms for MMAView ----------------------------------------------------------------------------------

def umma_panels(atom: UmmaAtom) -> tuple[list, list]:
    """(panels, read-out) of one tcgen05.mma for ``MMAView``: A (M x K), B (N x K), C (M x N) as CuTe's TV layouts
    give them (the "threads" are ThrID's: one issuing thread, or the two CTAs of a 2-SM pair), then C in each CTA's
    tensor memory (lanes x columns), the pair's side by side."""
    from .atoms_view import _panel, owners

    m, n, k = atom.shape_mnk
    v = atom.thr_id.size
    pair = v == 2
    who = ("the pair's two CTAs (T0: CTA 0, T1: CTA 1 of the cluster pair; one thread of CTA 0 issues for both)"
           if pair else "one thread of the CTA issues it for all 128 lanes")
    src_a = "TMEM (TS: A in tensor memory)" if atom.a_source == "tmem" else "shared memory through a descriptor (SS)"
    panels = [_panel("A", f"A ({m} x {k}) from {'TMEM' if atom.a_source == 'tmem' else 'smem'}", "M", "K",
                     *owners(atom.tv_layout_A, m, k)),
              _panel("B", f"B ({n} x {k}) from smem", "N", "K", *owners(atom.tv_layout_B, n, k)),
              _panel("C", f"C ({m} x {n}) in TMEM", "M", "N", *owners(atom.tv_layout_C, m, n))]
    panels[0]["note"] = f"A from {src_a}; colour: {'CTA' if pair else 'the issuing thread'}"
    panels[1]["note"] = "B from shared memory through a descriptor"
    panels[2]["note"] = f"{who}; C accumulates in TMEM, never in registers"
    acc = atom.make_fragment_C(atom.partition_shape_C((m, n)))
    cells = tmem_cells(acc)
    mm, nn, _ = accumulator_coordinates(acc)
    width = int(cells["column"].max()) + 1
    for cta in range(v):
        idx = cells["index"][:, :width]
        thr = np.where(idx >= 0, cta, -1)
        val = np.where(idx >= 0, mm[np.maximum(idx, 0)] + (m // v) * cta + m * nn[np.maximum(idx, 0)], -1)
        p = _panel(f"tmem{cta}", f"C in CTA {cta}'s TMEM ({TMEM_LANES} lanes x {width} columns)" if pair else
                   f"C in TMEM ({TMEM_LANES} lanes x {width} columns)", "lane", "column", thr, val)
        p["note"] = (f"CTA {cta} holds C rows {cta * m // v}..{(cta + 1) * m // v - 1}: V = m + {m} n of C"
                     if pair else f"cell (lane, column) holds C(m, n) with V = m + {m} n")
        panels.append(p)
    readout = [repr(atom), f"ThrID {atom.thr_id}: {who}", f"A from {src_a}; B from shared memory; C in TMEM",
               f"instruction descriptor 0x{atom.instr_desc.encode():08x}; compiled for sm_100a and emulated here, "
               "never run on a Blackwell GPU"]
    if isinstance(atom, UmmaBlockScaledAtom):
        more, lines = _block_scaled_panels(atom, panels)
        panels[3:3] = more[:2]
        panels.extend(more[2:])
        readout[2:2] = lines
    return panels, readout


# one colour a scale-factor block along K (A's and B's cells, SFA's and SFB's); factors of the next MMAs along K grey
SF_BLOCK_FILLS = ["#77aadd", "#ee8866", "#44bb99", "#eedd88", "#99ddff", "#ffaabb", "#bbcc33", "#aaaa00", "#dddddd"]


def sf_tile_k(atom) -> int:
    """The K of the tile whose scale-factor fragments ``MMAView`` draws: the atom's K, or 4 VecSize blocks where that
    is more (CUTLASS's SF layouts keep 4 K blocks a 32-bit column, so a tile's K is a multiple of 4 * VecSize)."""
    return max(atom.shape_mnk[2], 4 * atom.sf_vec_size)


def _block_scaled_panels(atom, panels):
    """SFA (M x K/VS), SFB (N x K/VS) as the MMA applies them, A and B coloured by the block that scales each value,
    and SFA and SFB in the TMEM of a CTA (lanes x bytes: four one-byte factors a 32-bit column)."""
    from .atoms_view import _panel

    m, n, k = atom.shape_mnk
    vs, v = atom.sf_vec_size, atom.thr_id.size
    nb = k // vs
    for p, rows in ((panels[0], m), (panels[1], n)):    # A (M x K), B (N x K): value (r, kk) scaled by block kk // vs
        kk = np.arange(k)
        p["fill"] = np.broadcast_to((kk // vs) % (len(SF_BLOCK_FILLS) - 1), (rows, k)).reshape(-1).tolist()
        p["fills"], p["fill_name"] = list(SF_BLOCK_FILLS), "scale-factor block"
        p["note"] += (f"; colour: the K block of {vs} values one scale factor scales "
                      f"(SF{p['name']}({'m' if p['name'] == 'A' else 'n'}, kk // {vs}))")
    out = []
    for name, rows, what in (("SFA", m, "A(m, VS j .. VS j + VS-1)"), ("SFB", n, "B(n, VS j .. VS j + VS-1)")):
        r, j = np.meshgrid(np.arange(rows), np.arange(nb), indexing="ij")
        thr = (r // (rows // v)) if (name == "SFA" and v == 2) else np.zeros_like(r)
        p = _panel(name, f"{name} ({rows} x {nb}) {atom.sf_type}", "M" if name == "SFA" else "N", "K / VS", thr,
                   r + rows * j)
        p["fill"], p["fills"], p["fill_name"] = (j % (len(SF_BLOCK_FILLS) - 1)).reshape(-1).tolist(), \
            list(SF_BLOCK_FILLS), "K block"
        p["note"] = (f"{name}({'m' if name == 'SFA' else 'n'}, j) scales {what.replace('VS', str(vs))}: "
                     f"V = {'m' if name == 'SFA' else 'n'} + {rows} j")
        out.append(p)
    kt = sf_tile_k(atom)
    lines = [f"scale factors: {atom.sf_type}, one per {vs} values along K ({nb} a row of this MMA's K = {k}); "
             f"D = (A x SFA) (B x SFB)^T + C, the sum over K of a(m, kk) b(n, kk) SFA(m, kk/{vs}) SFB(n, kk/{vs})",
             f"SFA, SFB in TMEM: atom.make_fragment_SFA/SFB(shape(atom.smem_layout_SFA/SFB(tile))), tile (M, N, {kt}): "
             f"each factor in all {4 if atom.sf_alloc.endswith('4by1') else 2} lane quarters (copies), 4 K blocks a "
             "32-bit column; the instruction's idesc a_sf_id / b_sf_id (bits 29-30 / 4-5) pick the byte"]
    tile = (m, n, kt)
    for name in ("SFA", "SFB"):
        try:
            frag = getattr(atom, f"make_fragment_{name}")(it_shape(getattr(atom, f"smem_layout_{name}")(tile)))
        except ValueError as e:        # e.g. a 2-SM M=128 SFA: CUTLASS's layout has no 64-row blocks; said, not drawn
            lines.append(f"{name} in TMEM not drawn: {e}")
            continue
        sc = sf_coordinates(frag)
        c = tmem_cells(frag)
        width = int(c["column"].max()) + 1
        per = frag.dp // 65536
        lane, byte = c["lane"], c["column"] * per + c["sub"]
        thr = np.full((TMEM_LANES, width * per), -1, np.int64)
        val = np.full((TMEM_LANES, width * per), -1, np.int64)
        fill = np.full((TMEM_LANES, width * per), -1, np.int64)
        rows = m if name == "SFA" else n             # V numbered as in the SFA / SFB panel
        order = np.arange(len(lane))[::-1]
        order = order[sc["row"][order] < rows]       # SFB rows past N: CUTLASS's padding to 128, left blank
        thr[lane[order], byte[order]] = 0            # the issuing thread (CTA 0) owns them; copies: lane quarters
        val[lane[order], byte[order]] = sc["row"][order] + rows * sc["block"][order]
        blk = sc["block"][order]
        fill[lane[order], byte[order]] = np.where(blk < nb, blk % (len(SF_BLOCK_FILLS) - 1), len(SF_BLOCK_FILLS) - 1)
        p = _panel(f"tmem_{name}", f"{name} in TMEM", "lane", f"byte ({width} columns x {per})", thr, val)
        p["fill"], p["fills"], p["fill_name"] = np.where(fill >= 0, fill, len(SF_BLOCK_FILLS) - 1).reshape(-1).tolist(), \
            list(SF_BLOCK_FILLS), "K block"
        p["note"] = (f"{frag}: byte (lane, 4 c + b) holds {name}(r, j) with V = r + {rows} j, r the fragment's row, one "
                     f"copy a lane quarter; this MMA's factors in colour, grey: the next MMAs' along K (tile K = {kt})"
                     + ("; CTA c's SFA rows are A rows c M/2 + r" if v == 2 and name == "SFA" else "")
                     + (f"; blank: rows {n}..{sc['mn'] - 1}, CUTLASS's padding of N to {sc['mn']}"
                        if name == "SFB" and sc["mn"] > n else ""))
        out.append(p)
        lines.append(f"{name} fragment {frag}: columns 0..{width - 1} from its base")
    return out, lines


# ---- descriptor views ----------------------------------------------------------------------------------------

_MAJOR = {0: "K", 1: "MN"}
_AB_FORMATS = {"f16": {0: "F16", 1: "BF16"}, "tf32": {2: "TF32"}, "i8": {0: "U8", 1: "S8"},
               "f8f6f4": {0: "E4M3", 1: "E5M2", 3: "E2M3", 4: "E3M2", 5: "E2M1"}}
_C_FORMATS = {0: "F16", 1: "F32", 2: "S32"}
_BS_FORMATS = {"mxf8f6f4": _AB_FORMATS["f8f6f4"], "mxf4": {1: "E2M1"}}   # UMMA::MXF8F6F4Format, MXF4Format
_KIND_FORMATS = {**_AB_FORMATS, **_BS_FORMATS, "mxf4nvf4": _BS_FORMATS["mxf4"]}   # by the atom's .kind
_SCALE_FORMATS = {0: "UE4M3", 1: "UE8M0"}
_FIELD_COLORS = ("#77aadd", "#ee8866", "#eedd88", "#ffaabb", "#99ddff", "#44bb99", "#bbcc33", "#aaaa00", "#dddddd",
                 "#c6dbef", "#fdd0a2", "#c7e9c0", "#dadaeb")


def bits_svg(desc, names: dict) -> str:
    """The descriptor word as a strip of bits, 32 a row (bit 0 on the right), each field a coloured span with its
    name and value; reserved bits white."""
    width = desc._WIDTH
    cell, left = 26, 40
    rows = width // 32
    h = 30 + rows * 62
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + 32 * cell + 10}" height="{h}" '
           f'viewBox="0 0 {left + 32 * cell + 10} {h}" font-family="DejaVu Sans Mono,Menlo,Consolas,monospace" '
           f'font-size="10">', f'<rect x="0" y="0" width="{left + 32 * cell + 10}" height="{h}" fill="#ffffff"/>',
           f'<text x="4" y="14" font-size="11" font-weight="bold">the {width}-bit word 0x{desc.encode():0{width // 4}x}, '
           f'bit 0 on the right</text>']
    word = desc.encode()
    for row in range(rows):
        y = 24 + row * 62
        for b in range(32):
            bit = row * 32 + b
            x = left + (31 - b) * cell
            out.append(f'<rect x="{x}" y="{y}" width="{cell}" height="18" fill="#ffffff" stroke="#999999" '
                       f'stroke-width="0.5"/><text x="{x + cell // 2}" y="{y + 13}" text-anchor="middle">'
                       f'{(word >> bit) & 1}</text>')
        out.append(f'<text x="4" y="{y + 13}">{row * 32 + 31}</text>')
    for k, (name, lo, nbits) in enumerate(desc._FIELDS):
        for row in range(rows):
            a, b = max(lo, row * 32), min(lo + nbits, row * 32 + 32)
            if a >= b:
                continue
            y = 24 + row * 62
            x = left + (31 - (b - 1 - row * 32)) * cell
            wpx = (b - a) * cell
            color = _FIELD_COLORS[k % len(_FIELD_COLORS)]
            out.append(f'<rect x="{x}" y="{y + 18}" width="{wpx}" height="34" fill="{color}" stroke="#555555"/>')
            label = names.get(name, str(getattr(desc, name)))
            out.append(f'<text x="{x + 2}" y="{y + 30}">{html.escape(name[: max(2, wpx // 6)])}</text>')
            out.append(f'<text x="{x + 2}" y="{y + 46}">{html.escape(label[: max(2, wpx // 6)])}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


class _DescView(SvgFallback, W.VBox):
    title = ""

    def _build(self, below=None):
        from .hopper_view import _header_html

        self.info = W.HTML(_header_html(self.rows()))
        self.bits = W.HTML(bits_svg(self.desc, self.names()))
        self.below = below
        W.VBox.__init__(self, [self.info, self.bits] + ([below] if below is not None else []))

    def to_svg(self) -> str:
        parts = [table_svg(self.title, self.rows()), bits_svg(self.desc, self.names())]
        if self.below is not None:
            parts.append(self.below.to_svg())
        return vstack_svg(parts)


class UmmaSmemDescView(_DescView):
    """``UmmaSmemDescView(desc, tile=None, element_type=None)``: CuTe's ``UMMA::SmemDescriptor`` (from
    ``make_umma_desc(tile, element_type, major)``) as its fields (bits, value, meaning; the layout type named) and
    its 64 bits; with ``tile`` and ``element_type``, the tile it describes below (a LayoutView coloured by 16-byte
    chunk)."""

    title = "UMMA shared-memory descriptor (tcgen05.mma, sm_100)"

    def __init__(self, desc, tile=None, element_type=None):
        if type(desc) is not UmmaSmemDescriptor:
            raise TypeError(f"UmmaSmemDescView: expected a UmmaSmemDescriptor (make_umma_desc(tile, element_type, "
                            f"major)), but got {type(desc).__name__}.")
        self.desc = desc
        below = None
        if tile is not None:
            from .layout_view import LayoutView
            if element_type is None:
                raise ValueError("UmmaSmemDescView: expected element_type= with tile= (the chunk colours need the "
                                 "element's size), but got None.")
            below = LayoutView(tile, color_by="chunk", element_type=element_type)
        self._build(below)

    def names(self) -> dict:
        d = self.desc
        return {"layout_type": d.layout_type_name, "start_address": f"{d.start_bytes}B", "leading_byte_offset":
                f"{d.lbo_bytes}B", "stride_byte_offset": f"{d.sbo_bytes}B"}

    def rows(self) -> list[tuple[str, str]]:
        d = self.desc
        return [("start_address [0,14)", f"{d.start_address} = {d.start_bytes} B >> 4: the tile's shared address / 16"),
                ("leading_byte_offset [16,30)", f"{d.leading_byte_offset} = {d.lbo_bytes} B: K-major: to the next core "
                 "matrix along K (unused when swizzled); MN-major: to the next swizzle atom along MN"),
                ("stride_byte_offset [32,46)", f"{d.stride_byte_offset} = {d.sbo_bytes} B: to the next 8 rows (K-major) "
                 "or the next 8 along K (MN-major)"),
                ("version [46,48)", f"{d.version} ({'Blackwell: 1' if d.version == 1 else 'not 1: no sm_100 descriptor'})"),
                ("base_offset [49,52)", f"{d.base_offset} (where in the 8-row swizzle pattern the tile starts; 0 at "
                 "1024-byte alignment)"),
                ("lbo_mode [52,53)", f"{d.lbo_mode} ({'relative' if d.lbo_mode == 0 else 'absolute'} LBO)"),
                ("layout_type [61,64)", f"{d.layout_type} = {d.layout_type_name} (UMMA::LayoutType: "
                 + ", ".join(f"{v} {k}" for v, k in sorted(_LAYOUT_NAME.items())) + ")"),
                ("word", f"0x{d.encode():016x}")]

    def __repr__(self):
        return f"UmmaSmemDescView({self.desc!r})"


class UmmaInstrDescView(_DescView):
    """``UmmaInstrDescView(atom_or_desc)``: CuTe's ``UMMA::InstrDescriptor`` (32 bits, tcgen05.mma's ``idesc``),
    every field with its bits and its value named (formats, majors, M and N); from a UMMA atom (its
    ``instr_desc``, the formats named by the atom's kind) or a bare ``UmmaInstrDescriptor``."""

    title = "UMMA instruction descriptor (tcgen05.mma idesc, sm_100)"

    def __init__(self, atom_or_desc):
        if isinstance(atom_or_desc, (UmmaAtom, UmmaBlockScaledAtom)):
            self.atom, self.desc, self.kind = atom_or_desc, atom_or_desc.instr_desc, atom_or_desc.ptx_kind
        elif type(atom_or_desc) in (UmmaInstrDescriptor, UmmaInstrDescriptorBlockScaled):
            self.atom, self.desc, self.kind = None, atom_or_desc, None
        else:
            raise TypeError(f"UmmaInstrDescView: expected a UMMA atom (wb.mma_atom('SM100_MMA_...', ...)), a "
                            f"UmmaInstrDescriptor or a UmmaInstrDescriptorBlockScaled, but got {type(atom_or_desc).__name__}.")
        self.block_scaled = type(self.desc) is UmmaInstrDescriptorBlockScaled
        if self.block_scaled:
            self.title = "UMMA block-scaled instruction descriptor (tcgen05.mma ... .block_scale idesc, sm_100)"
        self._build()

    def _fmt(self, code):
        if self.kind is not None:
            return _KIND_FORMATS[self.kind].get(code, f"invalid for kind::{self.kind}")
        tables = _BS_FORMATS if self.block_scaled else _AB_FORMATS
        return "/".join(f"{t[code]} ({k})" for k, t in tables.items() if code in t) or "invalid"

    def names(self) -> dict:
        d = self.desc
        out = {"a_format": self._fmt(d.a_format), "b_format": self._fmt(d.b_format),
               "a_major": _MAJOR[d.a_major], "b_major": _MAJOR[d.b_major],
               "n_dim": f"N={d.n_dim << 3}", "m_dim": f"M={d.m_dim << 4}"}
        if self.block_scaled:
            out.update(scale_format=_SCALE_FORMATS.get(d.scale_format, "?"), a_sf_id=f"byte {d.a_sf_id}",
                       b_sf_id=f"byte {d.b_sf_id}")
        else:
            out["c_format"] = _C_FORMATS.get(d.c_format, "?")
        return out

    def rows(self) -> list[tuple[str, str]]:
        if self.block_scaled:
            return self._rows_block_scaled()
        d, nm = self.desc, self.names()
        kind = f" (kind::{self.kind})" if self.kind else ""
        rows = [("sparse_id2 [0,2)", f"{d.sparse_id2}"), ("sparse_flag [2]", f"{d.sparse_flag} (dense)" if not d.sparse_flag
                                                            else f"{d.sparse_flag} (sparse)"),
                ("saturate [3]", str(d.saturate)), ("c_format [4,6)", f"{d.c_format} = {nm['c_format']}"),
                ("a_format [7,10)", f"{d.a_format} = {nm['a_format']}{kind}"),
                ("b_format [10,13)", f"{d.b_format} = {nm['b_format']}{kind}"),
                ("a_negate [13]", str(d.a_negate)), ("b_negate [14]", str(d.b_negate)),
                ("a_major [15]", f"{d.a_major} = {nm['a_major']}-major"),
                ("b_major [16]", f"{d.b_major} = {nm['b_major']}-major"),
                ("n_dim [17,23)", f"{d.n_dim} = N >> 3: {nm['n_dim']}"),
                ("m_dim [24,29)", f"{d.m_dim} = M >> 4: {nm['m_dim']}"),
                ("max_shift [30,32)", str(d.max_shift)),
                ("word", f"0x{d.encode():08x} (the 64-bit operand: word << 32 = 0x{d.runtime():016x})")]
        if self.atom is not None:
            rows.insert(0, ("atom", repr(self.atom)))
        return rows

    def _rows_block_scaled(self) -> list[tuple[str, str]]:
        d, nm = self.desc, self.names()
        kind = f" (kind::{self.kind})" if self.kind else ""
        rows = [("sparse_id2 [0,2)", f"{d.sparse_id2}"),
                ("sparse_flag [2]", f"{d.sparse_flag} ({'sparse' if d.sparse_flag else 'dense'})"),
                ("b_sf_id [4,6)", f"{d.b_sf_id}: SFB's byte in its 32-bit TMEM column (the issued descriptor takes it "
                 "from bits 30..31 of SFB's address: make_runtime_instr_desc_block_scaled)"),
                ("a_format [7,10)", f"{d.a_format} = {nm['a_format']}{kind}"),
                ("b_format [10,13)", f"{d.b_format} = {nm['b_format']}{kind}"),
                ("a_negate [13]", str(d.a_negate)), ("b_negate [14]", str(d.b_negate)),
                ("a_major [15]", f"{d.a_major} = {nm['a_major']}-major"),
                ("b_major [16]", f"{d.b_major} = {nm['b_major']}-major"),
                ("n_dim [17,23)", f"{d.n_dim} = N >> 3: {nm['n_dim']}"),
                ("scale_format [23]", f"{d.scale_format} = {nm['scale_format']} (UMMA::ScaleFormat: 0 UE4M3, 1 UE8M0)"),
                ("m_dim [24,29)", f"{d.m_dim} = M >> 4: {nm['m_dim']}"),
                ("a_sf_id [29,31)", f"{d.a_sf_id}: SFA's byte in its 32-bit TMEM column (as b_sf_id, from SFA's address)"),
                ("k_size [31]", f"{d.k_size} (CuTe 4.2 never sets it)"),
                ("word", f"0x{d.encode():08x} (the 64-bit operand: word << 32 = 0x{d.encode() << 32:016x})")]
        if self.atom is not None:
            rows.insert(0, ("atom", repr(self.atom)))
            rows.insert(1, ("no c_format", "block-scaled MMAs accumulate in F32 only; bits 4-5 hold b_sf_id instead"))
        return rows

    def __repr__(self):
        return f"UmmaInstrDescView({self.desc!r})"
