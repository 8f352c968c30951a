"""MMA and copy atoms inside kernels: the very objects the views draw, lowered.

``thr_mma = tiled_mma.get_slice(t)``, ``thr_mma.partition_A(x)``, ``thr_copy.partition_S(x)``, ``retile``
run the atoms' own partitions (``workbench.atoms.tiled``) while tracing, on kernel tensors; this module
gives kernels what only they do with the results (CuTe DSL's names):

* register fragments shaped as CuTe shapes them: ``tiled_mma.make_fragment_A(partition)`` (a compact
  layout of the partition's shape, the atom's value type), ``frag.fill(x)``, ``frag.load()`` /
  ``.to(dtype)`` / ``frag.store(values)``;
* ``wb.gemm(tiled_mma, d, a, b, c)``: checks the operands, then hands the atom calls to the op module of the
  atom's instruction (``atom.instruction``: ``ops/mma_sync.py``, ``ops/wgmma.py``; UniversalFMA is scalar
  arithmetic, lowered here), found in :data:`GEMM_LOWERINGS`;
* ``wb.copy(tiled_copy, src, dst, pred=None)``: one atom call per chunk of the atom's values, each lowered by
  the op module of the atom's kind (``atom.kind``: ``ops/vector_copy.py``, ``ops/ldmatrix.py``,
  ``ops/cp_async.py``), found in :data:`COPY_LOWERINGS`.

Everything an instruction needs is proven while tracing (element types, fragment shapes, contiguous
and aligned chunks, register pairs), or the kernel is refused with the atom's name and what it needs.
"""

from __future__ import annotations

import struct

from .. import _element_types as et
from ..atoms.copy import CopyAtom
from ..atoms.mma import MMAAtom
from ..atoms.tiled import ThrCopy, ThrMMA, TiledCopy, TiledMMA
from ..layout import ComposedLayout, Layout, make_layout
from . import ir
from .builtins import ATOM_COPIES, ATTRIBUTES, MAX_FRAGMENT_ELEMENTS, builtin, method
from .views import KTensor

__all__ = ["gemm", "copy_with_atom", "KValues", "GEMM_LOWERINGS", "COPY_LOWERINGS", "modes3", "register_offsets",
           "same_type", "check_register_pairs", "tv_indices", "decode_register"]

# atom.instruction -> lower(cx, tiled_mma, atom, d, a, b, c): the op module that issues the atom's calls
GEMM_LOWERINGS: dict = {}
# atom.kind -> lower(cx, atom, src, dst, js, jd, vs, vd, pred) -> [statements]: one call of a copy atom
COPY_LOWERINGS: dict = {}


# -- trace-time methods of the atoms (their own partitions, run on kernel tensors) -----------------------
def _pure(cls, *names):
    for name in names:
        method(cls, name)(lambda cx, obj, *a, _n=name, **k: getattr(obj, _n)(*a, **k))


_pure(TiledMMA, "get_tile_size")
_pure(ThrMMA, "partition_A", "partition_B", "partition_C")
_pure(TiledCopy, "retile")


def _get_slice(cx, tiled, thr_idx):
    """A thread's slice: the block must have exactly the tiled object's threads (checked at launch)."""
    gmma = type(tiled) is TiledMMA and tiled.atom.instruction == "wgmma"   # warpgroups: others may specialize
    cx.require_block_threads(tiled.size, repr(tiled), at_least=gmma)
    return tiled.get_slice(thr_idx)


for _cls in (TiledMMA, TiledCopy):
    method(_cls, "get_slice")(_get_slice)
    method(_cls, "get_thread_slice")(_get_slice)
_pure(ThrCopy, "partition_S", "partition_D", "retile_S", "retile_D", "retile")   # retile: CuTe DSL's name


ATTRIBUTES.update({
    MMAAtom: ("name", "shape_mnk", "thr_id", "tv_layout_A", "tv_layout_B", "tv_layout_C", "num_threads", "size",
              "a_type", "b_type", "c_type", "d_type"),
    CopyAtom: ("name", "value_type", "layout_src_tv", "layout_dst_tv", "layout_ref_tv", "num_val_src", "num_val_dst",
               "num_threads", "num_bits"),
    TiledMMA: ("atom", "size", "num_threads", "tile_shape_mnk", "tv_layout_A_tiled", "tv_layout_B_tiled",
               "tv_layout_C_tiled"),
    TiledCopy: ("atom", "size", "num_threads", "layout_tv", "tiler_mn", "layout_src_tv_tiled", "layout_dst_tv_tiled"),
})


