"""Divides and products: tiling one layout by another (CuTe's logical_divide family and
logical_product family), and the tile/partition helpers built on them.

``logical_divide(A, B) = A o (B, complement(B, shape(coalesce(A))))``: mode 0 is the tile B picks out of
A, mode 1 iterates over the tiles.  ``logical_product(A, B) = (A, complement(A, size(A)*cosize(B)) o B)``:
mode 0 is A, mode 1 places copies of A as B says.  The zipped/tiled/flat flavours only
rearrange modes; blocked/raked products reassociate like modes.
"""

from __future__ import annotations

import operator

from . import f2 as _f2
from . import inttuple as it
from .algebra import (
    LayoutAlgebraError,
    _cat,
    _coalesce_flat,
    _compose,
    _cute_answer,
    _cute_complement,
    _fmt_tiler,
    _is_tensor,
    _layout,
    _modes,
    _raw,
    _static_ints,
    _tile_stride,
    append,
    check_tile_size,
    coalesce,
    complement,
    composition,
    make_ordered_layout,
)
from .layout import Layout
from .slicing import slice_and_offset
from .values import Symbolic, ceil_div, is_symbolic, known_value

__all__ = [
    "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
    "logical_product", "zipped_product", "tiled_product", "flat_product", "blocked_product", "raked_product",
    "local_tile", "local_partition", "tile_to_shape",
]


def _is_layoutish(x):
    return type(x) is Layout or getattr(x, "_is_composed", False)


def _require_layout(A, op):
    """A as the divides and tiles take it (a layout, a swizzled layout or a tensor), else a TypeError."""
    if _is_layoutish(A) or _is_tensor(A):
        return
    hint = f"; parse layout text first: wb.parse_layout({A!r})" if isinstance(A, str) else ""
    raise TypeError(f"{op}: expected a Layout or a tensor, but got {type(A).__name__}{hint}.")


def _size(x):
    return x.size


def _tiler_layout(t, op):
    if type(t) is Layout:
        if type(t.size) is int:
            check_tile_size(t.size, f"{op} by {t}", "tiler size")
        return t
    if type(t) is int or isinstance(t, Symbolic):
        return _raw(check_tile_size(t, f"{op} by {t}"), _tile_stride(t))
    raise TypeError(f"{op}: expected a tiler (Layout, int, None or a tuple of them), but got {type(t).__name__}.")


def _by_mode(op, fn, A, T, depth=0):
    """Apply fn mode by mode for a tuple tiler; remaining modes of A are kept.  A tuple mode of T recurses here
    (as fn would), which bounds T's nesting (inttuple.MAX_NESTING)."""
    if depth >= it.MAX_NESTING:
        raise it.too_deep("tiler")
    modes = _modes(A) if type(A) is Layout else [A[i] for i in range(A.rank)]
    if len(T) > len(modes):
        raise LayoutAlgebraError(f"{op}({A}, {_fmt_tiler(it.check_nesting(T, 'tiler'))}): the tiler has rank {len(T)} "
                                 f"but the layout has rank {len(modes)}.")
    parts = [m if t is None else _by_mode(op, fn, m, t, depth + 1) if type(t) is tuple else fn(m, t)
             for m, t in zip(modes, T)]
    return _cat_any(*parts, *modes[len(T):])


def _cat_any(*ls):
    if any(getattr(x, "_is_composed", False) for x in ls):
        raise LayoutAlgebraError("a by-mode tiler over a swizzled layout is not supported: tile its inner layout.")
    return _cat(*ls)


