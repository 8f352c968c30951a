"""Vector copies (``wb.copy(src, dst)`` and ``UniversalCopy`` atoms): ``lanes`` contiguous elements per access,
up to 128 bits (``uint4``), where the layouts and alignment prove it safe.

A chunk of ``lanes`` elements becomes one vector access when, for both tensors,
(1) the chunk's offsets are consecutive: checked element by element when the layouts are static inside
    the fragment, else proven by a static stride-1 leading run of both layouts that ``lanes`` divides
    (the other modes' strides may be dynamic: rows of a tile whose row pitch is a ``?``),
(2) the buffer's assumed alignment is a multiple of the access width, and
(3) the chunk's first element is provably aligned: the divisibility of the tensor's base offset plus the
    chunk's offset, times ``sizeof(T)``, is a multiple of the access width (divisibility comes from
    static values, ``Dyn`` divisibility of dynamic shapes/strides, and the arithmetic that combines them).
If any chunk fails, the next narrower width is tried (16, 8, 4 bytes), then element by element.
All loads are issued before the stores (a register fragment), as CuTe's copy does.

CPU semantics: the same loads then stores, each global access bounds-checked and, for a vector, checked for the
alignment the GPU access needs.
"""

from __future__ import annotations

from math import gcd

from ...layout import ComposedLayout, Layout, Swizzle, coalesce, divisibility_of, flatten
from .. import ir
from .. import views as V
from ..atoms_in_kernels import COPY_LOWERINGS
from ..backends.cpu import index
from ..backends.cuda import ctype, expr
from ..builtins import ATOM_COPIES, builtin

_VEC = {16: "uint4", 8: "uint2", 4: "unsigned int", 2: "unsigned short", 1: "unsigned char"}


class VecCopy(ir.Instruction):
    """Copy ``lanes`` contiguous elements per pair, as one 128-bit (or narrower) access each:
    all loads are issued before the stores.  pairs: [(src_buf, src_off, dst_buf, dst_off)]."""

    __slots__ = ("pairs", "lanes")

    def __init__(self, pairs, lanes):
        self.pairs, self.lanes = pairs, lanes

    def cuda(self, em, d):
        es = self.pairs[0][0].etype.bits // 8
        vb = es * self.lanes
        names = []
        if self.lanes == 1:
            for sb, so, _, _ in self.pairs:
                n = em.fresh("_r")
                names.append(n)
                em.w(d, f"const {ctype(sb.etype)} {n} = {sb.name}[{expr(so)}];")
            for n, (_, _, db, do) in zip(names, self.pairs):
                em.w(d, f"{db.name}[{expr(do)}] = {n};")
            return
        vt = _VEC[vb]
        em.w(d, f"// {self.lanes}-wide ({vb * 8}-bit) copy: static layout and alignment proven")
        for sb, so, _, _ in self.pairs:
            n = em.fresh("_v")
            names.append(n)
            em.w(d, f"const {vt} {n} = *reinterpret_cast<const {vt}*>({sb.name} + {expr(so)});")
        for n, (_, _, db, do) in zip(names, self.pairs):
            em.w(d, f"*reinterpret_cast<{vt}*>({db.name} + {expr(do)}) = {n};")

    def python(self, em, d):
        names = []
        for sb, so, _, _ in self.pairs:
            n = em.fresh("_vc")   # not _r16/_r32: the rounding helpers
            names.append(n)
            if self.lanes == 1:
                em.w(d, f"{n} = {sb.name}.item({index(sb, so)})")
            else:
                o = f"_o{em.tmp}"
                em.w(d, f"{o} = {index(sb, so)}")
                if sb.space == "gmem":
                    em.w(d, f"_ixr_{sb.name}({o}, {self.lanes}); _al_{sb.name}({o}, {self.lanes})")
                em.w(d, f"{n} = {sb.name}[{o}:{o} + {self.lanes}].copy()")
        for n, (_, _, db, do) in zip(names, self.pairs):
            if self.lanes == 1:
                em.w(d, f"{db.name}[{index(db, do)}] = {n}")
            else:
                o = em.fresh("_o")
                em.w(d, f"{o} = {index(db, do)}")
                if db.space == "gmem":
                    em.w(d, f"_ixr_{db.name}({o}, {self.lanes}); _al_{db.name}({o}, {self.lanes})")
                em.w(d, f"{db.name}[{o}:{o} + {self.lanes}] = {n}")


MAX_COPY_ELEMENTS = 1024


def _aligned(t: V.KTensor, off, vbytes: int, es: int) -> bool:
    """Is element ``t.offset + off`` of t's buffer provably ``vbytes``-aligned?  The divisibility of
    a sum is at least the gcd of its terms' (0 divides nothing away: gcd(d, 0) == d)."""
    if t.buf.align % vbytes:
        return False
    return (gcd(divisibility_of(t.offset), divisibility_of(off)) * es) % vbytes == 0