def _fragment(cx, etype, x, what):
    """A register tensor of etype with the shape of x (a tensor or a layout), laid out compactly
    (column-major, CuTe's make_fragment_like for these partitions: the atom's values first)."""
    lay = x.layout if type(x) is KTensor else x
    if type(lay) is ComposedLayout:
        lay = lay.outer
    if type(lay) is not Layout:
        raise TypeError(f"{what}: expected a partitioned tensor or a layout, but got {type(x).__name__}.")
    shape = lay.shape
    frag = make_layout(shape)
    if not frag.is_static:
        raise ValueError(f"{what}: expected a partition of static shape (a register fragment), but got {lay}.")
    if frag.size > MAX_FRAGMENT_ELEMENTS:
        raise ValueError(f"{what}: expected a fragment of at most {MAX_FRAGMENT_ELEMENTS} elements a thread (a "
                         f"thread has 255 32-bit registers), but {frag} has {frag.size}; use a smaller tile per thread.")
    return KTensor(cx.declare_local(etype, frag.size), 0, frag)


def _mma_fragment(which):
    def lower(cx, mma, x):
        atom = mma.atom if type(mma) is TiledMMA else mma.tiled.atom
        etype = {"A": atom.a_type, "B": atom.b_type, "C": atom.c_type}[which]
        return _fragment(cx, etype, x, f"make_fragment_{which}({atom.name})")
    return lower


for _w in "ABC":
    method(TiledMMA, f"make_fragment_{_w}")(_mma_fragment(_w))
    method(ThrMMA, f"partition_fragment_{_w}")(
        lambda cx, thr, x, _w=_w: _mma_fragment(_w)(cx, thr, getattr(thr, f"partition_{_w}")(x)))


# -- a fragment's values -----------------------------------------------------------------------------
class KValues:
    """The values of a register fragment, loaded (CuTe DSL's TensorSSA, without arithmetic): ``.to(dtype)``
    converts them, ``frag.store(values)`` writes them into a fragment of the same size."""

    __slots__ = ("vals", "etype", "shape")

    def __init__(self, vals, etype, shape):
        self.vals, self.etype, self.shape = tuple(vals), etype, shape

    def __repr__(self):
        return f"KValues<{self.etype} x {len(self.vals)}>"


def _static_elements(t: KTensor, what):
    n = t.layout.size
    if type(n) is not int:
        raise ValueError(f"{what}: expected a tensor of static size, but got {t}.")
    return n


@method(KTensor, "fill")
def _fill(cx, t, value):
    """Every element of t set to value (a static loop)."""
    cx.scalar(value, "a number to fill with")
    for i in range(_static_elements(t, "fill")):
        cx.emit(ir.Store(t.buf, ir.as_expr(t.offset_of(i)), ir.as_expr(value, ir.value_type(t.etype))))
    cx.mark_written(t.buf)


@method(KTensor, "load")
def _load(cx, t):
    n = _static_elements(t, "load")
    return KValues([cx.bind(ir.Load(t.buf, ir.as_expr(t.offset_of(i))), "v") for i in range(n)], t.etype, t.shape)


@method(KValues, "to")
def _to(cx, v, etype):
    if type(etype) is not et.ElementType or etype not in ir.STORAGE_TYPES:
        raise TypeError(f"Expected an element type such as wb.Float16 for .to(), but got {etype!r}.")
    vt = ir.value_type(etype)
    out = []
    for x in v.vals:
        if etype in ir.HALF_TYPES:   # round through the 16-bit type, as a store and reload would
            out.append(ir.Cast(ir.Cast(x, etype), vt) if isinstance(x, ir.Expr) else x)
        else:
            out.append(ir.cast(x, etype))
    return KValues(out, etype, v.shape)


@method(KTensor, "store")
def _store(cx, t, values):
    if type(values) is not KValues:
        raise TypeError(f"Expected the values of a fragment (frag.load()) to store, but got {type(values).__name__}.")
    n = _static_elements(t, "store")
    if n != len(values.vals):
        raise ValueError(f"store: expected {n} values for {t}, but got {len(values.vals)}.")
    for i, x in enumerate(values.vals):
        cx.emit(ir.Store(t.buf, ir.as_expr(t.offset_of(i)), ir.as_expr(x, ir.value_type(t.etype))))
    cx.mark_written(t.buf)