# -- divides ---------------------------------------------------------------------------------
def logical_divide(A, T):
    """``A o (T, T*)`` with ``T* = complement(T, size(A))``.  Guarantees:
    ``R(i, j) == A((T, T*)(i, j))`` and ``layout<0>(R) == composition(A, T)``.  As CuTe, a tiler
    that does not divide A is allowed: the last tile runs past A (``size(R) >= size(A)``, e.g.
    100 tiled by 32 is ``(32,4):(1,32)``) and the caller predicates the ragged edge
    (``make_identity_tensor`` + ``elem_less``).  A tuple tiler divides mode by mode (None keeps a
    mode).  A tensor (``.layout``) is divided as its layout and returned as a tensor."""
    if _f2.involves_f2(A, T):   # XOR strides: workbench.layout.f2
        return _f2.F2_DIVIDES["logical_divide"](A, T)
    _require_layout(A, "logical_divide")
    if T is None:
        return A
    if _is_tensor(A):
        return A._with_layout(logical_divide(A.layout, T), 0)
    if type(T) is tuple:
        return _by_mode("logical_divide", logical_divide, A, T)
    T = _tiler_layout(T, "logical_divide")
    n = _divide_cotarget(A)
    try:
        rest = complement(T, n)
    except LayoutAlgebraError as e:
        raise LayoutAlgebraError(f"logical_divide({A}, {T}): the tiler has no complement in {n}: {e}") from None
    try:
        if type(A) is Layout:  # (T, T*) is injective and ordered by construction: no overlap check
            return _compose(A, _cat(T, rest), False)
        return composition(A, _cat(T, rest))
    except LayoutAlgebraError as e:
        cute = _cute_divide(A, T)
        if cute is not None and cute[1]:   # CuTe's T* = complement(T, shape(A)) makes it exact: CuTe's answer
            return cute[0]
        said = f" CuTe's logical_divide computes {cute[0]} here without checking, which is not A o (T, T*)." \
            if cute is not None else ""
        raise LayoutAlgebraError(f"logical_divide({A}, {T}): {str(e).split(' (CuTe computes')[0]}{said}") from None


def _divide_cotarget(A):
    """CuTe's cotarget for the tiles' complement: ``shape(coalesce(A))``, a dynamic extent kept a mode of its own as
    CuTe DSL's coalesce keeps it, so ``(32,4,?):(1,32,128)`` by 64 has the rest ``(2,?):(64,128)`` (CuTe's hierarchy)
    where the size ``128*?`` would merge it."""
    L = A if type(A) is Layout else A.layout
    shp, _ = _coalesce_flat(it.flatten(L.shape), it.flatten(L.stride))
    return 1 if not shp else shp[0] if len(shp) == 1 else tuple(shp)


def _cute_divide(A, T):
    """(CuTe's logical_divide result, whether it is A o (T, complement(T, shape(A)))) for static layouts, else None."""
    if type(A) is not Layout or not (_static_ints(A) and _static_ints(T)):
        return None
    try:
        rest = _cute_complement(T, _divide_cotarget(A))
    except (ValueError, ZeroDivisionError):
        return None
    return None if rest is None else _cute_answer(A, _cat(T, rest))


def _unzip(op, splitter, A, T, depth=0):
    """((tiles...), (rests..., remaining modes of A)) for a tuple tiler; splitter for a layout.  The recursion bounds
    T's nesting (inttuple.MAX_NESTING)."""
    _require_layout(A, op)
    if T is None:
        if depth and type(A) is Layout and type(A.shape) is tuple and len(A.shape) == 2:
            # CuTe's zip2_by reads a kept rank-2 mode as (tile, rest): zipped_divide(((2,2),3), <_>) is ((2),(2,3))
            return _cat(*_modes(A))
        return _cat(_raw(1, 0), A)
    if type(T) is tuple:
        if depth >= it.MAX_NESTING:
            raise it.too_deep("tiler")
        modes = _modes(A)
        if len(T) > len(modes):
            raise LayoutAlgebraError(f"{op}({A}, {_fmt_tiler(it.check_nesting(T, 'tiler'))}): the tiler has rank "
                                     f"{len(T)} but the layout has rank {len(modes)}.")
        split = [_unzip(op, splitter, m, t, depth + 1) for m, t in zip(modes, T)]
        tiles = [_modes(s)[0] for s in split]
        rests = [_modes(s)[1] for s in split]
        return _cat(_cat(*tiles), _cat(*rests, *modes[len(T):]))
    return splitter(A, T)


def zipped_divide(A, T):
    """((TileM,TileN,...), (RestM,RestN,...,L,...)): the logical divide with the tile modes
    gathered in mode 0 and the rest in mode 1.  ``layout<0>(R) == composition(A, T)``."""
    if _f2.involves_f2(A, T):   # XOR strides: workbench.layout.f2
        return _f2.F2_DIVIDES["zipped_divide"](A, T)
    if _is_tensor(A):
        return A._with_layout(zipped_divide(A.layout, T), 0)
    if type(T) is tuple and getattr(A, "_is_composed", False):
        return A._apply(lambda inner: zipped_divide(inner, T))
    return _unzip("zipped_divide", logical_divide, A, T)


