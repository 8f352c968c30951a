"""Blackwell UMMA (``tcgen05.mma``, SM100 atoms): ``wb.gemm(atom, acc, sA, sB, acc)`` with an
``SM100_MMA_*_SS`` atom (``wb.mma_atom("SM100_MMA_F16BF16_SS", ...)``) issues one ``tcgen05.mma.cta_group::1`` per
k-block of the shared tiles sA (M, K) and sB (N, K), accumulating into the TMEM tensor acc
(``wb.make_tmem_tensor(addr, atom.make_fragment_C(atom.partition_shape_C((M, N))))``).  One thread issues it for the
whole CTA (put it under ``if wb.thread_idx().x == 0:``); ``accumulate=False`` (static or a run-time condition)
overwrites acc on the first k-block instead of adding to it (CuTe DSL's ``tiled_mma.set(tcgen05.Field.ACCUMULATE,
...)``).  The results land asynchronously: ``wb.tcgen05_commit(bars, i)`` (``tcgen05_commit.py``) arrives on an
mbarrier when they have, and only then may a thread read them (``wb.copy`` with a TMEM load atom).

The A and B descriptors are derived from each k-block's tile while tracing and proven element by element
(``workbench.atoms.gmma_desc``'s canonical walk, the same layouts as GMMA's), cross-checked against
``workbench.atoms.umma_desc.make_umma_desc`` (version 1 on Blackwell); the instruction descriptor is the atom's
``instr_desc``.  Compiled for sm_100a (NVRTC, in the tests) and emulated by the CPU executor; no Blackwell GPU is lent
here, so it has never run on one.  Not yet in kernels: TS atoms (A from TMEM), 2-SM atoms (``cta_group::2``), kinds
other than f16 (F16BF16) with a Float32 accumulator.

CPU semantics: the issuing thread computes D = A B^T (+ D) exactly (float64, rounded once to Float32) from the
shared tiles as the descriptors address them, writes the TMEM cells of ``acc`` at once and marks them pending: a
thread reading one before the mbarrier of the MMA's commit completes raises (the executor completes asynchronous work
only when no thread can move otherwise).  The shared tiles are read at issue, so overwriting them before the commit
completes is not caught here.
"""

from __future__ import annotations

import numpy as np

from ...atoms.gmma_desc import make_gmma_desc
from ...atoms.sm100 import UmmaAtom
from ...atoms.umma_desc import make_umma_desc
from ...layout import ComposedLayout, Layout, Swizzle, composition, divisibility_of
from .. import ir
from ..atoms_in_kernels import GEMM_LOWERINGS
from ..backends.cpu import KernelRuntimeError, pyexpr
from ..backends.cuda import expr, saddr
from ..views import KTensor
from .mbarrier import expr_identity
from .tcgen05_alloc import NO_BLACKWELL, thread_id, tmem_state, tmem_view

_CALLS: dict = {}    # id -> (atom, gathered walks, TMEM offset table): what the CPU code of each tcgen05.mma reads


class Umma(ir.Instruction):
    """One ``tcgen05.mma.cta_group::1.kind::f16``: d = TMEM element offset expression of the accumulator tile's
    origin (units of the value: a 32-bit TMEM address), a and b = (shared buffer, element offset of the tile's
    aligned base, GmmaDescriptor of the tile from there), accumulate = an Int32/Boolean expression (enable_input_d)."""

    __slots__ = ("atom", "d", "a", "b", "accumulate", "key")

    def __init__(self, atom, d, a, b, accumulate, key):
        self.atom, self.d, self.a, self.b, self.accumulate, self.key = atom, d, a, b, accumulate, key

    def describe(self):
        return f"tcgen05.mma ({self.atom.name}, line {self.line})"

    def cuda(self, em, d):
        descs = []
        for sbuf, base, desc in (self.a, self.b):
            n = em.fresh("_udesc")
            em.w(d, f"const unsigned long long {n} = ((unsigned long long)((({saddr(sbuf, base)}) + {desc.start}u) >> 4) "
                    f"& 0x3FFFull) | 0x{umma_static_bits(desc):016x}ull;")
            descs.append(n)
        idesc = self.atom.instr_desc.encode()
        em.w(d, f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %4, 0;\\n'
                f'tcgen05.mma.cta_group::1.kind::{self.atom.ptx_kind} [%0], %1, %2, %3, p;\\n}}\\n" :: '
                f'"r"((unsigned)({expr(self.d)})), "l"({descs[0]}), "l"({descs[1]}), "r"(0x{idesc:08x}u), '
                f'"r"((unsigned)({expr(self.accumulate)})) : "memory");')

    def python(self, em, d):
        (ab, ao, _), (bb, bo, _) = self.a, self.b
        em.w(d, f"_umma(_tmem(_BS), {self.key}, {ab.name}, {pyexpr(ao)}, {bb.name}, {pyexpr(bo)}, {pyexpr(self.d)}, "
                f"{pyexpr(self.accumulate)}, _thread_id(_tx, _ty, _tz, _bdx, _bdy))")


