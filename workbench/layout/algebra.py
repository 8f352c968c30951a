"""CuTe's layout algebra on one layout at a time: coalesce, composition, complement, inverses.

Layouts are functions from integers to integers; every operation here states the property
it guarantees.  Integers follow the one protocol of ``values.py``: static ints take a lean path;
a symbolic value (a host ``Dyn`` or a kernel expression) keeps the mode CuTe cannot simplify at
compile time and carries the divisibility CuTe derives.  Where runtime values are known they are checked, so a bad layout is never
returned: it raises ``ValueError`` naming the operation, the layout and the reason.
"""

from __future__ import annotations

from . import inttuple as it
from .basis import E
from .layout import Layout, _raw, _to_tuple
from .values import Symbolic, _provably_divides, ceil_div, has_values, imin, is_static, known_value, shape_div

__all__ = [
    "coalesce", "filter_", "filter_zeros", "composition", "complement", "right_inverse", "left_inverse",
    "max_common_vector", "max_common_layout", "select", "group_modes", "flatten", "append", "prepend",
    "make_ordered_layout", "product_each", "LayoutAlgebraError", "is_compact", "nullspace", "recast_layout",
]


class LayoutAlgebraError(ValueError):
    """A layout operation has no correct answer for these operands."""


def _fail(op, what, reason):
    """Raise naming the operation, its operands and the reason; ``what`` is formatted only here
    (a tuple of operands is joined) so the success path pays nothing for messages."""
    if type(what) is tuple:
        what = ", ".join(x if type(x) is str else str(x) if type(x) is Layout else it.format_inttuple(x) for x in what)
    raise LayoutAlgebraError(f"{op}({what}): {reason}")


# -- integer helpers over the protocol (static int or Symbolic) --------------------------------
_known = known_value


def _is1(x):
    return type(x) is int and x == 1


def _shape_div(a, b, op, what, where):
    """CuTe's shape_div on leaves, its refusal reported as this operation's error at ``where``."""
    try:
        return shape_div(a, b)
    except ValueError as e:
        _fail(op, what, f"{where}: {e}")



def _wrap(shp, std):
    """A flat list of modes as a layout: integral for one mode, 1:0 for none."""
    if not shp:
        return 1, 0
    if len(shp) == 1:
        return shp[0], std[0]
    return tuple(shp), tuple(std)


def _layout(x, op):
    if type(x) is Layout:
        return x
    if type(x) is int or isinstance(x, Symbolic):
        return _raw(x, 1)
    hint = f"; parse layout text first: wb.parse_layout({x!r})" if isinstance(x, str) else ""
    raise TypeError(f"{op}: expected a Layout, but got {type(x).__name__}{hint}.")


def _cat(*layouts):
    """Concatenate layouts into the top-level modes of a new layout (always a tuple)."""
    return _raw(tuple(x.shape for x in layouts), tuple(x.stride for x in layouts))


def _modes(L):
    return [L] if type(L.shape) is not tuple else [_raw(s, d) for s, d in zip(L.shape, L.stride)]


# -- coalesce / filter -----------------------------------------------------------------------
def _static_stride(d) -> bool:
    """An int, or a basis stride with a static scale (identity layouts): comparable at trace time."""
    return type(d) is int or (type(d) is E and type(d.scale) is int)


def _coalesce_flat(shp, std, dynamic=False):
    """Merge adjacent leaves s0:d0, s1:d1 with d1 == s0*d0 and drop static size-1 leaves; returns (shape, stride)
    lists.  As CuTe (C++ bw_coalesce, CuTe DSL 4.8.1), a merge is decided while compiling: both extents static and
    the strides equal statically (basis strides too: ``(6,4):(1@0,6@0)`` is ``24:1@0``).  A dynamic extent stays a
    mode of its own even where its run-time value would merge (``(2,?,6):(1,2,?)`` and ``(8,?):(1,8)`` stay), so
    results keep CuTe's hierarchy and a dynamic extent never hides the static run before it.  ``dynamic=True`` also
    merges a dynamic extent after a static mode whose strides continue (``(6,?):(1,6)`` is ``6*?:1``): composition's
    fallback where CuTe refuses."""
    out_s, out_d = [], []
    for s, d in zip(shp, std):
        if type(s) is int and s == 1:
            continue
        if out_s:
            ps, pd = out_s[-1], out_d[-1]
            if type(ps) is int and (dynamic or type(s) is int) and _static_stride(pd) and _static_stride(d) \
                    and ps * pd == d:
                out_s[-1] = ps * s
                continue
        out_s.append(s)
        out_d.append(d)
    return out_s, out_d


def coalesce(layout, profile=None):
    """Simplify without changing the function: ``coalesce(L)(i) == L(i)`` for all
    ``0 <= i < size(L)``, ``size`` is kept and the result has depth <= 1.

    With a target ``profile`` (a tuple), each mode ``i < len(profile)`` is coalesced on its
    own, recursively, so the result keeps ``profile``'s top-level structure.
    """
    if getattr(layout, "_is_composed", False):   # a swizzled layout: the same function of the same offsets
        return layout._apply(lambda outer: coalesce(outer, profile))
    if getattr(layout, "_is_f2", False):   # an F2 (XOR-strided) layout coalesces its bits' bases
        return layout._coalesce(profile)
    layout = _layout(layout, "coalesce")
    if type(profile) is tuple:
        it.check_nesting(profile, "profile")
        if type(layout.shape) is not tuple or len(profile) > len(layout.shape):
            _fail("coalesce", f"{layout}, {it.format_inttuple(profile)}",
                  f"the target profile has rank {len(profile)} but the layout has rank {layout.rank}.")
        modes = _modes(layout)
        return _cat(*[coalesce(m, p) for m, p in zip(modes, profile)], *modes[len(profile):])
    shp, std = _coalesce_flat(it.flatten(layout.shape), it.flatten(layout.stride))
    return _raw(*_wrap(shp, std))


def filter_zeros(layout):
    """Replace the shape of every stride-0 mode by 1: the result agrees with L on the
    coordinates it keeps and has the same profile; its image equals L's image."""
    layout = _layout(layout, "filter_zeros")

    def go(s, d):
        if type(s) is tuple:
            return tuple(go(a, b) for a, b in zip(s, d))
        return 1 if type(d) is int and d == 0 else s

    return _raw(go(layout.shape, layout.stride), layout.stride)