# -- wb.gemm -----------------------------------------------------------------------------------------
def modes3(t: KTensor, what, names):
    """(V, X, Y) views of a fragment of rank 1 (V), 2 (V, X) or 3 (V, X, Y)."""
    lay = t.layout
    r = lay.rank if type(lay.shape) is tuple else 1
    if r > 3:
        raise ValueError(f"gemm: expected {what} of rank <= 3 ({names}), but got {lay}.")
    modes = [lay[i] for i in range(r)] if r > 1 else [lay]
    modes += [Layout(1, 0)] * (3 - r)
    return modes


def register_offsets(t: KTensor, idx_layout_v, base, what):
    """Static element offsets of one atom call's values in a register fragment."""
    if t.buf.space != "rmem":
        raise ValueError(f"gemm: expected {what} in registers (a fragment: make_fragment_A/B/C), but got {t}.")
    offs = [ir.binop("+", t.offset, ir.binop("+", base, idx_layout_v(v))) for v in range(idx_layout_v.size)]
    if any(type(o) is not int for o in offs):
        raise ValueError(f"gemm: expected {what} at static register positions, but got {t}.")
    return offs


def same_type(frag, want, atom, which):
    """A fragment holds the atom's value type (a TF32 atom's A and B: Float32 or TFloat32, tf32 bits in a float)."""
    tf32 = which in "AB" and "TF32" in (atom.type_codes or ())
    if frag.etype is want or (tf32 and frag.etype in (et.Float32, et.TFloat32)):
        return
    maker = "make_fragment_C" if which in "CD" else f"make_fragment_{which}"
    raise TypeError(f"gemm({atom.name}): the atom's {which} operand is {'tf32 (Float32 or TFloat32)' if tf32 else want}, "
                    f"but the fragment holds {frag.etype}; make it with tiled_mma.{maker} or convert with "
                    f"frag.load().to({want}).")


@builtin
def gemm(cx, tiled_mma, d, a, b, c, accumulate=None):
    """CuTe DSL's ``cute.gemm(tiled_mma, d, a, b, c)``: d = a x b + c over register fragments a (V, M, K),
    b (V, N, K), c and d (V, M, N) (or lower ranks), one atom call per (m, n, k), k outermost and n in
    serpentine order (CuTe's, reusing a's registers).  An SM90 GMMA atom takes a and b as the shared tiles
    ``thr_mma.partition_A/B`` gives and accumulates in place (``workbench.dsl.ops.wgmma``); ``accumulate=False``
    (or a condition) makes its first k-block overwrite d (the wgmma's scale-d).  An SM100 UMMA atom takes
    a and b as shared (M, K) / (N, K) tiles and d = c as a TMEM tensor; ``accumulate=False`` (or a condition)
    overwrites d on the first k-block (Blackwell: compiled for sm_100a and emulated on the CPU, never run on a
    Blackwell GPU here)."""
    atom = (tiled_mma.atom if type(tiled_mma) is TiledMMA else
            tiled_mma.tiled.atom if type(tiled_mma) is ThrMMA else tiled_mma)
    if not isinstance(atom, MMAAtom):
        raise TypeError(f"gemm: expected a TiledMMA or an MMA atom, but got {type(tiled_mma).__name__}.")
    for t, w in ((d, "d"), (a, "a"), (b, "b"), (c, "c")):
        if type(t) in (list, tuple) and w in "ab" and atom.instruction == "tcgen05_mma":
            continue     # CuTe DSL's block-scaled form: a = (A, SFA), b = (B, SFB) (checked by the lowering)
        if type(t) is not KTensor:
            raise TypeError(f"gemm({atom.name}): expected register fragments for {w}, but got {type(t).__name__}.")
    lower = GEMM_LOWERINGS.get(atom.instruction)
    if lower is None:
        raise ValueError(f"gemm({atom.name}): {atom.instruction} atoms do not run in kernels (mma.m8n8k4 is emulated "
                         f"and slow on SM80 and later); use an SM80 or SM90 atom (accepted: {sorted(GEMM_LOWERINGS)}).")
    if accumulate is None:
        lower(cx, tiled_mma, atom, d, a, b, c)
    elif atom.instruction not in ("tcgen05_mma", "wgmma"):
        raise ValueError(f"gemm({atom.name}): accumulate= is an operand of SM90 GMMA and SM100 UMMA atoms only; "
                         f"{atom.instruction} accumulates into c: start from acc.fill(0.0).")
    else:
        lower(cx, tiled_mma, atom, d, a, b, c, accumulate=accumulate)