def leading_run(layout) -> int:
    """The static extent of the layout's first mode once coalesced, when its stride is 1 (else 1): the
    logical elements 0..run-1 are consecutive in memory, and so is every aligned group of ``lanes``
    elements with lanes | run (it lies inside that mode, at any value of the other modes)."""
    c = coalesce(layout.layout if type(layout) is _Offset else layout)
    shape, stride = flatten(c.shape), flatten(c.stride)
    return shape[0] if type(shape[0]) is int and type(stride[0]) is int and stride[0] == 1 else 1


def _unswizzled(layout):
    """offset + L of a swizzled ComposedLayout (a plain layout: the offset folded in), or the layout itself."""
    if type(layout) is not ComposedLayout:
        return layout
    if type(layout.inner) is not Swizzle or type(layout.outer) is not Layout:
        return None
    return _Offset(layout.offset, layout.outer)


class _Offset:
    """offset + L(i), as the planner evaluates a layout (called, sized, coalesced through L)."""

    def __init__(self, offset, layout):
        self.offset, self.layout = offset, layout
        self.size = layout.size

    def __call__(self, i):
        return ir.binop("+", self.offset, self.layout(i))


def plan(src: V.KTensor, dst: V.KTensor, max_lanes: int = 1 << 30):
    """(lanes, [(src_offset, dst_offset)]) for the widest access that is proven safe, at most max_lanes a chunk."""
    if src.etype is not dst.etype:
        raise TypeError(f"Expected copy between tensors of one element type, but got {src.etype} and {dst.etype}.")
    n, m = src.layout.size, dst.layout.size
    if type(n) is not int or type(m) is not int:
        raise ValueError(f"Expected tensors of static size for copy (partition first), but got {src.layout} and {dst.layout}.")
    if n != m:
        raise ValueError(f"Expected copy between tensors of equal size, but got {n} and {m}.")
    if n > MAX_COPY_ELEMENTS:
        raise ValueError(f"Expected a copy of at most {MAX_COPY_ELEMENTS} elements per thread, but got {n}.")
    so = [src.layout(i) for i in range(n)]
    do = [dst.layout(i) for i in range(n)]
    es = src.etype.bits // 8
    if es < 1 or src.etype.bits % 8:
        return 1, list(zip(so, do))
    # a swizzled tensor (Swizzle<B,M,S> o offset o L) keeps every aligned run of 2^M elements of offset + L(i)
    # together and in place: plan on the unswizzled offsets, chunks of at most 2^M, and swizzle each chunk's start
    cap = n
    swizzled = False
    for t in (src, dst):
        if type(t.layout) is ComposedLayout and type(t.layout.inner) is Swizzle:
            cap = min(cap, 1 << t.layout.inner.base)
            swizzled = True
    if swizzled:
        flat_s, flat_d = _unswizzled(src.layout), _unswizzled(dst.layout)
        if flat_s is None or flat_d is None:
            return 1, list(zip(so, do))
        lanes, _ = plan(V.KTensor(src.buf, src.offset, flat_s), V.KTensor(dst.buf, dst.offset, flat_d), cap)
        return lanes, [(so[c], do[c]) for c in range(0, n, lanes)]
    static = all(type(x) is int for x in so + do)
    run = min(leading_run(src.layout), leading_run(dst.layout))
    for vbytes in (16, 8, 4):
        lanes = vbytes // es
        if lanes < 2 or n % lanes or lanes > max_lanes:
            continue
        # consecutive chunks: checked element by element when every offset is static, else proven by the
        # layouts' shared leading stride-1 run (dynamic strides elsewhere: CuTe's max_common_vector)
        if static:
            if any(so[c + k] != so[c] + k or do[c + k] != do[c] + k for c in range(0, n, lanes) for k in range(lanes)):
                continue
        elif run % lanes:
            continue
        if all(_aligned(src, so[c], vbytes, es) and _aligned(dst, do[c], vbytes, es) for c in range(0, n, lanes)):
            return lanes, [(so[c], do[c]) for c in range(0, n, lanes)]
    return 1, list(zip(so, do))


def lower_copy(src: V.KTensor, dst: V.KTensor, fresh=None):
    lanes, pairs = plan(src, dst)
    full = [(src.buf, ir.as_expr(ir.binop("+", src.offset, s)), dst.buf, ir.as_expr(ir.binop("+", dst.offset, d)))
            for s, d in pairs]
    return [VecCopy(full, lanes)]


# -- contiguous, aligned chunks: what every vector-wide access (this module's, cp.async's, ldmatrix's) proves
def divisibility(x) -> int:
    return divisibility_of(x) if x != 0 else 1 << 30


