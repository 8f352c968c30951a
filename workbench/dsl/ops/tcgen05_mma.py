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
here, so it has never run on one.  A ``SM100_MMA_F16BF16_TS`` atom reads A from tensor memory instead: pass the TMEM
tensor ``wb.make_tmem_tensor(addr, atom.make_fragment_A(atom.partition_shape_A((M, K))))`` as a (filled by
``wb.copy`` with a UTCCP atom, ``tcgen05_cp.py``, or by ``tcgen05.st``); one ``tcgen05.mma ... [d], [a], b_desc`` per
k-block.

**Other kinds** (the same calls, SS and TS, 1-SM and 2-SM ``_2x1SM_``): ``SM100_MMA_TF32_*`` (``kind::tf32``: Float32 or TFloat32 tiles, each
value read as tf32 by dropping its low 13 mantissa bits, truncation, exactly as the SM80/SM90 tf32 atoms are emulated:
``atoms_in_kernels.decode_register``), ``SM100_MMA_F8F6F4_*`` with fp8 operands (``kind::f8f6f4``: wb.Float8E4M3FN /
wb.Float8E5M2, mixed too) and ``SM100_MMA_S8_*`` (``kind::i8``: Int8 / Uint8, the accumulator an Int32 TMEM tensor,
read back by a tcgen05.ld of Int32).  Refused with a message (``_lowered_kind``): a Float16 accumulator (CuTe's
``c_type=half_t``, one value a 32-bit column: its read-back needs the .pack::16b TMEM loads), kind::f8f6f4's fp6 and 4-bit operands (one value a padded byte in shared memory, CuTe's
``*_unpacksmem_t``: kernels hold no such storage; packed e2m1 is the block-scaled MXF4 atoms'), the saturate bit
(``c_sat``).

**Block-scaled** (``SM100_MMA_MXF8F6F4_SS``, ``tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale``):
``wb.gemm(atom, acc, (sA, tSFA), (sB, tSFB), acc)`` (CuTe DSL's ``cute.gemm(atom, d, [A, SFA], [B, SFB], c)``; a
tuple in kernels), tSFA/tSFB the TMEM tensors ``wb.make_tmem_tensor(addr, atom.make_fragment_SFA(
atom.smem_layout_SFA((M, N, K)).shape))`` (SFB likewise), filled by ``wb.copy`` with ``SM100_UTCCP_4x32dp128bit_1cta``
(``_2cta`` for the pair's ``SM100_MMA_MXF8F6F4_2x1SM_SS``; ``tcgen05_cp.py``).  Each k-block's ``[d], a_desc, b_desc, idesc, [sfa], [sfb], p`` (CuTe's ``fma``, the PTX ISA's
operand order) passes the k-block's scale-factor addresses, the byte of the column in bits 30..31 and in the
instruction descriptor's a_sf_id / b_sf_id (CuTe's ``make_runtime_instr_desc_block_scaled``).  CPU semantics: D =
sum_k (A[m,k] SFA[m,k/32]) (B[n,k] SFB[n,k/32]) (+ D), the fp8 values and ue8m0 scales (2^(e-127)) decoded exactly,
the sum exact (integers), rounded once a tcgen05.mma to Float32 (the tensor core's own accumulation order and
precision are not modelled); each scale factor is read where CuTe's ``tmem_sf_frg`` keeps it, in all four lane
quarters, whose copies must agree (which one the hardware reads is not documented); factors another thread's
tcgen05.cp still writes are an error, as for a TS atom's A; a NaN scale (0xFF) or a NaN/inf operand gives IEEE
float64 results.