def _expand(R, tile_flat):
    """Slice R with (_,(_,..)) or ((_,..),(_,..)): one level of mode 1 (and mode 0) unpacked."""
    m0, m1 = _modes(R)
    c0 = tuple(None for _ in range(m0.rank)) if tile_flat and type(m0.shape) is tuple else None
    c1 = tuple(None for _ in range(m1.rank)) if type(m1.shape) is tuple else None
    return slice_and_offset((c0, c1), R)[0]


def _expanded_refusal(op, A, T, e, flat):
    """A refusal of tiled/flat_divide: what CuTe's own op returns, rather than its logical_divide."""
    cute = _cute_divide(A, _tiler_layout(T, op)) if type(T) is not tuple and type(A) is Layout else None
    msg = str(e)
    if cute is not None and " CuTe's logical_divide computes" in msg:
        msg = msg.split(" CuTe's logical_divide computes")[0] + (
            f" CuTe's {op} computes {_expand(cute[0], flat)} here without checking, which is not A o (T, T*).")
    return LayoutAlgebraError(msg)


def tiled_divide(A, T):
    """((TileM,TileN,...), RestM, RestN, ..., L, ...): zipped_divide with mode 1 unpacked."""
    if _f2.involves_f2(A, T):   # XOR strides: workbench.layout.f2
        return _f2.F2_DIVIDES["tiled_divide"](A, T)
    if _is_tensor(A):
        return A._with_layout(tiled_divide(A.layout, T), 0)
    try:
        return _expand(zipped_divide(A, T), False)
    except LayoutAlgebraError as e:
        raise _expanded_refusal("tiled_divide", A, T, e, False) from None


def flat_divide(A, T):
    """(TileM, TileN, ..., RestM, RestN, ..., L, ...): zipped_divide with both modes unpacked."""
    if _f2.involves_f2(A, T):   # XOR strides: workbench.layout.f2
        return _f2.F2_DIVIDES["flat_divide"](A, T)
    if _is_tensor(A):
        return A._with_layout(flat_divide(A.layout, T), 0)
    try:
        return _expand(zipped_divide(A, T), True)
    except LayoutAlgebraError as e:
        raise _expanded_refusal("flat_divide", A, T, e, True) from None


# -- products --------------------------------------------------------------------------------
def logical_product(A, B):
    """``(A, complement(A, size(A)*cosize(B)) o B)``.  Guarantees: mode 0 is A, mode 1 is
    compatible with B, ``size(R) == size(A)*size(B)`` and R is injective when A and B are.
    A tuple B multiplies mode by mode."""
    if _f2.involves_f2(A, B):   # XOR strides: workbench.layout.f2
        return _f2.F2_PRODUCTS["logical_product"](A, B)
    if B is None:
        return A
    if type(B) is tuple:
        return _by_mode("logical_product", logical_product, _layout(A, "logical_product"), B)
    A = _layout(A, "logical_product")
    B = _tiler_layout(B, "logical_product")
    try:
        rest = complement(A, A.size * B.cosize)
        return _cat(A, composition(rest, B))
    except LayoutAlgebraError as e:
        raise LayoutAlgebraError(f"logical_product({A}, {B}): {e}") from None


def zipped_product(A, B):
    """((M,N,...), (TileM,TileN,...,L,...)): logical_product with like parts gathered."""
    if _f2.involves_f2(A, B):   # XOR strides: workbench.layout.f2
        return _f2.F2_PRODUCTS["zipped_product"](A, B)
    return _unzip("zipped_product", logical_product, _layout(A, "zipped_product"), B)


def tiled_product(A, B):
    """((M,N,...), TileM, TileN, ..., L, ...)."""
    if _f2.involves_f2(A, B):   # XOR strides: workbench.layout.f2
        return _f2.F2_PRODUCTS["tiled_product"](A, B)
    return _expand(zipped_product(A, B), False)


def flat_product(A, B):
    """(M, N, ..., TileM, TileN, ..., L, ...)."""
    if _f2.involves_f2(A, B):   # XOR strides: workbench.layout.f2
        return _f2.F2_PRODUCTS["flat_product"](A, B)
    return _expand(zipped_product(A, B), True)