def contiguous_start(t: V.KTensor, j: int, n: int):
    """The element offset (in t's buffer) of t's elements j..j+n-1 when they are provably n consecutive
    elements starting at a multiple of n from the offset's divisibility, else None.  Over a swizzle
    ``sw o off o L`` the run must be consecutive in L and n must not exceed 2**sw.base (the bits a swizzle
    never moves), so that the swizzle keeps it whole."""
    lay = t.layout
    if type(lay) is ComposedLayout:
        outer, inner = lay.outer, lay.inner
        offs = [outer(j + v) for v in range(n)]
        if any(type(o) is not int for o in offs) or any(offs[v] != offs[0] + v for v in range(n)):
            return None
        x = ir.binop("+", lay.offset, offs[0])
        if type(inner) is not Swizzle or (n > 1 and n > (1 << inner.base)) or divisibility(x) % n:
            return None
        return ir.binop("+", t.offset, inner(x))
    offs = [lay(j + v) for v in range(n)]
    if all(type(o) is int for o in offs):
        if any(offs[v] != offs[0] + v for v in range(n)):
            return None
    elif n > 1 and (j % n or leading_run(lay) % n):
        return None
    return ir.binop("+", t.offset, offs[0])


def aligned(t: V.KTensor, off, nbytes) -> bool:
    """Is element t.offset + off provably nbytes-aligned (the buffer's alignment and the offset's divisibility)?"""
    es = t.etype.bits // 8
    return t.buf.align % nbytes == 0 and (divisibility(off) * es) % nbytes == 0


def chunk_start(atom, t, j, n, w):
    """contiguous_start of an atom call's values, or the error naming the atom."""
    off = contiguous_start(t, j, n)
    if off is None:
        raise ValueError(f"copy({atom.name}): the atom moves {n} consecutive {t.etype} a thread per call, but the "
                         f"{w}'s values {j}..{j + n - 1} are not provably consecutive and aligned in {t}; a swizzle must "
                         "keep each chunk whole (its base M >= log2 of the chunk), the partition must match the atom.")
    return off


@builtin
def copy(cx, *args, pred=None):
    """``wb.copy(src, dst)``: dst[i] = src[i] for every element, 128-bit accesses where layouts and alignment
    prove it safe.  ``wb.copy(tiled_copy, src, dst, pred=None)`` (CuTe DSL's ``cute.copy``): through a copy atom
    (a TiledCopy, a thread's slice of one, or a copy atom): ldmatrix, cp.async, universal copies; pred: one
    Boolean per atom call (cp.async zero-fills where it is false, the others skip)."""
    for t in args[-2:]:          # 4-bit tiles move by TMA only (views.refuse_packed says why)
        if type(t) is V.KTensor:
            V.refuse_packed(t.buf)
    if len(args) == 3:
        through = ATOM_COPIES.get(type(args[0]))
        if through is None:
            raise TypeError(f"Expected a TiledCopy, a thread's slice of one or a copy atom as wb.copy's first of three "
                            f"arguments, but got {type(args[0]).__name__}.")
        return through(cx, *args, pred=pred)
    if len(args) != 2:
        raise TypeError(f"Expected wb.copy(src, dst) or wb.copy(tiled_copy, src, dst, pred=None), but got "
                        f"{len(args)} positional arguments.")
    if pred is not None:
        raise TypeError("Expected pred only with a copy atom: wb.copy(tiled_copy, src, dst, pred=pred).")
    src, dst = args
    for t, w in ((src, "src"), (dst, "dst")):
        if type(t) is not V.KTensor:
            raise TypeError(f"Expected tensors for copy's {w}, but got {type(t).__name__}.")
    for s in lower_copy(src, dst):
        cx.emit(s)
    cx.mark_written(dst.buf)


def _universal(cx, atom, src, dst, js, jd, vs, vd, _pred):
    """A UniversalCopy atom call: vs consecutive elements as one access (proven contiguous and aligned)."""
    nbytes = vs * src.etype.bits // 8
    if vs > 1:
        so, do = chunk_start(atom, src, js, vs, "source"), chunk_start(atom, dst, jd, vd, "destination")
        for t, off, w in ((src, so, "source"), (dst, do, "destination")):
            if not aligned(t, off, nbytes):
                raise ValueError(f"copy({atom.name}): a {nbytes * 8}-bit access needs a {nbytes}-byte aligned {w}, "
                                 f"which {t} (assumed alignment {t.buf.align}) does not prove.")
        return [VecCopy([(src.buf, ir.as_expr(so), dst.buf, ir.as_expr(do))], vs)]
    return [VecCopy([(src.buf, ir.as_expr(src.offset_of(js)), dst.buf, ir.as_expr(dst.offset_of(jd)))], 1)]


COPY_LOWERINGS["universal"] = _universal