def umma_static_bits(desc) -> int:
    """The UMMA shared-memory descriptor's static fields: GMMA's (LBO, SBO, the layout type at bits 61..63, which
    encodes the same swizzles) plus version 1 (bits 46..47), as CuTe's UMMA::SmemDescriptor."""
    return desc.static_bits() | (1 << 46)


def _umma(st, key, arr_a, base_a, arr_b, base_b, d_off, accumulate, thread):
    node, walk_a, walk_b, lanes, cols = _CALLS[key]
    st.one_issuer(node, thread, node.describe())
    M, N, K = node.atom.shape_mnk
    A = _read(arr_a, base_a, walk_a, node.describe(), node.atom.a_type)
    B = _read(arr_b, base_b, walk_b, node.describe(), node.atom.b_type)
    lane0, col0 = d_off >> 16, d_off & 0xFFFF
    ls, cs = lanes + lane0, cols + col0
    st.check_columns(ls, cs, node.describe())
    f32 = st.cells.view(np.float32)
    D = A @ B.T
    if accumulate:
        D = D + f32[ls, cs].astype(np.float64)
    f32[ls, cs] = D.astype(np.float32)
    st.pending[ls, cs] = st.begin(thread, node.describe())


def _read(arr, base, walk, what, etype):
    idx = base + walk
    if idx.min() < 0 or idx.max() >= arr.shape[0]:
        raise KernelRuntimeError(f"{what} reads shared elements {int(idx.min())}..{int(idx.max())}, outside the buffer of "
                                 f"{arr.shape[0]}")
    raw = arr[idx]
    if etype is ir.BFloat16:       # the executor holds bf16 as its bit patterns (uint16): widen them exactly
        return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return raw.astype(np.float64)


Umma.cpu_helpers = {"_umma": _umma, "_tmem": tmem_state, "_thread_id": thread_id}