def _rank_product(op, A, B, raked):
    A, B = _layout(A, op), _tiler_layout(B, op)
    R = max(A.rank, B.rank)
    Ap, Bp = append(A, up_to_rank=R), append(B, up_to_rank=R)
    if R == 1 and type(A.shape) is not tuple:
        Ap = _cat(A)
    if R == 1 and type(B.shape) is not tuple:
        Bp = _cat(B)
    try:
        prod = logical_product(Ap, Bp)
    except LayoutAlgebraError as e:
        raise LayoutAlgebraError(f"{op}({A}, {B}): {e}") from None
    a, b = _modes(prod)
    am, bm = _modes(a), _modes(b)
    zipped = _cat(*[_cat(y, x) if raked else _cat(x, y) for x, y in zip(am, bm)])
    if not raked:   # CuTe 4.x (CUTLASS 4.2, CuTe DSL 4.8.1): the blocked product is the zip itself, uncoalesced
        return zipped
    # rank R in, rank R out, as CuTe: for rank 1 the one mode (B_0, A_0) stays nested, so that
    # product_each (make_layout_tv's tiler) sees one mode of size(A)*size(B)
    return coalesce(zipped, (1,) * R)


def blocked_product(A, B):
    """Rank-sensitive product: mode i is (A_i, B_i), A's blocks laid out as B says.
    Guarantee: ``R((a_i, b_i)...) == logical_product(A, B)(a, b)`` with like modes zipped;
    size(R) == size(A)*size(B)."""
    if _f2.involves_f2(A, B):   # XOR strides: workbench.layout.f2
        return _f2.F2_PRODUCTS["blocked_product"](A, B)
    return _rank_product("blocked_product", A, B, raked=False)


def raked_product(A, B):
    """Rank-sensitive product: mode i is (B_i, A_i), A's elements interleaved (raked) across
    the copies B lays out (a cyclic distribution).  size(R) == size(A)*size(B)."""
    if _f2.involves_f2(A, B):   # XOR strides: workbench.layout.f2
        return _f2.F2_PRODUCTS["raked_product"](A, B)
    return _rank_product("raked_product", A, B, raked=True)


def tile_to_shape(block, trg_shape, order=None):
    """CuTe's ``tile_to_shape(block, trg_shape, order)``: copies of ``block`` laid out to fill ``trg_shape``, the copies
    ordered by ``order`` (default column-major): ``blocked_product(block padded to the rank of trg_shape,
    make_ordered_layout(trg_shape / block_shape, order))``, uncoalesced as CuTe 4.x (CuTe DSL 4.8.1) returns it.
    A swizzled (composed) block tiles its outer layout: ``tile_to_shape(SW128 atom, (128, 64))``.  Each mode of the
    block must divide the target's (CuTe asserts it)."""
    if getattr(block, "_is_composed", False):
        return block._apply(lambda outer: tile_to_shape(outer, trg_shape, order))
    block = _layout(block, "tile_to_shape")
    trg = trg_shape if type(trg_shape) is tuple else (trg_shape,)
    it.check_nesting(trg, "shape")
    r = len(trg)
    if block.rank > r:
        raise LayoutAlgebraError(f"tile_to_shape({block}, {it.format_inttuple(trg_shape)}): the block has rank "
                                 f"{block.rank}, more than the target shape's {r}.")
    padded = append(block, up_to_rank=r) if type(block.shape) is tuple else append(_cat(block), up_to_rank=r)
    bshape = [it.product(m.shape) for m in _modes(padded)]
    tshape = [it.product(t) for t in trg]
    for i, (b, t) in enumerate(zip(bshape, tshape)):
        if type(b) is int and type(t) is int and t % b:
            raise LayoutAlgebraError(f"tile_to_shape({block}, {it.format_inttuple(trg_shape)}): mode {i} of the block "
                                     f"({b}) does not divide the target's ({t}), as CuTe requires.")
    product_shape = tuple(ceil_div(t, b) for b, t in zip(bshape, tshape))
    ordered = make_ordered_layout(product_shape, tuple(range(r)) if order is None else order)
    if r == 1 and type(trg_shape) is tuple:   # a rank-1 target keeps its copies' mode nested, as CuTe prints it
        prod = logical_product(block if type(block.shape) is not tuple else block[0], ordered)
        return _cat(_cat(prod[0], prod[1]))
    return blocked_product(padded, ordered)