def filter_(layout):
    """coalesce(filter_zeros(L)): drops stride-0 and size-1 modes.  The image of the result
    equals the image of L, and the result visits each of its offsets exactly once when L
    is injective on its non-zero-stride modes."""
    return coalesce(filter_zeros(layout))


# -- composition -----------------------------------------------------------------------------
def _compose_leaf(ashp, astr, s, d, what, alone=False):
    """(A o s:d) for a coalesced flat A given as lists; returns (shape, stride) of the result.  ``alone``: s:d is all
    of B, so CuTe's weak stride condition (d < a mode's extent, every element inside that mode) is enough."""
    if type(d) is int:
        if d == 0:
            return s, 0
        if d < 0:
            _fail("composition", what, f"the right operand has a negative stride {d}; composition needs strides >= 0.")
    n = len(ashp)
    if n == 1:
        return s, d * astr[0]
    if _is1(s):
        # CuTe keeps a stride for an extent-1 result: the stride divided through A's modes (ceil), onto A's last
        if type(s) is int and type(d) is int and all(type(x) is int for x in ashp):
            for si in ashp[:-1]:
                d = -(-d // si)
            return 1, d * astr[-1]
        return 1, 0
    rs, rd = s, d
    out_s, out_d = [], []
    for i in range(n - 1):
        if _is1(rs):
            break
        si, di = ashp[i], astr[i]
        if type(si) is int and type(rd) is int and type(rs) is int:
            # divide out the stride: skip whole modes, then start inside this one
            if rd % si == 0:
                rd //= si
                continue
            if si % rd:
                if alone and rd < si and rs <= -(-si // rd):
                    # CuTe's weak condition: the rs elements 0, rd, 2*rd, ... lie inside this mode, so a B of this one
                    # leaf composes ((16,?):(2,64) o 2:3 is 2:6, as CuTe DSL); with other leaves of B their sums
                    # could carry across A's modes, so there the strict condition stays
                    out_s.append(rs)
                    out_d.append(rd * di)
                    rs = 1
                    break
                _fail("composition", what, f"stride {rd} and mode size {si} do not divide one another (stride divisibility condition).")
            m = si // rd
            nd = rd * di
            rd = 1
            # mod out the shape: keep at most rs elements of this mode
            if m >= rs:
                out_s.append(rs)
                out_d.append(nd)
                rs = 1
                break
            if rs % m:
                _fail("composition", what, f"{rs} elements do not fit whole modes: mode of {m} does not divide {rs} (shape divisibility condition).")
            out_s.append(m)
            out_d.append(nd)
            rs //= m
            continue
        # dynamic: CuTe cannot decide which modes vanish, so every mode is kept with ? extents.  Each
        # division must satisfy the divisibility condition for every value the extents may take:
        # values.shape_div refuses what it cannot prove (a compiled kernel would be silently wrong).
        where = f"flat mode {i} ({si}:{di}) of the left operand"
        rd0 = rd
        m = _shape_div(si, rd, "composition", what, where)
        nd = rd * di
        rd = _shape_div(rd, si, "composition", what, where)
        if _is1(m):   # the stride steps over this whole mode (as the static path's rd % si == 0): no mode
            continue
        # keep k = min(m, rs) elements of this mode: all rs of them, or the whole mode when it divides rs
        vm, vr = _known(m), _known(rs)
        if _provably_divides(rs, m):
            k = rs
        elif _provably_divides(m, rs):
            k = m
        elif vm is not None and vr is not None:  # a host ? with its runtime value decides
            if vm < vr and vr % vm:
                _fail("composition", what, f"runtime extents: mode of {vm} does not divide {vr} (shape divisibility condition).")
            k = imin(m, rs)
        else:
            n = f"divisibility={rd0 * rs}" if type(rd0) is int and type(rs) is int else "a divisibility"
            _fail("composition", what, f"{where}: its {m} elements from stride {rd0} on must hold all {rs} remaining "
                  f"elements or divide {rs} (shape divisibility condition), which is not provable while compiling; "
                  f"give the extent {n} (mark_compact_shape_dynamic(..., {n})) or make it static.")
        out_s.append(k)
        out_d.append(nd)
        rs = _shape_div(rs, k, "composition", what, where)
    if not (_is1(rs) and out_s):
        out_s.append(rs)
        out_d.append(rd * astr[-1])
    if len(out_s) > 1:
        # CuTe DSL coalesces each leaf's result (static merges only): the static modes a dynamic extent of A kept
        # apart join again, ((8,?):(1,8) o 64:1 is 64:1 and not (8,8):(1,8) as CuTe C++ 4.2 prints it)
        cs, cd = _coalesce_flat(out_s, out_d)
        if cs:
            out_s, out_d = cs, cd
    return _wrap(out_s, out_d)


def _overlapping(B):
    """True unless B's leaves, sorted by stride, occupy disjoint digit ranges (d' >= s*d):
    only then is A o (B0, B1, ...) == (A o B0, A o B1, ...) for every A."""
    leaves = []
    for s, d in zip(it.flatten(B.shape), it.flatten(B.stride)):
        if (type(s) is int and s == 1) or (type(d) is int and d == 0):
            continue
        vs, vd = _known(s), _known(d)
        if vs is None or vd is None:
            return True
        leaves.append((vd, vs))
    if len(leaves) < 2:
        return False
    leaves.sort()
    return any(d1 < d0 * s0 for (d0, s0), (d1, _) in zip(leaves, leaves[1:]))


# Checking an overlapping right operand enumerates it; beyond this many coordinates we refuse
# rather than allocate gigabytes (a few int64 arrays of this length: ~100 MB).
MAX_ENUMERATED = 1 << 22


def _verify_overlapping(R, ashp, astr, B, what):
    """B's modes overlap, so the by-mode result may differ from A o B: check every index."""
    import numpy as np

    if not (has_values(B.shape) and has_values(B.stride) and has_values(R.shape) and has_values(R.stride)
            and all(type(v) is int or isinstance(v, Symbolic) for v in (*ashp, *astr))
            and has_values(tuple(ashp)) and has_values(tuple(astr))):
        _fail("composition", what, "the right operand's modes overlap and symbolic extents prevent checking the result.")
    n = known_value(B.size) if type(B.size) is int else B.size.value
    if n > MAX_ENUMERATED:
        _fail("composition", what, f"the right operand's modes overlap, and checking the result would enumerate {n} "
              f"coordinates (more than {MAX_ENUMERATED}); compose smaller or non-overlapping layouts.")
    x = B.offsets().copy()
    ref = np.zeros_like(x)
    vs, vd = [int(known_value(v)) for v in ashp], [int(known_value(v)) for v in astr]
    for s, d in zip(vs[:-1], vd[:-1]):
        ref += (x % s) * d
        x //= s
    ref += x * vd[-1]
    got = R.offsets()
    if not np.array_equal(got, ref):
        _fail("composition", what, "the right operand's modes overlap (it is not injective) and the left operand is "
              "not linear across them, so no layout compatible with it equals A o B.")


def _compose_tree(ashp, astr, bs, bd, what, top=True):
    if type(bs) is tuple:
        parts = [_compose_tree(ashp, astr, s, d, what, False) for s, d in zip(bs, bd)]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
    return _compose_leaf(ashp, astr, bs, bd, what, top)


def _is_tensor(x) -> bool:
    """A tensor in the layout core's sense: a layout plus a way to re-wrap a new layout and an
    offset over the same data (wb.Tensor, identity tensors, in-kernel tensors)."""
    lay = getattr(x, "layout", None)
    return hasattr(x, "_with_layout") and (type(lay) is Layout or getattr(lay, "_is_composed", False))


def composition(A, B):
    """Functional composition ``R = A o B``: ``R(i) == A(B(i))`` for ``0 <= i < size(B)`` and
    R is compatible with B (same profile).  A's last flat mode extends past ``size(A)``, even of extent 1
    (CuTe 4.x's ``coalesce_x``).  Where the divisibility conditions fail it raises, quoting what CuTe computes
    unchecked, unless that is ``A o B`` at every index (then it is the answer).

    B may be a Layout, an int (``n:1``), a Swizzle, or a tiler: a tuple of tilers / ints /
    None applied mode by mode (``R[i] == composition(A[i], B[i])``; None keeps the mode); as CuTe, the result has
    the tiler's rank: A's modes past it are dropped (``(4,8):(4,4) o <4>`` is ``(4):(4)``).  B may have basis
    strides: a leaf ``s:k@m`` composes A's mode m with ``s:k`` (CuTe's basis_get), so
    ``(4,6):(1,4) o (2,2):(1@1,1@0)`` is ``(2,2):(4,1)``.  With dynamic extents the result keeps CuTe DSL's
    hierarchy: A's modes merge only where both extents are static, each leaf's result is coalesced the same way
    (``(32,?,3):(1,32,32*?) o 64:1`` is ``(32,?,?):(1,32,?)``, ``(8,?):(1,8) o 64:1`` is ``64:1``); where that
    refuses because a dynamic extent kept A's modes apart (``(6,?):(1,6) o 4:1``: 4 and 6 do not divide), A with
    those modes merged by their strides (``6*?:1``) answers (CuTe DSL refuses).  Departure: where a dynamic extent
    of A comes before the tile's end, min(mode, rest) is decided from divisibility while compiling, so fewer ``?``
    modes remain (``(3,?{div=4},4):(1,6,?) o 12:1`` is ``(3,4):(1,6)``; CuTe DSL keeps ``(3,?,?):(1,6,?)``), and a
    run-time value that breaks the divisibility conditions is refused where CuTe computes unchecked.  A may be
    a tensor (wb.Tensor, an identity tensor, a tensor inside a kernel): the result is the tensor
    over the same data with layout ``A.layout o B``.
    """
    if type(A) is not Layout:
        if getattr(A, "_is_composed", False) or hasattr(A, "_compose"):
            return A._compose(B)
        if _is_tensor(A):  # CuTe's composition(tensor, layout): the same data seen through A.layout o B
            return A._with_layout(composition(A.layout, B), 0)
        raise TypeError(f"composition: expected a Layout, a composed layout or a tensor on the left, but got "
                        f"{type(A).__name__}.")
    tb = type(B)
    if tb is Layout:
        return _compose(A, B, True)
    if tb is int or isinstance(B, Symbolic):
        check_tile_size(B, f"composition({A}, {B})")
        return composition(A, _raw(B, _tile_stride(B)))
    if B is None:
        return A
    if tb is tuple:
        return _compose_by_mode(A, B, 0)
    if hasattr(B, "_compose_right"):
        return B._compose_right(A)
    raise TypeError(f"composition: expected a Layout, an int, a tuple tiler or None on the right, but got {tb.__name__}.")


def _tile_stride(n):
    """The stride of an int tiler n as a layout, CuTe's make_layout(n): 1, except 0 for a static 1 (CuTe's compact
    stride of an extent-1 mode), so ``A o 1`` is ``1:0`` as in CuTe DSL."""
    return 0 if type(n) is int and n == 1 else 1


def check_tile_size(n, where, what="tile size"):
    """A static tiler extent or cotarget must be positive: CuTe DSL refuses 0 and negative ones ("Expected size in
    shape to be strictly positive"; a 0 composition kills its process), where we returned ``-3:1`` or divided by 0."""
    if type(n) is int and n <= 0:
        raise ValueError(f"{where}: Expected a positive {what}, but got {n}.")
    return n


def _compose_by_mode(A, B, depth):
    """A o B for a tuple tiler B, mode by mode; a tuple mode of B recurses here, which bounds B's nesting."""
    if depth >= it.MAX_NESTING:
        raise it.too_deep("tiler")
    modes = _modes(A)
    if len(B) > len(modes):
        _fail("composition", f"{A}, {_fmt_tiler(it.check_nesting(B, 'tiler'))}",
              f"the tiler has rank {len(B)} but the layout has rank {len(modes)}.")
    # CuTe's composition with a Tile: only the modes the tiler names (None keeps one); the modes past it are
    # dropped, unlike the divides, which keep them as rest modes
    return _cat(*[_compose_by_mode(m, b, depth + 1) if type(b) is tuple else composition(m, b)
                  for m, b in zip(modes, B)])


def _basis_get(A, path, what):
    """A's mode at a basis path, outermost first (CuTe's basis_get): the layout a stride ``k@path`` of the right
    operand steps through.  A rank-1 layout is its own mode 0."""
    shp, std = A.shape, A.stride
    for p in path:
        if type(shp) is not tuple:
            if p == 0:
                continue
            _fail("composition", what, f"a basis stride of the right operand names mode {p}, but the left operand's "
                  f"mode there has rank 1.")
        if p >= len(shp):
            _fail("composition", what, f"a basis stride of the right operand names mode {p}, but the left operand's "
                  f"mode there has rank {len(shp)}.")
        shp, std = shp[p], std[p]
    return _raw(shp, std)


def _compose_basis(A, B, verify):
    """A o B where B has basis strides: a leaf ``s:k@m`` of B steps through A's mode m, so it composes as
    ``basis_get(A, m) o s:k``; an integer-strided leaf composes with A as a whole (CuTe's composition_impl).
    Leaves that step through the same mode must together compose exactly, which is checked as for any B."""
    what = (A, B)
    leaves = list(zip(it.flatten(B.shape), it.flatten(B.stride)))
    groups = {}
    for s, d in leaves:
        path, k = (d.path, d.scale) if type(d) is E else (None, d)
        groups.setdefault(path, ([], []))
        groups[path][0].append(s)
        groups[path][1].append(k)
    subs = {path: A if path is None else _basis_get(A, path, what) for path in groups}
    if verify:
        for path, (gs, gd) in groups.items():
            if len(gs) > 1:   # raises where no layout is sub o (these leaves)
                _compose(subs[path], _raw(tuple(gs), tuple(gd)), True)

    def tree(bs, bd):
        if type(bs) is tuple:
            parts = [tree(x, y) for x, y in zip(bs, bd)]
            return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
        path, k = (bd.path, bd.scale) if type(bd) is E else (None, bd)
        R = _compose(subs[path], _raw(bs, k), False)
        return R.shape, R.stride

    return _raw(*tree(B.shape, B.stride))


def _compose(A, B, verify):
    """A o B for Layouts; verify=False when B is known to be ordered and injective."""
    if any(type(d) is E for d in it.flatten(B.stride)):
        return _compose_basis(A, B, verify)
    what = (A, B)
    fs, fd = it.flatten(A.shape), it.flatten(A.stride)
    ashp, astr = _coalesce_flat(fs, fd)
    if type(fs[-1]) is int and fs[-1] == 1 and len(fs) > 1 and type(fd[-1]) is not E:
        # CuTe's coalesce_x: past size(A), A continues along its last flat mode's stride even when that mode has
        # extent 1 (the extension mode; its extent is never read), so an extent-1 result keeps that stride too
        ashp, astr = _coalesce_flat([*fs[:-1], 2], fd)
    if not ashp:
        # Note: pycute extends an all-extent-1 A with stride 0 (1:5 o 16:1 is 16:0).  Past A's one element
        # that collapses a ragged tile, and an identity tile with it, onto element 0, so elem_less would call
        # every element of the tile present; we extend along A's last stride, as CuTe 4.x's coalesce_x does.
        ashp, astr = [1], [fd[-1]]
    try:
        R = _raw(*_compose_tree(ashp, astr, B.shape, B.stride, what))
    except LayoutAlgebraError as e:
        mshp, mstr = _coalesce_flat(ashp, astr, dynamic=True)
        if len(mshp) < len(ashp):
            # a dynamic extent kept A's modes apart, as CuTe keeps them, and CuTe refuses ((6,?):(1,6) o 4:1: 4 and 6
            # do not divide); A is the same function with them merged by their strides (6*?:1), where A o B is
            # defined: answer that (CuTe DSL refuses; no CuTe hierarchy to keep)
            try:
                R = _raw(*_compose_tree(mshp, mstr, B.shape, B.stride, what))
            except LayoutAlgebraError:
                pass
            else:
                if verify and len(mshp) > 1 and type(B.shape) is tuple and _overlapping(B):
                    _verify_overlapping(R, mshp, mstr, B, what)
                return R
        alt = _cute_answer(A, B)
        if alt is None:
            raise
        if alt[1]:   # CuTe's unchecked result is A o B after all: CuTe's answer is defined, give it
            return alt[0]
        raise LayoutAlgebraError(f"{e} (CuTe computes {alt[0]} here without checking, which is not A o B.)") from None
    if verify and len(ashp) > 1 and type(B.shape) is tuple and _overlapping(B):
        _verify_overlapping(R, ashp, astr, B, what)
    return R


# -- what CuTe returns where the divisibility conditions fail (it does not check them) --------------------------
def _static_ints(L) -> bool:
    return all(type(x) is int for x in (*it.flatten(L.shape), *it.flatten(L.stride)))


def _cute_compose_leaf(ashp, astr, s, d):
    """CuTe's composition_impl for one leaf s:d of B over the flat A, as CuTe C++/CuTe DSL compute it: the
    divisibility conditions unchecked (ceil_div, min), so the result may not be A o B."""
    if d == 0:
        return s, 0
    if len(ashp) == 1:
        return s, d * astr[0]
    out_s, out_d, rs, rd = [], [], s, d
    for si, di in zip(ashp[:-1], astr[:-1]):
        next_shape = -(-si // abs(rd))
        next_stride = -(-abs(rd) // si) * (1 if rd > 0 else -1)
        if next_shape != 1 and rs != 1:
            new = min(next_shape, rs)
            out_s.append(new)
            out_d.append(rd * di)
            rs //= new
        rd = next_stride
    if not out_s:
        return rs, rd * astr[-1]
    if rs == 1:
        return _wrap(out_s, out_d)
    return _wrap(out_s + [rs], out_d + [rd * astr[-1]])


def _cute_compose_tree(ashp, astr, bs, bd):
    if type(bs) is tuple:
        parts = [_cute_compose_tree(ashp, astr, x, y) for x, y in zip(bs, bd)]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
    return _cute_compose_leaf(ashp, astr, bs, bd)


def _cute_answer(A, B):
    """(CuTe's result for static A o B, whether it is A o B at every index of B) or None when it cannot be said
    (symbolic values, basis strides, or more than 2**16 indices to check)."""
    if not (_static_ints(A) and _static_ints(B)) or any(d < 0 for d in it.flatten(B.stride)) or B.size > 1 << 16:
        return None
    ashp, astr = _coalesce_flat(it.flatten(A.shape), it.flatten(A.stride))
    if not ashp:
        ashp, astr = [1], [0]
    try:
        R = _raw(*_cute_compose_tree(ashp, astr, B.shape, B.stride))
        ok = R.size == B.size and all(R(i) == A(B(i)) for i in range(B.size))
    except (ValueError, ZeroDivisionError, TypeError):
        return None
    return R, ok


def _cute_complement(layout, M):
    """CuTe's complement (C++ detail::complement after filter) for static strides, its injectivity unchecked;
    ``M`` an int or a shape (its modes divided one by one, as CuTe's ceil_div of a shape does)."""
    shp, std = _coalesce_flat(*[list(x) for x in zip(*[(s, d) for s, d in zip(it.flatten(layout.shape),
                                                                                  it.flatten(layout.stride)) if d != 0]
                                                         or [(1, 0)])])
    if not shp:
        return _raw(it.product(M), 1)
    modes = list(zip(shp, std))
    res_s, res_d = [], [1]
    while len(modes) > 1:
        k = min(range(len(modes)), key=lambda j: modes[j][1])
        s, d = modes.pop(k)
        res_s.append(d // res_d[-1])
        res_d.append(d * s)
    s, d = modes[0]
    res_s.append(d // res_d[-1])
    if type(M) is tuple:   # a shape cotarget (logical_divide's): CuTe's ceil_div of a shape, mode by mode
        rest, b = 1, d * s
        for a in it.flatten(M):
            rest, b = rest * -(-a // b), -(-b // a)
    else:
        rest = -(-M // (d * s))
    out_s, out_d = _coalesce_flat(res_s + [rest], res_d + [d * s])
    return _raw(*_wrap(out_s, out_d)) if out_s else _raw(1, 0)


def _fmt_tiler(t):
    if type(t) is tuple:
        return "<" + ",".join(_fmt_tiler(e) for e in t) + ">"
    return "_" if t is None else str(t)


# -- complement ------------------------------------------------------------------------------
def _static_strides(op, layout, modes):
    for i, (s, d) in enumerate(modes):
        if type(d) is not int:
            _fail(op, layout, f"needs static integer strides, but flat mode {i} ({s}:{d}) has the {'dynamic' if isinstance(d, Symbolic) else 'non-integer'} stride {d}.")
        if d < 0:
            _fail(op, layout, f"needs non-negative strides, but flat mode {i} has stride {d}.")


def complement(layout, cotarget=None):
    """CuTe's complement: the ordered layout R of the offsets A leaves out, up to ``size(cotarget)``.

    With A's modes sorted by stride, R's mode k has shape ``d_k // (s_{k-1}*d_{k-1})`` (the gap
    before stride d_k, in units of what precedes it) and the last mode extends to
    ``ceil(size(cotarget) / (s*d of A's largest mode))``.  Guarantees: R's strides are positive and
    increasing, ``cosize(make_layout(A, R)) >= size(cotarget)``, and when every stride of A is a
    multiple of the extent below it, A and R have disjoint images (``make_layout(A, R)`` is
    injective).  As CuTe and pycute, a gap that is not such a multiple is rounded down
    (``complement((4,6):(1,6), 34) == 1:0``).  Raises, as CuTe does, when a stride falls inside the
    span of the modes below it (``(2,2):(2,3)``), which every non-injective layout does.  ``cotarget`` defaults to ``cosize(A)``; it may be an int,
    a symbolic value or a shape (its size is used).
    """
    if getattr(layout, "_is_f2", False):   # an F2 layout: the unit offsets its bases leave out (GF(2))
        return layout._complement(cotarget)
    layout = _layout(layout, "complement")
    if cotarget is None:
        cotarget = layout.cosize
    if type(cotarget) is tuple:
        it.check_nesting(cotarget, "cotarget")
    M = it.product(cotarget)
    if not (type(M) is int or isinstance(M, Symbolic)):
        raise TypeError(f"complement({layout}, {cotarget!r}): Expected an int, a symbolic value or a shape as the "
                        f"cotarget, but got {type(cotarget).__name__}.")
    check_tile_size(M, f"complement({layout}, {cotarget})", "cotarget size")
    what = (layout, cotarget)
    flat = [(s, d) for s, d in zip(it.flatten(layout.shape), it.flatten(layout.stride))
            if not (type(s) is int and s == 1) and not (type(d) is int and d == 0)]
    if len(flat) == 1 and isinstance(flat[0][1], Symbolic):
        # one mode needs no ordering, so its stride may be dynamic, as in CuTe: complement(12:?, 53) is
        # (?,?):(1,12*?) (with ? = 1 at run time, (1,5):(1,12))
        if (known_value(flat[0][1]) or 1) <= 0:
            _fail("complement", what, f"needs a positive stride, but the dynamic stride {flat[0][1]} is "
                  f"{known_value(flat[0][1])} at run time.")
    else:
        _static_strides("complement", what, flat)   # the modes are ordered by stride while compiling
    flat.sort(key=lambda m: m[1])
    cur = 1
    out_s, out_d = [], []
    for s, d in flat:
        vc = known_value(cur)
        if vc is not None and type(d) is int and d < vc:
            cute = _cute_complement(layout, cotarget) if _static_ints(layout) and is_static(cotarget) else None
            said = f" CuTe computes {cute} here without checking, which is no complement." if cute is not None else ""
            _fail("complement", what, f"no complement exists: stride {d} lies inside the span {vc} of the modes "
                  f"below it (CuTe's complement needs the modes, sorted by stride, not to interleave).{said}")
        n = d // cur
        if not _is1(n):
            out_s.append(n)
            out_d.append(cur)
        cur = s * d
    for rest in _rest_shape(cotarget, cur):
        if not _is1(rest):
            out_s.append(rest)
            out_d.append(cur)
        cur = cur * rest
    shp, std = _coalesce_flat(out_s, out_d)
    if not shp:
        return _raw(1, 0)
    return _raw(*_wrap(shp, std))


def _rest_shape(cotarget, span):
    """CuTe's ``ceil_div(cotarget, span)``: for an int, one extent; for a shape, mode by mode (what is left of
    each mode once the span is used up: ``ceil_div((8,8,2), 6) == (2,8,2)``, 32 where the sizes give 22)."""
    if type(cotarget) is not tuple:
        return [ceil_div(cotarget, span)]
    out = []
    for a in it.flatten(cotarget):
        out.append(ceil_div(a, span))
        span = ceil_div(span, a)
    return out


# -- inverses --------------------------------------------------------------------------------
def right_inverse(layout):
    """R with ``L(R(i)) == i`` for ``0 <= i < size(R)``: the longest contiguous run of offsets
    0, 1, 2, ... that L reaches, mapped back to L's indices.  ``1:0`` when L never reaches 1.
    A dynamic stride ends the run (its value is not known while compiling), as in CuTe DSL:
    ``right_inverse((4,2):(1,?))`` is ``4:1``."""
    if getattr(layout, "_is_f2", False):   # an F2 layout: by elimination over GF(2)
        return layout._right_inverse()
    layout = _layout(layout, "right_inverse")
    if _has_basis(layout):
        return _by_basis(layout, "right_inverse", _right_inverse_run)
    shp, std = _coalesce_flat(it.flatten(layout.shape), it.flatten(layout.stride))
    modes = list(zip(shp, std))
    rstride = it.prefix_product(tuple(shp)) if shp else ()
    by_stride = {}
    for i, (_s, d) in enumerate(modes):
        if type(d) is int and d > 0:   # a dynamic stride is never known to continue the run: CuTe skips it too
            by_stride.setdefault(d, i)
    out_s, out_d = [], []
    cur = 1
    while type(cur) is int and cur in by_stride:
        i = by_stride.pop(cur)
        s = shp[i]
        out_s.append(s)
        out_d.append(rstride[i])
        cur = s * cur
    rs, rd = _coalesce_flat(out_s, out_d)
    return _raw(*_wrap(rs, rd))


def left_inverse(layout):
    """L' with ``L'(L(i)) == i`` for ``0 <= i < size(L)``; L must be injective and its sorted
    strides must each divide the next (otherwise no layout can invert it: ValueError).

    Built as a mixed-radix decoder: digit k of an offset, in the radix of consecutive stride
    ratios, is the coordinate of the mode with the k-th smallest stride.  (pycute 4.2 returns
    a wrong inverse for (4,6):(1,6); this returns (6,6):(1,4).)
    """
    if getattr(layout, "_is_f2", False):   # an F2 layout: by elimination over GF(2)
        return layout._left_inverse()
    layout = _layout(layout, "left_inverse")
    if _has_basis(layout):
        return _by_basis(layout, "left_inverse", lambda modes, what: _left_inverse_modes(
            [(d, s, r) for s, d, r in modes if not _is1(s)], what))
    shp, std = _coalesce_flat(it.flatten(layout.shape), it.flatten(layout.stride))
    if not shp:
        return _raw(1, 0)
    rstride = it.prefix_product(tuple(shp))
    return _left_inverse_modes(list(zip(std, shp, rstride)), layout)


def _left_inverse_modes(modes, layout):
    """The left inverse of the modes (stride d, extent s, index stride r): a mixed-radix decoder of offsets."""
    if not modes:
        return _raw(1, 0)
    _static_strides("left_inverse", layout, [(s, d) for d, s, _ in modes])
    modes.sort(key=lambda m: m[0])
    out_s, out_d = [], []
    if modes[0][0] == 0:
        _fail("left_inverse", layout, f"the layout is not injective: a mode of size {modes[0][1]} has stride 0.")
    if modes[0][0] > 1:
        out_s.append(modes[0][0])
        out_d.append(0)
    for k, (d, s, r) in enumerate(modes):
        if k + 1 < len(modes):
            nd = modes[k + 1][0]
            vs = _known(s)
            if vs is None:
                _fail("left_inverse", layout, f"needs a static (or known) extent for the mode of stride {d}, but got {s}.")
            if nd % d:
                _fail("left_inverse", layout, f"no layout inverts it: stride {nd} is not a multiple of stride {d}.")
            if nd < vs * d:
                _fail("left_inverse", layout, f"the layout is not injective: the mode {s}:{d} overlaps the mode of stride {nd}.")
            out_s.append(nd // d)
        else:
            out_s.append(s)
        out_d.append(r)
    rs, rd = _coalesce_flat(out_s, out_d)
    return _raw(*_wrap(rs, rd))


def _has_basis(L):
    return any(type(d) is E for d in it.flatten(L.stride))


def _right_inverse_run(modes, what):
    """The run 0, 1, 2, ... of offsets that the modes (extent s, static stride d, index stride r) reach."""
    by_stride = {}
    for s, d, r in modes:
        if type(d) is int and d > 0:
            by_stride.setdefault(d, (s, r))
    out_s, out_d, cur = [], [], 1
    while type(cur) is int and cur in by_stride:
        s, r = by_stride.pop(cur)
        out_s.append(s)
        out_d.append(r)
        cur = s * cur
    rs, rd = _coalesce_flat(out_s, out_d)
    return _raw(*_wrap(rs, rd))


def _by_basis(layout, op, inverse):
    """An inverse of a basis-strided (coordinate) layout, as CuTe DSL computes it: its codomain is a coordinate, so
    the inverse has one mode per coordinate entry (the codomain's profile), each the inverse of the leaves whose
    strides step through that entry, with their index strides in L's domain.  ``right_inverse((4,5):(1@0,1@1))`` is
    ``(4,5):(1,4)``: ``L(R(c)) == c`` for every coordinate c of R's shape.  An entry no leaf steps through is 1:0."""
    shp, std = (it.flatten(layout.shape), it.flatten(layout.stride)) if type(layout.shape) is tuple else \
        ((layout.shape,), (layout.stride,))
    groups = {}
    for s, d, r in zip(shp, std, it.prefix_product(tuple(shp))):
        if type(d) is int and d == 0:
            continue
        if type(d) is not E:
            _fail(op, layout, f"the layout mixes the integer stride {d} with basis strides: its values are neither "
                  f"offsets nor coordinates.")
        groups.setdefault(d.path, []).append((s, d.scale, r))

    def tree(prefix):
        here = [p for p in groups if p[:len(prefix)] == prefix]
        if prefix in groups:
            if len(here) > 1:
                _fail(op, layout, f"basis strides step through coordinate entry {prefix} and inside it.")
            return inverse(groups[prefix], layout)
        n = max(p[len(prefix)] for p in here) + 1
        return _cat(*[tree(prefix + (k,)) if any(p[len(prefix)] == k for p in here) else _raw(1, 0)
                      for k in range(n)])

    return tree(()) if groups else _raw(1, 0)


# -- vectorization ---------------------------------------------------------------------------
def max_common_layout(a, b):
    """The largest layout R with ``a(R(i)) == i`` and ``b(R(i)) == i`` (both map R's indices
    to the same contiguous offsets); ``1:0`` for dynamic layouts, as CuTe."""
    a, b = _layout(a, "max_common_layout"), _layout(b, "max_common_layout")
    if not (a.is_static and b.is_static):
        return _raw(1, 0)
    inv_b = right_inverse(b)
    try:
        common = coalesce(composition(a, inv_b))
    except LayoutAlgebraError:  # a o b^-1 has no layout: nothing in common beyond one element
        return _raw(1, 0)
    c0 = _modes(common)[0]
    if c0.stride != 1:
        return _raw(1, 0)
    return composition(inv_b, c0)


def max_common_vector(a, b):
    """The number of leading elements that a and b both map to 0, 1, 2, ...:
    ``size(max_common_layout(a, b))``; 1 when a layout is dynamic (as CuTe)."""
    return max_common_layout(a, b).size


# -- mode manipulation -----------------------------------------------------------------------
def select(layout, *modes):
    """The layout of the chosen top-level modes, in that order: ``select(L, 2, 0)`` or
    ``select(L, [2, 0])``; ``select(L, i)[k] == L[modes[k]]``."""
    layout = _layout(layout, "select")
    if len(modes) == 1 and isinstance(modes[0], (list, tuple)):
        modes = tuple(modes[0])
    ms = _modes(layout)
    for m in modes:
        if type(m) is not int:
            raise TypeError(f"select: expected int mode indices, but got {type(m).__name__}.")
        if not -len(ms) <= m < len(ms):
            _fail("select", layout, f"mode {m!r} is out of range for rank {len(ms)}.")
    return _cat(*[ms[m] for m in modes])


def group_modes(layout, begin, end=None):
    """Modes begin..end-1 become one mode: same function, rank reduced by end-begin-1."""
    layout = _layout(layout, "group_modes")
    ms = _modes(layout)
    end = len(ms) if end is None else end
    if begin < 0:
        begin += len(ms)
    if end < 0:
        end += len(ms)
    if not 0 <= begin <= end <= len(ms):
        _fail("group_modes", layout, f"expected 0 <= begin <= end <= {len(ms)}, but got begin={begin}, end={end}.")
    return _cat(*ms[:begin], _cat(*ms[begin:end]), *ms[end:])


def flatten(x):
    """A layout with the leaves of L as its modes (same function); for an IntTuple, its
    leaves: flatten((1,(2,3))) == (1,2,3)."""
    if type(x) is Layout:
        if type(x.shape) is not tuple:
            return x
        return _raw(it.flatten(x.shape), it.flatten(x.stride))
    return it.flatten(it.check_nesting(x, "shape"))


def append(layout, elem=None, up_to_rank=None):
    """Add ``elem`` (default ``1:0``) as the last mode; with ``up_to_rank`` pad to that rank.
    The function on the old modes is unchanged."""
    layout = _layout(layout, "append")
    ms = _modes(layout)
    e = _raw(1, 0) if elem is None else _layout(elem, "append")
    if up_to_rank is None:
        return _cat(*ms, e)
    if len(ms) >= up_to_rank:
        return layout
    return _cat(*ms, *([e] * (up_to_rank - len(ms))))


def prepend(layout, elem=None, up_to_rank=None):
    """Add ``elem`` (default ``1:0``) as the first mode (or pad in front to ``up_to_rank``)."""
    layout = _layout(layout, "prepend")
    ms = _modes(layout)
    e = _raw(1, 0) if elem is None else _layout(elem, "prepend")
    if up_to_rank is None:
        return _cat(e, *ms)
    if len(ms) >= up_to_rank:
        return layout
    return _cat(*([e] * (up_to_rank - len(ms))), *ms)


def make_ordered_layout(shape, order):
    """A compact layout of ``shape`` whose strides grow in the order given by ``order`` (a
    permutation congruent with shape, or flat): the leaf with the smallest order gets
    stride 1.  Guarantee: a bijection onto [0, size(shape))."""
    shape, order = _to_tuple(shape, "shape"), _to_tuple(order, "stride order")   # bounds the nesting too
    fs, fo = it.flatten(shape), it.flatten(order)
    if len(fs) != len(fo):
        _fail("make_ordered_layout", f"{it.format_inttuple(shape)}, {it.format_inttuple(order)}",
              f"the order has {len(fo)} leaves but the shape has {len(fs)}.")
    if sorted(fo) != sorted(set(fo)):
        _fail("make_ordered_layout", f"{it.format_inttuple(shape)}, {it.format_inttuple(order)}", "the order repeats a value.")
    strides = [None] * len(fs)
    cur = 1
    for i in sorted(range(len(fs)), key=lambda k: fo[k]):
        strides[i] = 0 if type(fs[i]) is int and fs[i] == 1 else cur   # CuTe: a static extent-1 mode gets 0
        cur = cur * fs[i]
    return Layout(shape, it.unflatten(strides, shape))


def is_compact(layout) -> bool:
    """True when L, its extent-1 modes dropped, is a bijection onto ``[0, size(L))``: a compact layout
    in some order of its modes (stride 1 on the smallest, each next stride the extent below it)."""
    layout = _layout(layout, "is_compact")
    want = 1
    for d, n in sorted((d, n) for n, d in zip(it.flatten(layout.shape), it.flatten(layout.stride)) if n != 1):
        if d != want:
            return False
        want *= n
    return True


def product_each(shape):
    """The size of each top-level mode: product_each((2,(3,4))) == (2, 12)."""
    if type(shape) is Layout:
        shape = shape.shape
    if type(shape) is tuple:
        return tuple(it.product(s) for s in it.check_nesting(shape, "shape"))
    return shape


# -- nullspace -------------------------------------------------------------------------------
def nullspace(layout):
    """The indices L maps to offset 0, as a layout into L's domain (CuTe's nullspace): the flat modes of stride 0,
    each with its column-major index stride.  Guarantees: ``L(N(i)) == 0`` for ``0 <= i < size(N)`` and N is
    injective; when L is injective on its other modes, N's image is every index L sends to 0.  ``1:0`` when no mode
    has stride 0: ``nullspace((4,2,3):(1,0,0)) == (2,3):(4,8)``.  As CuTe, only a static 0 counts (a dynamic stride
    is taken to be non-zero) and extent-1 modes are kept (``(4,1,3):(1,0,0)`` gives ``(1,3):(4,4)``)."""
    if getattr(layout, "_is_f2", False):   # an F2 layout: by elimination over GF(2)
        return layout._nullspace()
    layout = _layout(layout, "nullspace")
    shp, std = (it.flatten(layout.shape), it.flatten(layout.stride)) if type(layout.shape) is tuple else \
        ((layout.shape,), (layout.stride,))
    index_strides = it.prefix_product(tuple(shp))
    keep = [(s, r) for s, d, r in zip(shp, std, index_strides) if type(d) is int and d == 0]
    if not keep:
        return _raw(1, 0)
    return _raw(*_wrap([s for s, _ in keep], [r for _, r in keep]))


# -- recast ----------------------------------------------------------------------------------
def _upcast_leaf(s, d, n, what):
    """One mode over units of ``n`` old elements: CuTe's upcast<n>, the divisibility it assumes checked."""
    if type(d) is int:
        if d == 0:
            return s, 0
        a = abs(d)
        if a % n and n % a:
            _fail("recast_layout", what, f"stride {d} and the width ratio {n} do not divide one another, so the mode's "
                  f"elements do not start on whole new elements (CuTe rounds them, a wrong layout).")
        k = n // a if n % a == 0 else 1
        return ceil_div(s, k) if k != 1 else s, (1 if d > 0 else -1) * ceil_div(a, n)
    if type(d) is E:
        _fail("recast_layout", what, f"a basis stride {d} is a coordinate, not an offset in elements.")
    try:   # a dynamic stride: divisibility or the run-time value must prove n | d (or d | n)
        k = shape_div(n, d)
        return ceil_div(s, k) if not _is1(k) else s, shape_div(d, n)
    except ValueError as e:
        _fail("recast_layout", what, f"the dynamic stride {d}: {e}")


def _downcast_leaf(s, d, n):
    """One mode over units of ``1/n`` old elements: a stride-1 mode holds n times as many, other strides scale."""
    if type(d) is int and d == 1:
        return s * n, 1
    return s, d * n


def _map_leaves(layout, f):
    def go(s, d):
        if type(s) is tuple:
            parts = [go(a, b) for a, b in zip(s, d)]
            return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
        return f(s, d)
    return _raw(*go(layout.shape, layout.stride))


def _recast_swizzle(sw, num, den, what):
    """A swizzle of element offsets over the new elements: its base M moves by log2 of the ratio (its byte
    spelling is unchanged).  A base below 0 would swizzle parts of one new element: refused (CuTe C++ drops bits,
    CuTe DSL 4.8.1 prints an overflowed base)."""
    lg = {1 << k: k for k in range(31)}
    if num not in lg or den not in lg:
        _fail("recast_layout", what, f"a swizzle recasts only by a power-of-two width ratio, but got {num}/{den}.")
    base = sw.base - lg[num] + lg[den]
    if base < 0 and sw.bits:
        _fail("recast_layout", what, f"the swizzle {sw} moves {1 << sw.base}-element blocks, smaller than one new "
              f"element ({num}/{den} old ones): no swizzle of the new elements is this function.")
    return type(sw)(sw.bits, max(base, 0), sw.shift)


def recast_layout(new_type_bits, old_type_bits, src_layout):
    """CuTe DSL's ``recast_layout(new_type_bits, old_type_bits, layout)``: the layout over elements of
    ``new_type_bits`` bits that ``layout`` (over ``old_type_bits``-bit elements) describes.  With
    ``r = new/old = num/den`` in lowest terms it is CuTe's ``downcast<den>(upcast<num>(layout))``: upcast divides
    each stride by num (a stride-1 mode holds ``ceil(s/num)`` new elements; stride 0 stays), downcast multiplies
    strides by den (a stride-1 mode holds ``s*den``).  A swizzled layout recasts its swizzle (base M moves by
    log2 r), its offset and its layout: ``S<3,3,3> o 0 o (8,64):(64,1)`` from 16 to 32 bits is
    ``S<3,2,3> o 0 o (8,32):(32,1)``.  Departure from CuTe: where a stride and the ratio do not divide one another
    (``(3,8):(1,3)`` from 16 to 32 bits, whose odd elements start inside a 32-bit word) CuTe rounds and returns a
    wrong layout; this raises (LayoutAlgebraError), as it does for a dynamic stride not provably divisible."""
    for name, v in (("new_type_bits", new_type_bits), ("old_type_bits", old_type_bits)):
        if type(v) is not int:
            raise TypeError(f"recast_layout: expected an int {name}, but got {type(v).__name__}.")
        if v <= 0:
            raise ValueError(f"recast_layout: expected a positive {name}, but got {v}.")
    from math import gcd

    g = gcd(new_type_bits, old_type_bits)
    num, den = new_type_bits // g, old_type_bits // g
    what = f"{new_type_bits}, {old_type_bits}, {src_layout}"
    if getattr(src_layout, "_is_composed", False):
        L = src_layout
        if type(L.inner) is Layout:
            _fail("recast_layout", what, "the inner function is a layout; only a swizzle (or a plain layout) recasts.")
        off = L.offset
        if type(off) is int and (off * den) % num:
            _fail("recast_layout", what, f"the offset {off} is not a whole number of new elements.")
        ptr = L.ptr_bits
        if ptr is not None and (ptr * num) % den:
            ptr = None
        return type(L)(_recast_swizzle(L.inner, num, den, what), off * den // num if type(off) is int else
                       _recast_offset(off, num, den, what), recast_layout(new_type_bits, old_type_bits, L.outer),
                       None if ptr is None else ptr * num // den)
    layout = _layout(src_layout, "recast_layout")
    if num > 1:
        layout = _map_leaves(layout, lambda s, d: _upcast_leaf(s, d, num, what))
    if den > 1:
        layout = _map_leaves(layout, lambda s, d: _downcast_leaf(s, d, den))
    return layout


def _recast_offset(off, num, den, what):
    try:
        return shape_div(off * den, num)
    except ValueError as e:
        _fail("recast_layout", what, f"the dynamic offset {off}: {e}")