# -- wb.gemm with an SM100 atom ----------------------------------------------------------------------------------
def _operand(t, which, atom, mn, k_total, kat, bits):
    """[(buffer, base offset expression, GmmaDescriptor)] of each k-block of a shared (mn, K) tile, proven."""
    if type(t) is not KTensor or t.buf.space != "smem":
        raise ValueError(f"gemm({atom.name}): an SS UMMA atom reads {which} from shared memory through a descriptor: pass "
                         f"the shared tile ({'M' if which == 'A' else 'N'}, K), but got {t}.")
    lay = t.layout
    sw, inner = None, 0
    if type(lay) is ComposedLayout:
        sw, inner, lay = lay.inner, lay.offset, lay.outer
    if type(inner) is not int:
        raise ValueError(f"gemm({atom.name}): expected the {which} tile at a static offset inside its swizzle, but got {inner}.")
    if (lay.rank if type(lay.shape) is tuple else 1) != 2 or lay[0].size != mn or lay[1].size != k_total:
        raise ValueError(f"gemm({atom.name}): expected {which} as a shared ({mn}, K) tile ({'M' if which == 'A' else 'N'} = "
                         f"{mn}, the atom's; K a multiple of {kat}), but got {t}.")
    period = sw.size * bits // 8 if sw is not None and sw.bits else 16
    dv = divisibility_of(t.offset) if t.offset != 0 else 1 << 30
    if (dv * bits // 8) % period or t.buf.align < period:
        raise ValueError(f"gemm({atom.name}): the {which} tile must start on its swizzle's period ({period} bytes) in a "
                         f"buffer aligned to it, so that the descriptor's swizzle is the tile's; pass the whole shared tile.")
    out = []
    sub = composition(lay, Layout((mn, kat), (1, mn)))
    for kb in range(k_total // kat):
        off = lay((0, kb * kat))
        for x in range(mn):          # the k-block is the tile's (mn, kat) window: proven, not assumed
            for y in range(kat):
                if lay((x, kb * kat + y)) != off + sub(x + mn * y):
                    raise ValueError(f"gemm({atom.name}): the {which} tile's k-block {kb} is not one affine window of its "
                                     f"layout {lay} (element ({x}, {kb * kat + y})); lay the tile out with "
                                     "wb.tile_to_shape(wb.umma_smem_atom(...), (MN, K)).")
        static = inner + off
        tile = ComposedLayout(sw if sw is not None else _NOSWIZZLE, static, sub) if (sw is not None or static) else sub
        major = atom.major_a if which == "A" else atom.major_b
        try:
            desc = make_gmma_desc(tile, bits, major, mn, kat)
        except ValueError as e:
            raise ValueError(f"gemm({atom.name}), operand {which} (k-block {kb}): {e}") from None
        try:
            ud = make_umma_desc(tile, t.etype, major)
        except (ValueError, TypeError) as e:
            raise ValueError(f"gemm({atom.name}), operand {which} (k-block {kb}): {e}") from None
        if ud.encode() >> 16 != umma_static_bits(desc) >> 16:
            raise ValueError(f"gemm({atom.name}), operand {which}: the descriptor's walk (LBO {desc.lbo}, SBO {desc.sbo}) "
                             f"and CuTe's make_umma_desc ({ud}) disagree for {tile}.")
        out.append((t.buf, ir.as_expr(t.offset), desc))
    return out


_NOSWIZZLE = Swizzle(0, 4, 3)


def _walk(desc, mn, k):
    e = desc.element_bits // 8
    return np.array([[desc.address(x, y) // e for y in range(k)] for x in range(mn)], dtype=np.int64)


def gemm_umma(cx, tiled_mma, atom, d, a, b, c, accumulate=True):
    """wb.gemm with an SM100 UMMA atom: one tcgen05.mma per k-block, accumulating into the TMEM tensor d (== c)."""
    if type(atom) is not UmmaAtom:
        raise TypeError(f"gemm: expected an SM100 UMMA atom, but got {atom!r}.")
    if atom.a_source == "tmem" or atom.cta_group != 1 or atom.kind != "F16BF16" or atom.c_type is not ir.Float32:
        raise ValueError(f"gemm({atom.name}): kernels run SS, 1-SM, kind::f16 UMMA atoms with a Float32 accumulator so "
                         "far (SM100_MMA_F16BF16_SS, c_type=wb.Float32); TS, 2-SM (cta_group::2) and the other kinds are "
                         "not lowered yet.")
    dv, cv = tmem_view(d), tmem_view(c)
    if dv is None or cv is None:
        raise ValueError(f"gemm({atom.name}): the accumulator lives in tensor memory: pass the TMEM tensor "
                         "(wb.make_tmem_tensor(addr, atom.make_fragment_C(...))) as d and c.")
    if d.buf is not c.buf or expr_identity(ir.as_expr(d.offset)) != expr_identity(ir.as_expr(c.offset)) or \
            str(d.layout) != str(c.layout):
        raise ValueError(f"gemm({atom.name}): tcgen05.mma accumulates in place: pass the same TMEM tensor as d and c.")
    if d.etype is not atom.c_type:
        raise TypeError(f"gemm({atom.name}): the accumulator holds {d.etype}, the atom's C is {atom.c_type}.")
    M, N, kat = atom.shape_mnk
    if d.layout.size != M * N:
        raise ValueError(f"gemm({atom.name}): expected one {M}x{N} accumulator tile "
                         f"(atom.make_fragment_C(atom.partition_shape_C(({M}, {N})))), but got {d}.")
    for t, want, w in ((a, atom.a_type, "A"), (b, atom.b_type, "B")):
        if type(t) is KTensor and t.etype is not want:
            raise TypeError(f"gemm({atom.name}): the atom's {w} operand is {want}, but the shared tile holds {t.etype}.")
    ka = a.layout[1].size if type(a) is KTensor and a.layout.rank == 2 else None
    if type(ka) is not int or ka % kat:
        raise ValueError(f"gemm({atom.name}): expected A as a shared (M, K) tile with K a multiple of {kat}, but got {a}.")
    bits = atom.a_type.bits
    ops_a = _operand(a, "A", atom, M, ka, kat, bits)
    ops_b = _operand(b, "B", atom, N, ka, kat, bits)
    cx.scalar(accumulate, "accumulate (True, False or a condition)")
    acc0 = ir.cast(ir.as_expr(accumulate), ir.Int32) if isinstance(accumulate, ir.Expr) else ir.as_expr(int(bool(accumulate)))
    # the accumulator tile's TMEM cells relative to its origin: the fragment's own layout, (m, n) -> offset
    lay = d.layout
    rel = np.array([lay(i) for i in range(M * N)], dtype=np.int64).reshape(N, M).T   # index m + M * n
    lanes, cols = rel >> 16, rel & 0xFFFF
    cx.require_arch(100, f"tcgen05.mma ({atom.name}; {NO_BLACKWELL})")
    cx.uses_collectives()      # the executor schedules threads in step (mbarrier waits)
    for kb, (da, db) in enumerate(zip(ops_a, ops_b)):
        key = len(_CALLS)
        node = Umma(atom, ir.as_expr(d.offset), da, db, acc0 if kb == 0 else ir.as_expr(1), key)
        _CALLS[key] = (node, _walk(da[2], M, kat), _walk(db[2], N, kat), lanes, cols)
        cx.emit(node)
    cx.mark_written(d.buf)


GEMM_LOWERINGS["tcgen05_mma"] = gemm_umma