**MXF4** (``SM100_MMA_MXF4_SS``: ``vs=32`` is ``tcgen05.mma...kind::mxf4.block_scale.block32``, ue8m0 scales;
``vs=16`` is ``kind::mxf4nvf4.block_scale.block16``, ue4m3 (``sf_type=wb.Float8E4M3FN``) or ue8m0 scales; K = 64 a
k-block): the same call, sA/sB ``wb.shared_tensor(wb.Float4E2M1FN, layout)`` tiles, K-major, packed two values a byte
(the even K in the low nibble, as CuTe's subbyte storage and NVIDIA's ``__nv_fp4x2_e2m1``), laid out by a byte UMMA
atom recast to 4 bits (``wb.tile_to_shape(wb.recast_layout(4, 8, wb.umma_smem_atom("Layout_K_SW128_Atom",
wb.Uint8)), (MN, K))``, CuTe's ``Layout_K_SW128_Atom<float_e2m1_t>``: the same bytes) and filled by ``wb.tma_load``
of their packed bytes (``tma.py``); no thread reads or writes one 4-bit element (refused: the byte is shared).  The
descriptors are those of the tile's bytes (``recast_layout(8, 4, ...)``, each byte proven to hold the two K-neighbours
the tile maps there, then proven and cross-checked as an 8-bit K-major tile of K/2 bytes, 32 a k-block).  CPU
semantics as above, E2M1 decoded exactly (codes 0..7: 0, 0.5, 1, 1.5, 2, 3, 4, 6; 8..15 their negatives), ue4m3
scales as the E4M3 value of their low 7 bits (0x7F NaN; a set sign bit is an error, the format being unsigned).  Each
k-block's factors: for mxf4 two bytes of a TMEM word (a_sf_id / b_sf_id 0 or 2), for mxf4nvf4 the whole word (id 0),
the next k-block one column on.  ``SM100_MMA_MXF4_2x1SM_SS`` is the pair's block-scaled form below with these
operands (each CTA's TMA loads its half of A's and of B's rows).  Compiled for sm_100a and emulated, as every tcgen05
instruction here; never run on a Blackwell GPU.

Checked against the PTX ISA (tcgen05.mma, "Block Scaling", "Scale Factor A ID", and Table 43 "Instruction
descriptor format for .kind::mxf8f6f4"): the operand order is the ISA's "[d-tmem],  a-desc,  b-desc, idesc,
[scale-A-tmem], [scale-B-tmem], enable-input-d" (CuTe's ``SM100_MMA_MXF8F6F4_SS::fma`` emits the same); Table 43 puts
the "Matrix B Scale Factor Data ID" at bits 4-5 and the "Matrix A Scale Factor Data ID" at bits 29-30, M >> 7 at bits
27-28 (CuTe's m_dim = M >> 4 at 24..28, the same bits for M = 128, 256), "UE8M0 = 1" at bit 23; for scale_vec::1X /
block32 "SFA_ID specifies the byte offset in the Tensor Memory word that must be used for the scale factor matrix",
and "Scale factors for A and B matrices need to be duplicated to all 32 lane partitions of tensor memory" (hence the
four copies above).  Each k-block's ids are the byte of its factors, so they agree with the ISA; the scale-factor
address operands also carry that byte in bits 30..31, which the ISA's TMEM address (lane 31..16, column 15..0) does
not define: this follows CuTe, whose ``make_runtime_instr_desc_block_scaled`` reads the ids from those bits ("The
first 2-bits of TMEM address includes byte address") and whose ``fma`` passes the same addresses to the instruction.
``test_tcgen05_block_scaled_operands_follow_the_ptx_isa`` decodes every emitted idesc by Table 43.

**2-SM atoms** (``SM100_MMA_F16BF16_2x1SM_SS``, ``tcgen05.mma.cta_group::2``): one thread of the *even* CTA of a pair
(the leader; cluster ranks 2k, 2k+1) issues ``wb.gemm(atom, acc, sA, sB, acc)`` for both; each CTA holds, at the same
shared offsets, its half of A's rows (sA: (M/2, K), CTA v rows v*M/2..) and its half of B's rows (sB: (N/2, K), CTA v
rows v*N/2..), and its half of the accumulator in its own TMEM at the same address (``acc``: the CTA's
``atom.make_fragment_C(atom.partition_shape_C((M, N)))``, (M/2, N) laid out as CuTe's ``tmem_frg_2sm``).  What this
relies on: CuTe C++ 4.2's ``MMA_Traits<SM100_MMA_F16BF16_2x1SM_SS>`` (ThrID _2, ALayout/BLayout/CLayout splitting M,
N and M between the two CTAs, one A and one B descriptor and one TMEM address for the pair, FrgTypeC
``tmem_frg_2sm``; ``cute/atom/mma_traits_sm100.hpp``) and ``SM100_MMA_F16BF16_2x1SM_SS::fma``
(``cute/arch/mma_sm100_umma.hpp``); the PTX ISA: "the B matrix ... in Shared Memory of the current CTA and optionally
in peer CTA", "Issue from a single thread from the CTA-Pair would initiate the base operation. When the current CTA
issues the operation, the peer CTA should be active", data-path Layout A (M = 256, cta_group::2, 4x1) and Layout B
(M = 128, cta_group::2, 2x2; given only as a figure there: the cells are CuTe's ``tmem_frg_2sm``, whose M = 128 atom
is that 2x2 organization).  CUTLASS issues the pair's MMA from the even CTA only; which half an odd issuer would
address is not stated in these sources, so an MMA issued by the odd CTA is refused (a run-time error), not guessed.

``SM100_MMA_F16BF16_2x1SM_TS`` (``tcgen05.mma.cta_group::2.kind::f16 [d], [a], b_desc, idesc``): each CTA holds its
M/2 rows of A in its own TMEM at the one address ``[a]`` (CuTe 4.2's ``MMA_Traits<SM100_MMA_F16BF16_2x1SM_TS>``:
FrgTypeA ``tmem_frg_2sm<a_type, a_type, Duplicated>``, ``fma(tmem_a, desc_b, tmem_c, ...)``): pass this CTA's
``atom.make_fragment_A(atom.partition_shape_A((M, K)))``, 128 lanes (M = 128: CuTe's Duplicated 2x2 atom, the 64
rows in lanes 0..63 and again in 64..127; the two copies must agree on the CPU, since which copy feeds which half of
the data path is not documented).  In a pair kernel every tcgen05 instruction is cta_group::2 (the PTX ISA), so A
reaches TMEM by the leader's ``tcgen05.cp.cta_group::2`` (``SM100_UTCCP_128dp256bit_2cta``) or each CTA's tcgen05.st.

``SM100_MMA_MXF8F6F4_2x1SM_SS`` (M = 256, CuTe's only M): as the 1-SM block-scaled form issued by the leader, SFA in
each CTA's TMEM (its 128 rows), SFB (the whole N, rounded up to 128) in each CTA's TMEM (CUTLASS's 2-SM block-scaled
GEMMs partition SFA by the pair's MMA and SFB by the 1-SM ``MMA_ScaleFactor``, and copy both with one
``SM100_UTCCP_4x32dp128bit_2cta`` from the leader), all at the same TMEM addresses; the two CTAs' SFB copies must
agree on the CPU (which one the pair reads is not documented).

CPU semantics: the issuing thread computes D = A B^T (+ D) from the shared tiles as the descriptors address them,
every kind through one helper (``mma_result``): the floating kinds' sum exact (float64 where every partial sum is
provably representable, else Python integers), rounded once a tcgen05.mma to Float32 (nearest, ties to even; the
tensor core's own accumulation order and precision are not modelled), a_neg / b_neg applied; kind::i8's sum exact,
a result outside Int32 an error (the ISA does not say what the tensor core writes then); it writes the TMEM cells of ``acc`` at once and marks them pending: a
thread reading one before the mbarrier of the MMA's commit completes raises (the executor completes asynchronous work
only when no thread can move otherwise).  The shared tiles are read at issue, so overwriting them before the commit
completes is not caught here (nor, for a pair MMA, a leader that does not wait for the peer's tiles to land: the CPU
executor's TMA lands at issue, so such a kernel reads whatever the peer's stage holds then, which only an inexact
result shows); nor is an MMA overwriting an accumulator that another thread has not finished loading
(a missing "accumulator empty" wait: the executor's tcgen05.ld completes at issue and usually runs first).  A TS atom's A cells are read at issue too: cells another thread's tcgen05.cp (or MMA)
still writes are an error (only one thread's own tcgen05 operations are ordered, in issue order, without a commit and
an mbarrier wait).  For a pair MMA the same holds in the peer CTA: its A (TS) and scale-factor cells must be final
or written by the issuing thread's own earlier cta_group::2 copy.
"""

from __future__ import annotations

import math

import numpy as np

from ...atoms.gmma_desc import GmmaDescriptor, make_gmma_desc
from ...atoms.sm100 import UmmaAtom, UmmaBlockScaledAtom
from ...atoms.umma_desc import make_umma_desc
from ...layout import ComposedLayout, Layout, Swizzle, composition, divisibility_of
from .. import ir
from ..atoms_in_kernels import GEMM_LOWERINGS, decode_register
from ..backends.cpu import KernelRuntimeError, pyexpr
from ..backends.cuda import expr, saddr
from ..views import KTensor, packed_bytes
from .mbarrier import expr_identity
from .tcgen05_alloc import NO_BLACKWELL, tcgen05_cta_group, thread_id, tmem_state, tmem_view

_CALLS: dict = {}    # id -> (node, A's walk or TMEM table, B's walk, TMEM offset table): what each tcgen05.mma reads


class Umma(ir.Instruction):
    """One ``tcgen05.mma.cta_group::{1|2}.kind::{f16|tf32|f8f6f4|i8}`` (the group and kind are the atom's): d = TMEM address expression of the accumulator tile's origin (a
    32-bit TMEM address, lane << 16 | column), a = (shared buffer, element offset of the tile's aligned base,
    GmmaDescriptor of the tile from there) for SS, or the TMEM address expression of the k-block of A for TS
    (``[a]``), b as SS's a, accumulate = an Int32/Boolean expression (enable_input_d)."""

    __slots__ = ("atom", "d", "a", "b", "accumulate", "key", "sf")

    def __init__(self, atom, d, a, b, accumulate, key, sf=None):
        self.atom, self.d, self.a, self.b, self.accumulate, self.key = atom, d, a, b, accumulate, key
        self.sf = sf     # block-scaled: ((SFA address expression, its byte), (SFB's, its byte)); else None

    @property
    def ts(self) -> bool:
        return isinstance(self.a, ir.Expr)

    def describe(self):
        return f"tcgen05.mma ({self.atom.name}, line {self.line})"

    def cuda(self, em, d):
        descs = []
        for sbuf, base, desc in ((self.b,) if self.ts else (self.a, self.b)):
            n = em.fresh("_udesc")
            em.w(d, f"const unsigned long long {n} = ((unsigned long long)((({saddr(sbuf, base)}) + {desc.start}u) >> 4) "
                    f"& 0x3FFFull) | 0x{umma_static_bits(desc):016x}ull;")
            descs.append(n)
        if self.sf is not None:       # block-scaled: [d], a_desc, b_desc, idesc, [sfa], [sfb], p (CuTe's fma)
            (fa, ba), (fb, bb) = self.sf
            idesc = self.atom.instr_desc.runtime(ba << 30, bb << 30) >> 32     # a_sf_id / b_sf_id: the bytes
            em.w(d, f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %4, 0;\\n'
                    f'tcgen05.mma{self.atom.ptx_qualifiers} [%0], %1, %2, %3, [%5], [%6], p;\\n}}\\n" :: '
                    f'"r"((unsigned)({expr(self.d)})), "l"({descs[0]}), "l"({descs[1]}), "r"(0x{idesc:08x}u), '
                    f'"r"((unsigned)({expr(self.accumulate)})), "r"((unsigned)({expr(fa)}) | 0x{ba << 30:08x}u), '
                    f'"r"((unsigned)({expr(fb)}) | 0x{bb << 30:08x}u) : "memory");')
            return
        idesc = self.atom.instr_desc.encode()
        a_op, a_arg = ("[%1]", f'"r"((unsigned)({expr(self.a)}))') if self.ts else ("%1", f'"l"({descs[0]})')
        em.w(d, f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %4, 0;\\n'
                f'tcgen05.mma.cta_group::{self.atom.cta_group}.kind::{self.atom.ptx_kind} [%0], {a_op}, %2, %3, p;\\n}}\\n" :: '
                f'"r"((unsigned)({expr(self.d)})), {a_arg}, "l"({descs[-1]}), "r"(0x{idesc:08x}u), '
                f'"r"((unsigned)({expr(self.accumulate)})) : "memory");')

    def python(self, em, d):
        bb, bo, _ = self.b
        sf = ""
        if self.sf is not None:
            (fa, _), (fb, _) = self.sf
            sf = f", {pyexpr(fa)}, {pyexpr(fb)}"
        if self.ts:
            a = f"None, {pyexpr(self.a)}"
        elif self.atom.cta_group == 2:      # the pair reads A and B by buffer name, in both CTAs' shared memory
            a = f"'{self.a[0].name}', {pyexpr(self.a[1])}"
        else:
            a = f"{self.a[0].name}, {pyexpr(self.a[1])}"
        b = f"'{bb.name}'" if self.atom.cta_group == 2 else bb.name
        tid = "_thread_id(_tx, _ty, _tz, _bdx, _bdy)"
        if self.atom.cta_group == 2:
            em.w(d, f"_umma2(_tmem(_BS), {self.key}, {a}, {b}, {pyexpr(bo)}, {pyexpr(self.d)}, "
                    f"{pyexpr(self.accumulate)}, {tid}, _RANK, _CBS, _CS{sf})")
        elif self.sf is not None:
            em.w(d, f"_umma_bs(_tmem(_BS), {self.key}, {a}, {b}, {pyexpr(bo)}, {pyexpr(self.d)}, "
                    f"{pyexpr(self.accumulate)}{sf}, {tid})")
        else:
            em.w(d, f"_umma(_tmem(_BS), {self.key}, {a}, {b}, {pyexpr(bo)}, {pyexpr(self.d)}, "
                    f"{pyexpr(self.accumulate)}, {tid})")


def umma_static_bits(desc) -> int:
    """The UMMA shared-memory descriptor's static fields: GMMA's (LBO, SBO, the layout type at bits 61..63, which
    encodes the same swizzles) plus version 1 (bits 46..47), as CuTe's UMMA::SmemDescriptor."""
    return desc.static_bits() | (1 << 46)


def _umma(st, key, arr_a, base_a, arr_b, base_b, d_off, accumulate, thread):
    node, walk_a, walk_b, lanes, cols = _CALLS[key]
    what = node.describe()
    st.one_issuer(node, thread, what)
    if arr_a is None:      # TS: base_a is the k-block's TMEM address, walk_a its (lanes, 32-bit columns, sub-words)
        A = read_tmem_values(st, base_a, walk_a, node.atom.a_type, thread, what)
    else:
        A = read_smem(arr_a, base_a, walk_a, what, node.atom.a_type)
    B = read_smem(arr_b, base_b, walk_b, what, node.atom.b_type)
    lane0, col0 = d_off >> 16, d_off & 0xFFFF
    ls, cs = lanes + lane0, cols + col0
    st.check_columns(ls, cs, what)
    acc = _acc_cells(st, node.atom)
    acc[ls, cs] = mma_result(node.atom, A, B, acc[ls, cs], accumulate, what)
    st.pending[ls, cs] = st.begin(thread, what)


def _acc_cells(st, atom):
    """The TMEM cells as the atom's accumulator type (Int32 or Float32, one a 32-bit column)."""
    return st.cells.view(np.int32 if atom.c_type is ir.Int32 else np.float32)


def mma_result(atom, A, B, C, accumulate, what):
    """One tcgen05.mma's D = A B^T (+ C) of every kind, from the operands' exact values (A (M, K), B (N, K): float64,
    or int64 for kind::i8; a block-scaled kind's already multiplied by their scale factors, which is exact), the
    atom's a_neg / b_neg applied.  Floating kinds: the sum exact, rounded once to Float32 (nearest, ties to even; the
    tensor core's own accumulation order and internal precision are not modelled); a NaN/inf operand through IEEE
    float64 arithmetic.  kind::i8: the integer sum exact; a result outside Int32 is an error here (what the tensor
    core does on overflow without the saturate bit is not documented, so it is not guessed)."""
    if atom.a_neg:
        A = -A
    if atom.b_neg:
        B = -B
    if atom.c_type is ir.Int32:
        D = A.astype(np.int64) @ B.astype(np.int64).T
        if accumulate:
            D = D + C.astype(np.int64)
        bad = np.argwhere((D < -(1 << 31)) | (D >= 1 << 31))
        if bad.size:
            m, n = (int(x) for x in bad[0])
            raise KernelRuntimeError(f"{what}: D[{m}, {n}] = {int(D[m, n])} overflows Int32 (kind::i8 without the "
                                     "saturate bit: what the tensor core writes then is not documented, so it is an "
                                     "error here, not a guess)")
        return D.astype(np.int32)
    C = C.astype(np.float64)
    if not (np.isfinite(A).all() and np.isfinite(B).all() and (not accumulate or np.isfinite(C).all())):
        D = A @ B.T
        return (D + C if accumulate else D).astype(np.float32)
    if _float64_exact(A, B, C if accumulate else None):
        D = A @ B.T          # every partial sum representable: float64 adds exactly, whatever the order
        return (D + C if accumulate else D).astype(np.float32)     # the one rounding
    qa, qb = _low_exponent(A), _low_exponent(B)      # integers n 2**q: the exact sum in Python integers
    q = qa + qb
    S = _as_ints(A, qa) @ _as_ints(B, qb).T
    if accumulate:
        qc = _low_exponent(C)
        if qc < q:
            S, q = S * (1 << (q - qc)), qc
        S = S + _as_ints(C, q)
    return np.array([_to_f32(int(x), -q) for x in S.ravel()], dtype=np.float32).reshape(S.shape)


def _exponents(x):
    """(exponent of the lowest set bit, e with |x| < 2**e) of each nonzero float64 of x."""
    x = x[x != 0]
    if x.size == 0:
        return None
    m, e = np.frexp(x)
    sig = np.abs(m * 2.0 ** 53).astype(np.int64)
    return e - 53 + np.log2(sig & -sig).astype(np.int64), e


def _low_exponent(x) -> int:
    ex = _exponents(x)
    return 0 if ex is None else int(ex[0].min())


def _float64_exact(A, B, C) -> bool:
    """Whether float64 computes sum_k A[m,k] B[n,k] (+ C) exactly in any order: every product and partial sum a
    multiple of the smallest product's (or C's) last bit and below 2**53 of it."""
    ea, eb = _exponents(A), _exponents(B)
    if ea is None or eb is None:     # the products all zero: D is C (or zero), exactly
        return True
    q, top = int(ea[0].min() + eb[0].min()), int(ea[1].max() + eb[1].max()) + int(A.shape[1]).bit_length()
    if C is not None:
        ec = _exponents(C)
        if ec is not None:
            q, top = min(q, int(ec[0].min())), max(top, int(ec[1].max())) + 1
    return q >= -1074 and top < 1000 and top - q <= 53


def _as_ints(x, q):
    """The exact integers x * 2**-q (x's values are multiples of 2**q) as Python ints."""
    return np.array([int(math.ldexp(float(v), -q)) if v else 0 for v in x.ravel()], dtype=object).reshape(x.shape)


def _umma2(st, key, a_name, base_a, b_name, base_b, d_off, accumulate, thread, rank, cbs, cs, sfa=None, sfb=None):
    """A pair MMA issued by the leader: D_v = A_v B^T (+ D_v) in CTA v's TMEM (v = 0 the leader, 1 its peer), A_v the
    rows CTA v holds (SS: in its shared memory; TS: in its TMEM at the one address ``base_a``), B both CTAs' rows (the
    leader's first), every operand at the same shared offsets / TMEM address in both.  Block-scaled (sfa/sfb given):
    SFA_v from CTA v's TMEM; SFB, the whole N's factors, held by each CTA (CUTLASS's MMA_ScaleFactor partitioning),
    whose two copies must agree (which CTA's copy the pair's tensor cores read is not documented)."""
    node, walk_a, walk_b, lanes, cols = _CALLS[key][:5]
    what = node.describe()
    atom = node.atom
    if rank & 1:
        raise KernelRuntimeError(f"{what} is issued by the odd CTA of its pair (cluster rank {rank}): the pair's "
                                 "tcgen05.mma.cta_group::2 is issued by one thread of the even CTA, the leader (as CUTLASS "
                                 "does; which half an odd issuer addresses is not documented, so it is not emulated)")
    st.one_issuer(node, thread, what)
    if rank + 1 >= len(cs):
        raise KernelRuntimeError(f"{what}: block rank {rank} has no peer CTA in a cluster of {len(cs)} blocks")
    states = [st, tmem_state(cbs[rank + 1])]
    side = ("leader", "peer")
    bs = sfa is not None
    if node.ts:
        A = [read_tmem_a(states[v], base_a, walk_a, atom, thread, f"{what} ({side[v]} CTA's A)", st) for v in (0, 1)]
    elif bs:
        A = [_operand_values(_smem_raw(cs[rank + v][a_name], base_a, walk_a, what), atom.a_type) for v in (0, 1)]
    else:
        A = [read_smem(cs[rank + v][a_name], base_a, walk_a, what, atom.a_type) for v in (0, 1)]
    if bs:
        B = np.concatenate([_operand_values(_smem_raw(cs[rank + v][b_name], base_b, walk_b, what), atom.b_type)
                            for v in (0, 1)])
        ta, tb = _CALLS[key][5:7]
        ea = [_read_sf(states[v], sfa, ta, thread, f"{what} ({side[v]} CTA's SFA)", "SFA", st) for v in (0, 1)]
        eb = [_read_sf(states[v], sfb, tb, thread, f"{what} ({side[v]} CTA's SFB)", "SFB", st) for v in (0, 1)]
        bad = np.argwhere(eb[0] != eb[1])
        if bad.size:
            n, j = (int(x) for x in bad[0])
            raise KernelRuntimeError(f"{what}: scale factor {j} of this MMA's K for B row {n} differs between the leader's TMEM "
                                     f"({int(eb[0][n, j])}) and the peer's ({int(eb[1][n, j])}): each CTA of the pair holds "
                                     "the whole N's SFB (CUTLASS's 2-SM block-scaled GEMMs copy it into both); which "
                                     "CTA's copy the pair's MMA reads is not documented, so differing copies are an error "
                                     "here, not a guess.")
    else:
        B = np.concatenate([read_smem(cs[rank + v][b_name], base_b, walk_b, what, atom.b_type) for v in (0, 1)])
    ls, cs_ = lanes + (d_off >> 16), cols + (d_off & 0xFFFF)
    for v in (0, 1):
        states[v].check_columns(ls, cs_, f"{what} ({side[v]} CTA's half)")
    i = st.begin(thread, what)
    for v in (0, 1):
        acc = _acc_cells(states[v], atom)
        if bs:
            acc[ls, cs_] = _bs_result(A[v], B, ea[v], eb[v], atom, acc[ls, cs_], accumulate, what)
            continue
        acc[ls, cs_] = mma_result(atom, A[v], B, acc[ls, cs_], accumulate, what)
    st.pending[ls, cs_] = i
    st.mark_remote(i, states[1], ls, cs_)


def read_tmem_a(st, addr, table, atom, thread, what, owner):
    """A TS atom's A (M/V, K) from one CTA's TMEM.  A 2-SM M = 128 atom's A is CuTe's Duplicated fragment: the 64
    rows in lanes 0..63 and again in lanes 64..127, whose two copies must agree (which copy feeds which half of the
    data path is not documented)."""
    vals = read_tmem_values(st, addr, table, atom.a_type, thread, what, owner)
    rows = atom.m // atom.cta_group
    if vals.shape[0] == rows:
        return vals
    lo, hi = vals[:rows], vals[rows:]
    bad = np.argwhere((lo != hi) & ~(np.isnan(lo) & np.isnan(hi)))
    if bad.size:
        r, k = (int(x) for x in bad[0])
        raise KernelRuntimeError(f"{what}: A[{r}, {k}] differs between its two copies in TMEM (lanes {r} and {r + rows}): "
                                 f"a 2-SM M = {atom.m} TS atom's A is CuTe's Duplicated fragment (each row in both lane "
                                 "halves); which copy the tensor core reads is not documented, so differing copies are "
                                 "an error here, not a guess.")
    return lo


def read_smem(arr, base, walk, what, etype):
    """The shared elements ``arr[base + walk]`` as the tensor core reads them (:func:`decode`)."""
    idx = base + walk
    if idx.min() < 0 or idx.max() >= arr.shape[0]:
        raise KernelRuntimeError(f"{what} reads shared elements {int(idx.min())}..{int(idx.max())}, outside the buffer of "
                                 f"{arr.shape[0]}")
    raw = arr[idx]
    return decode(raw.view(f"u{raw.itemsize}"), etype)


def decode(bits, etype):
    """An operand's bit patterns (unsigned, etype.bits wide) as the tensor core reads them: float64 values (fp16, bf16
    and fp8 widened exactly; tf32 a Float32 whose low 13 mantissa bits are dropped, as the SM80/SM90 tf32 atoms
    read it: ``decode_register``), or int64 (kind::i8's Int8 / Uint8)."""
    if etype is ir.BFloat16:
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if etype is ir.Float16:
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    if etype is ir.TFloat32:
        return np.vectorize(lambda x: decode_register("TF32", x), otypes=[np.float64])(
            bits.astype(np.uint32).view(np.float32))
    if etype is ir.Int8:
        return bits.astype(np.uint8).view(np.int8).astype(np.int64)
    if etype is ir.Uint8:
        return bits.astype(np.int64)
    if etype.bits == 8:                  # fp8 (e4m3 / e5m2)
        return _operand_values(bits.astype(np.uint8), etype)
    raise TypeError(f"tcgen05.mma: no {etype} operands on the CPU executor")


def read_tmem_values(st, addr, table, etype, thread, what, owner=None):
    """A TS operand from TMEM: ``table`` = (lanes, 32-bit columns, sub-word index) of each element relative to the
    TMEM address ``addr``; the cells must be allocated and final, or written by an earlier tcgen05 operation of this
    same thread (one thread's tcgen05.cp and tcgen05.mma execute in issue order; ``owner``: the issuing CTA's state
    when st is the peer's)."""
    lanes, cols, sub = table
    ls, cs = lanes + (addr >> 16), cols + (addr & 0xFFFF)
    st.check_columns(ls, cs, what)
    _final_or_mine(st, ls, cs, thread, what, owner)
    bits = etype.bits
    word = st.cells[ls, cs]
    if bits == 32:
        return decode(word.astype(np.uint32), etype)
    return decode((word >> (sub * bits).astype(np.uint32)) & np.uint32((1 << bits) - 1), etype)


def _final_or_mine(st, ls, cs, thread, what, owner=None):
    """Cells an MMA reads must be final, or written by an earlier tcgen05 operation of this same thread (of the CTA
    ``owner``, the issuer's, when st is a pair's peer: the leader's cta_group::2 copies write both CTAs)."""
    own = st if owner is None else owner
    p = st.pending[ls, cs]
    mine = set(own.uncommitted.get(thread, ())) | {i for ids, _ in own.inflight for i in ids
                                                   if own.issued_by.get(i) == thread}
    foreign = (p != 0) & ~np.isin(p, list(mine))
    if foreign.any():
        st.read(ls[foreign], cs[foreign], what)          # raises, naming the writer


# -- block-scaled (kind::mxf8f6f4, mxf4, mxf4nvf4) ---------------------------------------------------------------
_FP8 = {}
# E2M1 (sign, 2 exponent bits of bias 1, 1 mantissa bit): the values of codes 0..7; 8..15 are their negatives
_E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
_E2M1 = np.concatenate([_E2M1, -_E2M1])


def _operand_values(raw, etype):
    """A block-scaled MMA's operand bits as the executor holds them (bytes) as exact float64 values: fp8 one a byte;
    Float4E2M1FN packed, (mn, K/2) bytes -> (mn, K) values, element 2j in byte j's low nibble, 2j + 1 in its high."""
    if etype.bits == 4:
        r = raw.astype(np.int64)
        out = np.empty((r.shape[0], 2 * r.shape[1]))
        out[:, 0::2], out[:, 1::2] = _E2M1[r & 15], _E2M1[r >> 4]
        return out
    code = {"Float8E4M3FN": "E4M3", "Float8E5M2": "E5M2"}[etype.name]
    if code not in _FP8:
        _FP8[code] = np.array([decode_register(code, x) for x in range(256)])
    return _FP8[code][raw.astype(np.int64)]


def _read_sf(st, addr, table, thread, what, which, owner=None):
    """The scale-factor bytes (MN, NSF) one block-scaled MMA reads at TMEM address ``addr``: each (row, factor) at
    its four replicas (one a 32-lane sub-partition, as tmem_sf_frg lays them out), which must agree."""
    rl, rc, rb = table                         # (4, MN, NSF): lanes and columns from addr, bytes in the column
    ls, cs = rl + (addr >> 16), rc + (addr & 0xFFFF)
    st.check_columns(ls.ravel(), cs.ravel(), what)
    _final_or_mine(st, ls.ravel(), cs.ravel(), thread, what, owner)
    vals = (st.cells[ls, cs] >> (8 * rb).astype(np.uint32)) & np.uint32(0xFF)
    bad = np.argwhere(vals != vals[0])
    if bad.size:
        q, r, j = (int(x) for x in bad[0])
        raise KernelRuntimeError(f"{what}: scale factor {which}[{r}, {j}] differs between its copies in TMEM lane "
                                 f"quarters 0 and {q} (lanes {int(ls[0, r, j])} and {int(ls[q, r, j])}, column "
                                 f"{int(cs[0, r, j])}): tmem_sf_frg keeps every factor in all four 32-lane sub-partitions "
                                 "(the SM100_UTCCP_4x32dp128bit copy writes them so); which copy the tensor core reads is not "
                                 "documented, so differing copies are an error here, not a guess.")
    return vals[0].astype(np.int64)


def _to_f32(n: int, s: int) -> float:
    """The exact value n * 2**-s rounded once to Float32 (nearest, ties to even; subnormals; overflow to inf)."""
    if n == 0:
        return 0.0
    sign, n = (-1.0 if n < 0 else 1.0), abs(n)
    lsb = max(n.bit_length() - 1 - s - 23, -149)      # the exponent of the result's last significand bit
    drop = lsb + s
    if drop > 0:
        q, r = n >> drop, n & ((1 << drop) - 1)
        half = 1 << (drop - 1)
        if r > half or (r == half and q & 1):
            q += 1
    else:
        q = n << -drop
    if q.bit_length() + lsb > 128:
        return sign * math.inf
    return sign * math.ldexp(q, lsb)


def _umma_bs(st, key, arr_a, base_a, arr_b, base_b, d_off, accumulate, sfa, sfb, thread):
    """One block-scaled MMA (one k-block): D = sum_k (A[m,k] SFA[m,k/vs]) (B[n,k] SFB[n,k/vs]) (+ D), the sum exact
    (integers), rounded once to Float32."""
    node, walk_a, walk_b, lanes, cols, ta, tb = _CALLS[key]
    what = node.describe()
    st.one_issuer(node, thread, what)
    atom = node.atom
    A = _operand_values(_smem_raw(arr_a, base_a, walk_a, what), atom.a_type)
    B = _operand_values(_smem_raw(arr_b, base_b, walk_b, what), atom.b_type)
    ea = _read_sf(st, sfa, ta, thread, what, "SFA")
    eb = _read_sf(st, sfb, tb, thread, what, "SFB")
    ls, cs = lanes + (d_off >> 16), cols + (d_off & 0xFFFF)
    st.check_columns(ls, cs, what)
    acc = _acc_cells(st, atom)
    acc[ls, cs] = _bs_result(A, B, ea, eb, atom, acc[ls, cs], accumulate, what)
    st.pending[ls, cs] = st.begin(thread, what)


def _scales(raw, sf_type, what):
    """Scale-factor bytes as (integers n, shift s: each factor is n * 2**-s exactly; NaN mask).  ue8m0: 2^(e-127),
    0xFF NaN; ue4m3 (wb.Float8E4M3FN standing for it): the E4M3 value of the low 7 bits (multiples of 2^-9), 0x7F NaN;
    a ue4m3 factor with its sign bit set is an error here (the format is unsigned; what the tensor core makes of
    the bit is not documented, so it is not guessed)."""
    r = raw.astype(np.int64)
    if sf_type.name == "Float8E8M0FNU":
        return np.vectorize(lambda e: 1 << int(e), otypes=[object])(r), 127, r == 255
    bad = np.argwhere(r >= 128)
    if bad.size:
        m, j = (int(x) for x in bad[0])
        raise KernelRuntimeError(f"{what}: ue4m3 scale factor [{m}, {j}] is 0x{int(r[m, j]):02x}, its sign bit set: ue4m3 "
                                 "is unsigned (the PTX ISA's scale format); what the tensor core does with the bit is not "
                                 "documented, so it is an error here, not a guess.")
    if "E4M3" not in _FP8:
        _FP8["E4M3"] = np.array([decode_register("E4M3", x) for x in range(256)])
    v = _FP8["E4M3"][r]
    nan = np.isnan(v)
    return np.vectorize(lambda x: int(x * 512), otypes=[object])(np.where(nan, 0.0, v)), 9, nan


def _bs_result(A, B, sa, sb, atom, C, accumulate, what):
    """sum_k (A[m,k] SFA[m,k/vs]) (B[n,k] SFB[n,k/vs]) (+ C): each operand times its factor (exact in float64: an
    fp8/fp4 value times a power of two or a ue4m3 value), then :func:`mma_result`.  sa/sb: the factors' bytes."""
    vs = atom.sf_vec_size
    (na, s, nan_a), (nb, _, nan_b) = _scales(sa, atom.sf_type, what), _scales(sb, atom.sf_type, what)
    fa = np.where(nan_a, np.nan, np.vectorize(lambda n: math.ldexp(int(n), -s), otypes=[np.float64])(na))
    fb = np.where(nan_b, np.nan, np.vectorize(lambda n: math.ldexp(int(n), -s), otypes=[np.float64])(nb))
    return mma_result(atom, A * np.repeat(fa, vs, axis=1), B * np.repeat(fb, vs, axis=1), C, accumulate, what)


def _smem_raw(arr, base, walk, what):
    idx = base + walk
    if idx.min() < 0 or idx.max() >= arr.shape[0]:
        raise KernelRuntimeError(f"{what} reads shared elements {int(idx.min())}..{int(idx.max())}, outside the buffer of "
                                 f"{arr.shape[0]}")
    return arr[idx]


Umma.cpu_helpers = {"_umma": _umma, "_umma_bs": _umma_bs, "_umma2": _umma2, "_tmem": tmem_state, "_thread_id": thread_id}


# -- wb.gemm with an SM100 atom ----------------------------------------------------------------------------------
def smem_operand(t, which, name, major, mn, k_total, kat, bits, per_cta=False):
    """[(buffer, base offset expression, GmmaDescriptor)] of each k-block (mn x kat) of a shared (mn, K) tile read
    through UMMA shared-memory descriptors (tcgen05.mma's A and B, tcgen05.cp's source), each proven element by
    element and cross-checked against CuTe's make_umma_desc.  ``name``: the atom, for errors; ``per_cta``: mn is this
    CTA's half of a 2-SM atom's."""
    if type(t) is not KTensor or t.buf.space != "smem":
        raise ValueError(f"{name}: {which} is read from shared memory through a descriptor: pass "
                         f"the shared tile ({'N' if which == 'B' else 'M'}, K), but got {t}.")
    lay, offset, etype = t.layout, t.offset, t.etype
    if bits == 4:      # packed two a byte: the descriptor reads the tile's bytes, (mn, K/2) of them (K-major)
        if major != "K":
            raise ValueError(f"{name}: kernels read 4-bit {which} tiles K-major only (each byte two neighbours along "
                             "K); got an MN-major atom.")
        lay0 = lay
        offset, lay = packed_bytes(t, f"{name}, operand {which}", along="K")
        rk = lay.outer if type(lay) is ComposedLayout else lay
        if rk[0].size != mn or lay0[1].size != k_total:
            raise ValueError(f"{name}: expected {which} as a shared ({mn}, K) tile, K a multiple of {kat}, but got {t}.")
        etype, bits, k_total, kat = ir.Uint8, 8, k_total // 2, kat // 2
    sw, inner = None, 0
    if type(lay) is ComposedLayout:
        sw, inner, lay = lay.inner, lay.offset, lay.outer
    if type(inner) is not int:
        raise ValueError(f"{name}: expected the {which} tile at a static offset inside its swizzle, but got {inner}.")
    if (lay.rank if type(lay.shape) is tuple else 1) != 2 or lay[0].size != mn or lay[1].size != k_total:
        whose = "half the atom's: this CTA's rows of the pair" if per_cta else "the atom's"
        raise ValueError(f"{name}: expected {which} as a shared ({mn}, K) tile ({'N' if which == 'B' else 'M'} = "
                         f"{mn}, {whose}; K a multiple of {kat}), but got {t}.")
    period = sw.size * bits // 8 if sw is not None and sw.bits else 16
    dv = divisibility_of(offset) if offset != 0 else 1 << 30
    if (dv * bits // 8) % period or t.buf.align < period:
        raise ValueError(f"{name}: the {which} tile must start on its swizzle's period ({period} bytes) in a "
                         f"buffer aligned to it, so that the descriptor's swizzle is the tile's; pass the whole shared tile.")
    out = []
    sub = composition(lay, Layout((mn, kat), (1, mn)))
    for kb in range(k_total // kat):
        off = lay((0, kb * kat))
        for x in range(mn):          # the k-block is the tile's (mn, kat) window: proven, not assumed
            for y in range(kat):
                if lay((x, kb * kat + y)) != off + sub(x + mn * y):
                    raise ValueError(f"{name}: the {which} tile's k-block {kb} is not one affine window of its "
                                     f"layout {lay} (element ({x}, {kb * kat + y})); lay the tile out with "
                                     "wb.tile_to_shape(wb.umma_smem_atom(...), (MN, K)).")
        static = inner + off
        tile = ComposedLayout(sw if sw is not None else _NOSWIZZLE, static, sub) if (sw is not None or static) else sub
        try:
            desc = make_gmma_desc(tile, bits, major, mn, kat)
        except ValueError as e:
            raise ValueError(f"{name}, operand {which} (k-block {kb}): {e}") from None
        try:
            ud = make_umma_desc(tile, etype, major)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{name}, operand {which} (k-block {kb}): {e}") from None
        if major == "K" and (sw is None or not sw.bits) and kat * bits == 128:
            # one 16-byte core matrix along K: LBO is never used by the walk; write CuTe's (make_umma_desc's) value
            desc = GmmaDescriptor(desc.major, desc.swizzle_bits, ud.leading_byte_offset << 4, desc.sbo, desc.start,
                                  desc.element_bits, desc.mn, desc.k)
        if ud.encode() >> 16 != umma_static_bits(desc) >> 16:
            raise ValueError(f"{name}, operand {which}: the descriptor's walk (LBO {desc.lbo}, SBO {desc.sbo}) "
                             f"and CuTe's make_umma_desc ({ud}) disagree for {tile}.")
        out.append((t.buf, ir.as_expr(offset), desc))
    return out


_NOSWIZZLE = Swizzle(0, 4, 3)


def smem_walk(desc, mn, k):
    """Element offsets (mn, k) of a descriptor's tile from its base: the hardware's walk."""
    e = desc.element_bits // 8
    return np.array([[desc.address(x, y) // e for y in range(k)] for x in range(mn)], dtype=np.int64)


def tmem_table(layout, count, rows, per):
    """(lanes, 32-bit columns, sub-word) of elements (r, c) of a TMEM tensor layout (offsets in units of its value,
    ``per`` values a column) for r < rows, c < count // rows (index r + rows * c): relative to the tensor's origin."""
    off = np.array([layout(i) for i in range(count)], dtype=np.int64).reshape(count // rows, rows).T
    dp = 65536 * per
    return off // dp, (off % dp) // per, (off % dp) % per


def _tmem_a(a, atom, M, ka, kat):
    """TS: [(TMEM address expression of k-block kb)] and the (lanes, columns, sub-words) table of one k-block,
    proven to be the atom's A fragment (make_fragment_A's layout, cell by cell).  A 2-SM atom's fragment is one
    CTA's (CuTe's tmem_frg_2sm Duplicated: M/2 rows in 128 lanes; for M = 128 the 64 rows twice, lanes 0..63 and
    64..127), at the same address in both CTAs."""
    view = tmem_view(a)
    if view is None:
        raise ValueError(f"gemm({atom.name}): a TS UMMA atom reads A from tensor memory: pass the TMEM tensor "
                         "wb.make_tmem_tensor(addr, atom.make_fragment_A(atom.partition_shape_A((M, K)))), but got "
                         f"{a}.")
    if a.etype is not atom.a_type:
        raise TypeError(f"gemm({atom.name}): the atom's A operand is {atom.a_type}, but the TMEM tensor holds {a.etype}.")
    per = 32 // a.etype.bits
    want = atom.make_fragment_A(atom.partition_shape_A((M, ka))).layout
    rows = want.size // ka            # M, or a 2-SM atom's 128 lanes of one CTA's M/2 rows (Duplicated at M = 128)
    if a.layout.size != want.size or any(a.layout(i) != want(i) for i in range(want.size)):
        raise ValueError(f"gemm({atom.name}): expected A as the atom's TMEM fragment {want} (make_fragment_A), but got "
                         f"{a.layout}.")
    lanes, cols, sub = tmem_table(a.layout, want.size, rows, per)
    addrs = []
    for kb in range(ka // kat):
        l0, c0, s0 = lanes[0, kb * kat], cols[0, kb * kat], sub[0, kb * kat]
        if s0:
            raise ValueError(f"gemm({atom.name}): A's k-block {kb} does not start on a 32-bit TMEM column.")
        addrs.append(ir.binop("+", ir.binop("//", a.offset, per), int((l0 << 16) + c0)))
    blk = (lanes[:, :kat], cols[:, :kat], sub[:, :kat])
    for kb in range(1, ka // kat):   # every k-block is the first one shifted by its address: one table serves
        s = slice(kb * kat, (kb + 1) * kat)
        if not ((lanes[:, s] - lanes[0, kb * kat] == blk[0]).all() and (cols[:, s] - cols[0, kb * kat] == blk[1]).all()
                and (sub[:, s] == blk[2]).all()):
            raise ValueError(f"gemm({atom.name}): A's k-blocks are not translates of one another in TMEM.")
    return addrs, blk


def gemm_umma(cx, tiled_mma, atom, d, a, b, c, accumulate=True):
    """wb.gemm with an SM100 UMMA atom: one tcgen05.mma per k-block, accumulating into the TMEM tensor d (== c);
    a block-scaled atom takes a = (A, SFA) and b = (B, SFB) (CuTe DSL's cute.gemm form), SFA/SFB TMEM tensors."""
    bs = type(atom) is UmmaBlockScaledAtom
    if bs:
        a, sfa, b, sfb = _block_scaled_operands(atom, a, b)
    elif type(atom) is not UmmaAtom:
        raise TypeError(f"gemm: expected an SM100 UMMA atom, but got {atom!r}.")
    elif type(a) in (list, tuple) or type(b) in (list, tuple):
        raise TypeError(f"gemm({atom.name}): a = (A, SFA) and b = (B, SFB) are the block-scaled atoms' operands "
                        "(SM100_MMA_MXF8F6F4_SS); this atom takes the A and B tiles themselves.")
    if not bs:
        _lowered_kind(atom)
    ts = atom.a_source == "tmem"
    tcgen05_cta_group(cx, atom.cta_group, f"gemm({atom.name})")
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
    V = atom.cta_group             # a 2-SM atom: each CTA holds M/2 rows of A and D, N/2 rows of B
    if d.layout.size != M // V * N:
        half = ", this CTA's half" if V == 2 else ""
        raise ValueError(f"gemm({atom.name}): expected one {M}x{N} accumulator tile "
                         f"(atom.make_fragment_C(atom.partition_shape_C(({M}, {N}))){half}), but got {d}.")
    for t, want, w in (((b, atom.b_type, "B"),) if ts else ((a, atom.a_type, "A"), (b, atom.b_type, "B"))):
        # a tf32 operand is read from a Float32 (or TFloat32) tile, as the SM80/SM90 tf32 atoms read theirs
        if type(t) is KTensor and t.etype is not want and not (want is ir.TFloat32 and t.etype is ir.Float32):
            raise TypeError(f"gemm({atom.name}): the atom's {w} operand is "
                            f"{'tf32 (Float32 or TFloat32)' if want is ir.TFloat32 else want}, but the shared tile holds "
                            f"{t.etype}.")
    ka = b.layout[1].size if type(b) is KTensor and b.layout.rank == 2 else None
    if type(ka) is not int or ka % kat:
        raise ValueError(f"gemm({atom.name}): expected B as a shared (N, K) tile with K a multiple of {kat}, but got {b}.")
    bits = atom.b_type.bits
    kat_b = kat * bits // 8 if bits < 8 else kat     # a k-block's K in what the walk addresses (4-bit: bytes)
    name = f"gemm({atom.name})"
    if ts:
        a_addrs, a_table = _tmem_a(a, atom, M, ka, kat)     # both CTAs' A at one TMEM address for a pair
    else:
        ops_a = smem_operand(a, "A", name, atom.major_a, M // V, ka, kat, bits, V == 2)
    ops_b = smem_operand(b, "B", name, atom.major_b, N // V, ka, kat, bits, V == 2)
    cx.scalar(accumulate, "accumulate (True, False or a condition)")
    acc0 = ir.cast(ir.as_expr(accumulate), ir.Int32) if isinstance(accumulate, ir.Expr) else ir.as_expr(int(bool(accumulate)))
    # the accumulator tile's TMEM cells relative to its origin: the fragment's own layout, (m, n) -> offset
    lanes, cols, _ = tmem_table(d.layout, M // V * N, M // V, 1)
    if bs:
        sf = [_sf_operand(atom, t, w, M, N, ka) for t, w in ((sfa, "A"), (sfb, "B"))]
    cx.require_arch(100, f"tcgen05.mma ({atom.name}; {NO_BLACKWELL})")
    cx.uses_collectives()      # the executor schedules threads in step (mbarrier waits)
    for kb, db in enumerate(ops_b):
        key = len(_CALLS)
        if bs:
            (addr_a, byte_a, tab_a), (addr_b, byte_b, tab_b) = sf[0][kb], sf[1][kb]
            da = ops_a[kb]
            node = Umma(atom, ir.as_expr(d.offset), da, db, acc0 if kb == 0 else ir.as_expr(1), key,
                        ((addr_a, byte_a), (addr_b, byte_b)))
            _CALLS[key] = (node, smem_walk(da[2], M // V, kat_b), smem_walk(db[2], N // V, kat_b), lanes, cols, tab_a,
                           tab_b)
            cx.emit(node)
            continue
        if ts:
            node = Umma(atom, ir.as_expr(d.offset), ir.as_expr(a_addrs[kb]), db, acc0 if kb == 0 else ir.as_expr(1), key)
            walk_a = a_table
        else:
            da = ops_a[kb]
            node = Umma(atom, ir.as_expr(d.offset), da, db, acc0 if kb == 0 else ir.as_expr(1), key)
            walk_a = smem_walk(da[2], M // V, kat)
        _CALLS[key] = (node, walk_a, smem_walk(db[2], N // V, kat), lanes, cols)
        cx.emit(node)
    cx.mark_written(d.buf)


def _lowered_kind(atom):
    """Refuse, with the reason, the non-scaled UMMA forms kernels do not run: a Float16 accumulator, fp6 and
    kind::f8f6f4's 4-bit operands, the saturate bit (the atom itself refuses negating kind::i8's integers)."""
    name = f"gemm({atom.name})"
    if atom.c_type is ir.Float16:
        raise ValueError(f"{name}: kernels run tcgen05.mma with a Float32 (kind::f16, tf32, f8f6f4) or Int32 (kind::i8) "
                         "accumulator; a Float16 accumulator (CuTe's c_type=half_t: one 16-bit value a 32-bit TMEM "
                         "column in CuTe's tmem_frg) is not lowered yet: reading it back takes the .pack::16b TMEM "
                         "loads (CuTe's *_16b atoms), which kernels do not lower.")
    if atom.kind == "F8F6F4" and (atom.a_type.bits < 8 or atom.b_type.bits < 8):
        raise ValueError(f"{name}: kind::f8f6f4 reads 6-bit and 4-bit operands one a byte in shared memory (CuTe's "
                         "float_e2m1_unpacksmem_t / float_e3m2_unpacksmem_t: the value in a padded byte); kernels hold "
                         "no such storage (fp6 not at all; e2m1 only packed two a byte, the block-scaled "
                         "SM100_MMA_MXF4_SS's layout), so only fp8 (wb.Float8E4M3FN, wb.Float8E5M2) runs here.")
    if atom.c_sat:
        raise ValueError(f"{name}: c_sat=True (the instruction descriptor's saturate bit) is not lowered: how kind::i8 "
                         "saturates (each partial sum or the result) is not documented in the sources used here.")


def _block_scaled_operands(atom, a, b):
    """(A, SFA, B, SFB) of a block-scaled gemm, a = (A, SFA) and b = (B, SFB)."""
    name = f"gemm({atom.name})"
    for x, w in ((a, "a"), (b, "b")):
        if type(x) not in (list, tuple) or len(x) != 2:
            raise TypeError(f"{name}: a block-scaled MMA takes {w} = ({w.upper()}, SF{w.upper()}) (CuTe DSL's "
                            f"cute.gemm(atom, d, [A, SFA], [B, SFB], c); a tuple in kernels): the shared tile and its scale factors' TMEM "
                            f"tensor, but got {w} = {x!r}.")
    return a[0], a[1], b[0], b[1]


def _sf_operand(atom, t, which, M, N, ka):
    """[(TMEM address expression, byte in the column, (lanes, columns, bytes) table (4, MN, NSF) from the address)]
    of each k-block's scale factors in the TMEM tensor t, proven to be the atom's fragment
    (``make_fragment_SFA/SFB(smem_layout_SFA/SFB((M, N, K)).shape)``, CuTe's tmem_sf_frg) cell by cell."""
    name = f"gemm({atom.name})"
    if tmem_view(t) is None:
        raise ValueError(f"{name}: SF{which} lives in tensor memory: pass wb.make_tmem_tensor(addr, atom.make_fragment_SF"
                         f"{which}(atom.smem_layout_SF{which}((M, N, K)).shape)) (filled by wb.copy with "
                         f"SM100_UTCCP_4x32dp128bit_{atom.cta_group}cta), but got {t}.")
    if t.etype is not atom.sf_type:
        raise TypeError(f"{name}: the atom's scale factors are {atom.sf_type}, but SF{which} holds {t.etype}.")
    try:
        sl = (atom.smem_layout_SFA if which == "A" else atom.smem_layout_SFB)((M, N, ka))
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None
    want = (atom.make_fragment_SFA if which == "A" else atom.make_fragment_SFB)(sl.shape).layout
    got = np.asarray(list(t.layout.offsets())) if t.layout.size == want.size else None
    offs = np.asarray(list(want.offsets()))
    if got is None or not (got == offs).all():
        raise ValueError(f"{name}: expected SF{which} as the atom's TMEM fragment {want} (make_fragment_SF{which} of "
                         f"smem_layout_SF{which}(({M}, {N}, {ka})).shape), but got {t.layout}.")
    if divisibility_of(t.offset) % 4 if t.offset != 0 else False:
        raise ValueError(f"{name}: SF{which} must start on a 32-bit TMEM column (an address tmem_alloc gave, plus "
                         f"columns), but its offset is {t.offset}.")
    rows = want[0][0].size // 4                 # MMA_MN; the mode's other factor: the four lane-quarter copies
    vs, nsf = atom.sf_vec_size, atom.shape_mnk[2] // atom.sf_vec_size
    used = M // atom.cta_group if which == "A" else N      # a pair: this CTA's rows of A, every column of B
    dp = 65536 * 4
    m, q, j = np.meshgrid(np.arange(used), np.arange(4), np.arange(nsf), indexing="ij")
    out, first = [], None
    for kb in range(ka // atom.shape_mnk[2]):
        idx = (m + rows * q) + 4 * rows * vs * j + 4 * rows * vs * nsf * kb
        o = offs[idx]
        lane, rem = o // dp, o % dp
        col, byte = rem // 4, rem % 4
        l0, c0, b0 = int(lane[0, 0, 0]), int(col[0, 0, 0]), int(byte[0, 0, 0])
        tab = tuple(x.transpose(1, 0, 2) for x in (lane - l0, col - c0, byte))     # (4, MN, NSF)
        rel = (tab[0], tab[1], tab[2] - b0)
        if first is None:
            first = rel
        elif not all((x == y).all() for x, y in zip(rel, first)):   # the hardware reads one pattern from the address
            raise ValueError(f"{name}: SF{which}'s k-blocks are not translates of one another in TMEM.")
        addr = ir.binop("+", ir.binop("//", t.offset, 4), (l0 << 16) + c0)
        out.append((addr, b0, tab))
    return out


GEMM_LOWERINGS["tcgen05_mma"] = gemm_umma