# -- tiles and partitions --------------------------------------------------------------------
def local_tile(A, tiler, coord):
    """The tile of A at tile-coordinate ``coord`` (CuTe's local_tile / inner_partition).

    For a layout, returns ``(tile_layout, offset)`` with ``A(tile element) == offset + tile_layout(c)``;
    for a tensor, the tile as a tensor over the same data.  ``coord`` indexes the rest mode of
    ``zipped_divide(A, tiler)`` and may be symbolic (a kernel's block index); a None keeps that
    rest mode.  With a tiler that does not divide A the last tiles reach past A, as in CuTe:
    predicate them with an identity tensor tiled the same way.
    """
    _require_layout(A, "local_tile")
    if _is_tensor(A):
        sub, off = local_tile(A.layout, tiler, coord)
        return A._with_layout(sub, off)
    z = zipped_divide(A, tiler)
    m0 = _modes(z)[0] if type(z) is Layout else z[0]
    crd = (tuple(None for _ in range(m0.rank)) if type(m0.shape) is tuple else None, coord)
    return slice_and_offset(crd, z)


def _thread_coord(thr_layout, thr_idx, what):
    """The coordinate c (one entry per top-level mode, colex within a mode) with thr_layout(c) == thr_idx;
    thr_idx may be symbolic (the kernel's thread index), then the caller guarantees it is in range."""
    shp, std = thr_layout.shape, thr_layout.stride
    if not thr_layout.is_static:
        raise LayoutAlgebraError(f"{what}: the thread layout {thr_layout} must be static.")

    def coord(s, d):  # the per-leaf coordinate (idx / d) % s, then colex index in each top mode
        if type(s) is tuple:
            fs, fd = it.flatten(s), it.flatten(d)
            c = tuple((thr_idx // x) % y if x else 0 for y, x in zip(fs, fd))
            return it._crd2idx(c, fs, it.prefix_product(fs))
        return (thr_idx // d) % s if d else 0

    crd = tuple(coord(s, d) for s, d in zip(shp, std)) if type(shp) is tuple else coord(shp, std)
    if not is_symbolic(thr_idx):
        if not 0 <= thr_idx < known_value(thr_layout.cosize):
            raise LayoutAlgebraError(f"{what}: thread index {thr_idx} is out of range for {thr_layout}.")
        if thr_layout(crd) != thr_idx:
            raise LayoutAlgebraError(f"{what}: no thread coordinate of {thr_layout} maps to {thr_idx}.")
    return crd


def local_partition(A, thr_layout, thr_idx):
    """The elements of A that thread ``thr_idx`` owns when ``thr_layout`` threads tile A
    (CuTe's local_partition / outer_partition).  For a layout, returns ``(layout, offset)``; for a
    tensor, the thread's part as a tensor.  The thread's coordinate c satisfies
    ``thr_layout(c) == thr_idx``; it picks element c of every tile.  As local_tile, a thread
    layout that does not divide A gives the threads past the ragged edge elements beyond A."""
    _require_layout(A, "local_partition")
    if _is_tensor(A):
        sub, off = local_partition(A.layout, thr_layout, thr_idx)
        return A._with_layout(sub, off)
    thr_layout = _layout(thr_layout, "local_partition")
    if type(thr_idx) is not int and not isinstance(thr_idx, Symbolic):
        try:
            thr_idx = operator.index(thr_idx)   # numpy ints
        except TypeError:
            raise TypeError(f"local_partition: expected the thread index as an int (or a kernel's thread index), but "
                            f"got {type(thr_idx).__name__}.") from None
    what = f"local_partition({A}, {thr_layout}, {thr_idx})"
    crd = _thread_coord(thr_layout, thr_idx, what)
    shp = thr_layout.shape
    tiler = tuple(it.product(s) for s in shp) if type(shp) is tuple else it.product(shp)
    z = zipped_divide(A, tiler)
    m1 = _modes(z)[1] if type(z) is Layout else z[1]
    return slice_and_offset((crd, tuple(None for _ in range(m1.rank)) if type(m1.shape) is tuple else None), z)