def check_fragments(atom, d, a, b, c):
    """The register fragments of a warp-level or scalar atom's calls: their types and (V, M, K)/(V, N, K)/(V, M, N)
    modes against the atom's values a thread; returns (a, b, c, d modes, M, N, K)."""
    for frag, want, w in ((a, atom.a_type, "A"), (b, atom.b_type, "B"), (c, atom.c_type, "C"), (d, atom.d_type, "D")):
        same_type(frag, want, atom, w)
    va, vb, vc = atom.tv_layout_A[1].size, atom.tv_layout_B[1].size, atom.tv_layout_C[1].size
    am, bm, cm, dm = (modes3(a, "a", "V, M, K"), modes3(b, "b", "V, N, K"), modes3(c, "c", "V, M, N"),
                      modes3(d, "d", "V, M, N"))
    M, N, K = am[1].size, bm[1].size, am[2].size
    for modes, want, w in ((am, (va, M, K), "a"), (bm, (vb, N, K), "b"), (cm, (vc, M, N), "c"), (dm, (vc, M, N), "d")):
        got = tuple(x.size for x in modes)
        if got != want:
            raise ValueError(f"gemm({atom.name}): expected {w} of shape (V, ...) = {want} (the atom has {va}/{vb}/{vc} "
                             f"values a thread for A/B/C), but got {got}; partition with thr_mma.partition_{w.upper() if w in 'ab' else 'C'} "
                             f"and make the fragment with make_fragment_{w.upper() if w in 'ab' else 'C'}.")
    return am, bm, cm, dm, M, N, K


def check_register_pairs(atom, buf, offs, w):
    """mma.sync takes 32-bit registers: 16-bit values go in pairs, 8-bit in fours, each group contiguous and
    aligned in the fragment (as make_fragment_A/B/C lays them out)."""
    per = max(1, 32 // buf.etype.bits)
    for g in range(0, len(offs), per):
        grp = offs[g:g + per]
        if grp[0] % per or any(grp[i] != grp[0] + i for i in range(len(grp))):
            raise ValueError(f"gemm({atom.name}): {w}'s values {g}..{g + per - 1} must be {per} consecutive "
                             f"{buf.etype} in its fragment (one 32-bit register), but lie at {grp}; make the fragment "
                             f"with tiled_mma.make_fragment_* (a compact layout of the partition).")


def _fma(cx, tiled_mma, atom, d, a, b, c):
    """UniversalFMA: d[m, n] = a[m, k] * b[n, k] + c[m, n], scalar arithmetic on every thread."""
    am, bm, cm, dm, M, N, K = check_fragments(atom, d, a, b, c)
    for m in range(M):
        for n in range(N):
            acc = ir.Load(c.buf, ir.as_expr(c.offset_of((0, m, n) if c.layout.rank == 3 else m + n * M)))
            for k in range(K):
                av = ir.Load(a.buf, ir.as_expr(ir.binop("+", a.offset, am[1](m) + am[2](k))))
                bv = ir.Load(b.buf, ir.as_expr(ir.binop("+", b.offset, bm[1](n) + bm[2](k))))
                acc = cx.bind(ir.binop("+", ir.binop("*", av, bv), acc), "fma")
            cx.emit(ir.Store(d.buf, ir.as_expr(ir.binop("+", d.offset, dm[1](m) + dm[2](n))), acc))
    cx.mark_written(d.buf)


GEMM_LOWERINGS["fma"] = _fma


# -- wb.copy through a copy atom ---------------------------------------------------------------------------
def _atom_of(x):
    if type(x) is CopyAtom:
        return x
    if type(x) is TiledCopy:
        return x.atom
    if type(x) is ThrCopy:
        return x.tiled.atom
    return None


def copy_with_atom(cx, how, src, dst, pred=None):
    """wb.copy(tiled_copy | thr_copy | copy_atom, src, dst, pred=None): one atom call per chunk of the atom's
    values (src's values in order, chunked by the atom's source value count, dst's by its destination
    count).  pred: None, or a tensor (a Boolean register fragment) with one entry per atom call."""
    atom = _atom_of(how)
    for t, w in ((src, "src"), (dst, "dst")):
        if type(t) is not KTensor:
            raise TypeError(f"copy({atom.name}): expected tensors for {w}, but got {type(t).__name__}.")
    vt = atom.value_type
    for t, w in ((src, "source"), (dst, "destination")):
        if t.etype.bits != vt.bits:
            raise TypeError(f"copy({atom.name}): the atom moves {vt} values ({vt.bits} bits), but the {w} holds "
                            f"{t.etype}; make the atom with wb.copy_atom({atom.name!r}, {t.etype}) or convert.")
    if src.etype is not dst.etype:
        raise TypeError(f"copy({atom.name}): expected one element type, but got {src.etype} and {dst.etype}.")
    vs, vd = atom.num_val_src, atom.num_val_dst
    ns, nd = src.layout.size, dst.layout.size
    if type(ns) is not int or type(nd) is not int:
        raise ValueError(f"copy({atom.name}): expected partitions of static size, but got {src} and {dst}.")
    if ns % vs or nd % vd or ns // vs != nd // vd:
        raise ValueError(f"copy({atom.name}): the atom takes {vs} source and {vd} destination values a thread per "
                         f"call, but src has {ns} and dst {nd}; partition both with the tiled copy (partition_S/D, "
                         "retile_D for fragments).")
    calls = ns // vs
    preds = _predicates(pred, calls, atom)
    kind = atom.kind
    lower = COPY_LOWERINGS.get(kind)
    if lower is None:
        raise ValueError(f"copy({atom.name}): {kind} atoms do not run in kernels yet (accepted: UniversalCopy, "
                         "SM75 LDSM, SM80 cp.async).")
    zero_fills = getattr(lower, "zero_fills", False)   # the instruction takes the predicate itself (cp.async)
    for i in range(calls):
        stmts = lower(cx, atom, src, dst, i * vs, i * vd, vs, vd, preds[i] if zero_fills else None)
        p = preds[i]
        if zero_fills or p is True:
            for s in stmts:
                cx.emit(s)
        elif p is not False:
            cx.emit(ir.If(p, stmts, []))
    cx.mark_written(dst.buf)


ATOM_COPIES.update({CopyAtom: copy_with_atom, TiledCopy: copy_with_atom, ThrCopy: copy_with_atom})


def _predicates(pred, calls, atom):
    if pred is None:
        return [True] * calls
    if type(pred) is not KTensor:
        raise TypeError(f"copy({atom.name}): expected pred as a tensor of Boolean (one per atom call), but got "
                        f"{type(pred).__name__}.")
    n = pred.layout.size
    if n != calls:
        raise ValueError(f"copy({atom.name}): expected pred with one entry per atom call ({calls}), but got {n} "
                         f"({pred}).")
    return [ir.truth(ir.Load(pred.buf, ir.as_expr(pred.offset_of(i)))) for i in range(calls)]


# -- what the CPU executor's tensor-core emulations share: the atoms' TV layouts, evaluated; register values --------------------------------
_TV_CACHE: dict = {}


def tv_indices(layout, threads, values):
    """[[layout(t, v) for v] for t]: the (thread, value) -> tile index table of a TV layout."""
    key = (str(layout), threads, values)
    tab = _TV_CACHE.get(key)
    if tab is None:
        tab = _TV_CACHE[key] = [[layout((t, v)) for v in range(values)] for t in range(threads)]
    return tab


def decode_register(code, x):
    """A register value as the tensor core reads it: bf16 bit patterns widened, tf32's low 13 mantissa bits
    dropped (the hardware ignores them)."""
    if code == "BF16":
        return struct.unpack("<f", struct.pack("<I", int(x) << 16))[0]
    if code in ("E4M3", "E5M2"):
        mant, bias = (3, 7) if code == "E4M3" else (2, 15)
        x = int(x)
        e, m = (x >> mant) & ((1 << (7 - mant)) - 1), x & ((1 << mant) - 1)
        if code == "E5M2" and e == 31:
            v = float("inf") if m == 0 else float("nan")
        elif code == "E4M3" and e == 15 and m == 7:
            v = float("nan")
        else:
            v = (m / (1 << mant)) * 2.0 ** (1 - bias) if e == 0 else (1 + m / (1 << mant)) * 2.0 ** (e - bias)
        return -v if x >> 7 else v
    if code == "TF32":
        b = struct.unpack("<I", struct.pack("<f", x))[0] & 0xFFFFE000
        return struct.unpack("<f", struct.pack("<I", b))[0]
    return x
