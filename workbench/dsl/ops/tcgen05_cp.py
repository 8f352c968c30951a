"""Shared memory to tensor memory (``tcgen05.cp``, CuTe's UTCCP atoms): ``wb.copy(wb.copy_atom(
"SM100_UTCCP_128dp256bit_1cta", wb.Float16), sA, tA)`` copies the shared tile sA (128 rows, K) into the TMEM tensor
tA, one ``tcgen05.cp.cta_group::1.128x256b`` per 256 bits of each row (``128dp128bit``: ``128x128b``, 128 bits): row
m into lane m, the row's values packed into consecutive 32-bit columns (two 16-bit values a column, the first in the
low half), as the atom's ``val_id`` says and as a TS UMMA atom's A fragment (``atom.make_fragment_A(...)``) lays A out.
The shared tile is read through a K-major UMMA shared-memory descriptor (CuTe's UTCCP traits build it with
``make_umma_desc<Major::K>``), proven element by element as tcgen05.mma's operands are (``tcgen05_mma.smem_operand``).

One thread issues it for the CTA (as tcgen05.mma); it is asynchronous: ``wb.tcgen05_commit`` covers it (with the
MMAs), and a tcgen05.mma issued after it by the same thread reads its result in order.

Scale factors of a block-scaled UMMA: ``wb.copy(wb.copy_atom("SM100_UTCCP_4x32dp128bit_1cta", wb.Float8E8M0FNU),
sSFA, tSFA)`` with sSFA a shared tensor of the factors' bits (``wb.Uint8``: kernels cannot hold ue8m0 values, a
departure from CuTe, whose tensor is of the scale type) laid out as ``atom.smem_layout_SFA(tile)`` and tSFA the TMEM
tensor of ``atom.make_fragment_SFA`` of that shape: one ``tcgen05.cp.cta_group::1.32x128b.warpx4`` per 512-byte block
(32 rows of 16 bytes into 32 lanes x 4 columns, broadcast to the four lane quarters), each value proven to land where
the fragment keeps it.

The 2-CTA atoms (``SM100_UTCCP_128dp256bit_2cta``, ``_128dp128bit_2cta``, ``_4x32dp128bit_2cta``:
``tcgen05.cp.cta_group::2``) are issued by one thread of the pair's even CTA (the leader, as CUTLASS's 2-SM
block-scaled GEMMs do): each CTA's shared tile at the descriptor's offset into its own TMEM at the one address.  The
PTX ISA says "When .cta_group::2 is specified, the data is copied into the Tensor Memory of both the current and the
peer CTAs" without naming the peer's source; that each CTA's own shared memory is read is what CUTLASS relies on
(each CTA's TMA loads its own SFA rows, the leader issues one copy for the pair, and the leader's pipeline barrier
counts both CTAs' bytes).  An odd CTA's copy is refused at run time, not guessed.  Not yet in kernels: the
4dp256bit / 2x64dp128bit shapes and decompression.  Compiled for sm_100a
(NVRTC, in the tests) and emulated by the CPU executor; no Blackwell GPU is lent here, so it has never run on one.

CPU semantics: the issuing thread reads the shared tile at issue, writes the TMEM cells and marks them pending until
the mbarrier of a later ``tcgen05.commit`` completes: another thread reading them before (a tcgen05.ld, an MMA issued
by another thread) is an error, as is freeing them; a 2-CTA copy marks both CTAs' cells, its commit (cta_group::2)
completes both.
"""

from __future__ import annotations

import numpy as np

from ...atoms.tmem import TmemCopyAtom
from ...layout import Layout, divisibility_of
from .. import ir
from ..backends.cpu import KernelRuntimeError, pyexpr
from ..backends.cuda import expr, saddr
from ..builtins import ATOM_COPIES
from ..views import KTensor
from .tcgen05_alloc import NO_BLACKWELL, tcgen05_cta_group, thread_id, tmem_state, tmem_view
from .tcgen05_mma import smem_operand, smem_walk, tmem_table, umma_static_bits

_SHAPES = {"128dp256bit": ("128x256b", 256), "128dp128bit": ("128x128b", 128)}   # atom shape -> (PTX shape, row bits)
_CPS: dict = {}      # id -> (node, the shared walk, (lanes, columns, sub-words) of the block): what each cp reads


class Tcgen05Cp(ir.Instruction):
    """``tcgen05.cp.cta_group::{1|2}.{shape} [taddr], sdesc``: addr = the TMEM address expression of the block's lane
    0, src = (shared buffer, element offset of the tile's aligned base, GmmaDescriptor of the block from there);
    cta_group 2: issued by the pair's leader, each CTA's shared block at that offset into its own TMEM at addr."""

    __slots__ = ("atom", "shape", "addr", "src", "key", "cta_group")

    def __init__(self, atom, shape, addr, src, key, cta_group=1):
        self.atom, self.shape, self.addr, self.src, self.key, self.cta_group = atom, shape, addr, src, key, cta_group

    def describe(self):
        return f"tcgen05.cp {self.shape} ({self.atom.name}, line {self.line})"

    def cuda(self, em, d):
        sbuf, base, desc = self.src
        n = em.fresh("_cpdesc")
        em.w(d, f"const unsigned long long {n} = ((unsigned long long)((({saddr(sbuf, base)}) + {desc.start}u) >> 4) "
                f"& 0x3FFFull) | 0x{umma_static_bits(desc):016x}ull;")
        em.w(d, f'asm volatile("tcgen05.cp.cta_group::{self.cta_group}.{self.shape} [%0], %1;\\n" :: '
                f'"r"((unsigned)({expr(self.addr)})), "l"({n}) : "memory");')

    def python(self, em, d):
        sbuf, base, _ = self.src
        tid = "_thread_id(_tx, _ty, _tz, _bdx, _bdy)"
        if self.cta_group == 2:       # both CTAs' shared blocks, by buffer name
            em.w(d, f"_tc_cp2(_tmem(_BS), {self.key}, '{sbuf.name}', {pyexpr(base)}, {pyexpr(self.addr)}, {tid}, "
                    "_RANK, _CBS, _CS)")
            return
        em.w(d, f"_tc_cp(_tmem(_BS), {self.key}, {sbuf.name}, {pyexpr(base)}, {pyexpr(self.addr)}, {tid})")


def _tc_cp(st, key, arr, base, addr, thread):
    node = _CPS[key][0]
    what = node.describe()
    st.one_issuer(node, thread, what)
    ls, cs = _cp_write(st, key, arr, base, addr, what)
    st.pending[ls, cs] = st.begin(thread, what)


def _tc_cp2(st, key, name, base, addr, thread, rank, cbs, css):
    """tcgen05.cp.cta_group::2 issued by the pair's leader: each CTA's shared block at the same offset into its own
    TMEM at addr (CUTLASS's 2-SM block-scaled GEMMs: each CTA's own SFA rows in its shared memory, one copy by the
    leader)."""
    node = _CPS[key][0]
    what = node.describe()
    if rank & 1:
        raise KernelRuntimeError(f"{what} is issued by the odd CTA of its pair (cluster rank {rank}): a pair's "
                                 "tcgen05.cp.cta_group::2 is issued by the even CTA, the leader (as CUTLASS does; what an "
                                 "odd issuer's copy reads and writes is not documented, so it is not emulated)")
    st.one_issuer(node, thread, what)
    if rank + 1 >= len(css):
        raise KernelRuntimeError(f"{what}: block rank {rank} has no peer CTA in a cluster of {len(css)} blocks")
    peer = tmem_state(cbs[rank + 1])
    ls, cs = _cp_write(st, key, css[rank][name], base, addr, f"{what} (leader CTA)")
    _cp_write(peer, key, css[rank + 1][name], base, addr, f"{what} (peer CTA)")
    i = st.begin(thread, what)
    st.pending[ls, cs] = i
    st.mark_remote(i, peer, ls, cs)


def _cp_write(st, key, arr, base, addr, what):
    """One CTA's part of a copy: its shared block into its TMEM cells; (lanes, columns) written."""
    _, walk, (lanes, cols, sub) = _CPS[key]
    idx = base + walk
    if idx.min() < 0 or idx.max() >= arr.shape[0]:
        raise KernelRuntimeError(f"{what} reads shared elements {int(idx.min())}..{int(idx.max())}, outside the buffer of "
                                 f"{arr.shape[0]}")
    bits = arr.itemsize * 8
    raw = arr[idx].view(f"u{arr.itemsize}").astype(np.uint32)        # the values' bit patterns, as the copy moves them
    ls, cs = lanes + (addr >> 16), cols + (addr & 0xFFFF)
    st.check_columns(ls, cs, what)
    for s in np.unique(sub):            # each sub-word position once, so that no cell is assigned twice at a time
        at = sub == s
        keep = ~np.uint32(((1 << bits) - 1) << (int(s) * bits))
        st.cells[ls[at], cs[at]] = (st.cells[ls[at], cs[at]] & keep) | (raw[at] << np.uint32(int(s) * bits))
    return ls, cs


Tcgen05Cp.cpu_helpers = {"_tc_cp": _tc_cp, "_tc_cp2": _tc_cp2, "_tmem": tmem_state, "_thread_id": thread_id}


def utccp_copy(cx, atom, src, dst, pred=None):
    """wb.copy(UTCCP atom, shared (128, K) tile, TMEM tensor of the same shape): one tcgen05.cp per row block."""
    name = f"copy({atom.name})"
    if atom.instruction != "tcgen05_cp":
        raise TypeError(f"{name}: a TMEM load/store atom moves TMEM through a tiled copy: pass "
                        f"wb.make_tmem_copy(atom, tmem_tensor) as wb.copy's first argument, not the atom.")
    if pred is not None:
        raise ValueError(f"{name}: tcgen05.cp takes no predicate.")
    shape, cta = atom.shape_info
    if shape == "4x32dp128bit":
        return _sf_copy(cx, atom, src, dst, name, cta)
    if shape not in _SHAPES:
        raise ValueError(f"{name}: kernels lower the 128dp256bit, 128dp128bit and 4x32dp128bit UTCCP atoms (_1cta and "
                         "_2cta) so far (tcgen05.cp.cta_group::{1|2}.128x256b / 128x128b / 32x128b.warpx4); the 4dp / "
                         "2x64dp shapes and decompression are not lowered yet.")
    ptx_shape, row_bits = _SHAPES[shape]
    tcgen05_cta_group(cx, cta, name)
    if tmem_view(dst) is None:
        raise TypeError(f"{name}: expected the destination as a TMEM tensor (wb.make_tmem_tensor), but got {dst}.")
    t = atom.value_type
    # tf32 is a Float32's bits (the tensor core drops the low 13): a Float32 tile copies into a TS tf32 atom's A
    same = (ir.Float32, ir.TFloat32) if t in (ir.Float32, ir.TFloat32) else (t,)
    if getattr(src, "etype", None) not in same or dst.etype not in same:
        raise TypeError(f"{name}: the atom copies {t}; expected a shared tile and a TMEM tensor of {t}, but got "
                        f"{getattr(src, 'etype', type(src).__name__)} and {dst.etype}.")
    bits = t.bits
    kat = row_bits // bits
    k = src.layout[1].size if type(src.layout.shape) is tuple and src.layout.rank == 2 else None
    if type(k) is not int or k % kat:
        raise ValueError(f"{name}: expected the source as a shared (128, K) tile with K a multiple of {kat} ({row_bits} "
                         f"bits of {t} a row per tcgen05.cp), but got {src}.")
    blocks = smem_operand(src, "the source", name, "K", 128, k, kat, bits)
    per = 32 // bits
    if dst.layout.size != 128 * k:
        raise ValueError(f"{name}: expected the destination to hold the source's 128 x {k} values, but got {dst}.")
    lanes, cols, sub = tmem_table(dst.layout, 128 * k, 128, per)
    # the atom's val_id: value (m, y) of a block at lane m, 32-bit column y // per, sub-word y % per, from the block's
    # first column
    want_l = np.repeat(np.arange(128)[:, None], kat, axis=1)
    want_c = np.repeat((np.arange(kat) // per)[None, :], 128, axis=0)
    want_s = np.repeat((np.arange(kat) % per)[None, :], 128, axis=0)
    cx.require_arch(100, f"tcgen05.cp ({NO_BLACKWELL})")
    cx.uses_collectives()
    for j, blk in enumerate(blocks):
        s = slice(j * kat, (j + 1) * kat)
        c0 = int(cols[0, j * kat])
        if not ((lanes[:, s] == want_l).all() and (cols[:, s] - c0 == want_c).all() and (sub[:, s] == want_s).all()):
            raise ValueError(f"{name}: the destination's values {j * kat}..{(j + 1) * kat - 1} of each row are not where "
                             f"tcgen05.cp.{ptx_shape} puts them (row m in lane m, {per} values a 32-bit column, in order, "
                             f"from lane 0): {dst.layout}; use a TS atom's make_fragment_A or a (128, K) TMEM tensor so "
                             "laid out.")
        addr = ir.binop("+", ir.binop("//", dst.offset, per), c0)
        key = len(_CPS)
        node = Tcgen05Cp(atom, ptx_shape, ir.as_expr(addr), blk, key, cta)
        _CPS[key] = (node, smem_walk(blk[2], 128, kat), (want_l, want_c, want_s))
        cx.emit(node)
    cx.mark_written(dst.buf)


def _sf_copy(cx, atom, src, dst, name, cta=1):
    """Scale factors, shared -> TMEM (CUTLASS's block-scaled GEMMs' SF copy): src a shared tensor laid out as a
    block-scaled atom's ``smem_layout_SFA/SFB(tile)``, dst its TMEM fragment (``make_fragment_SFA/SFB`` of that
    shape).  One ``tcgen05.cp.cta_group::1.32x128b.warpx4`` per 512-byte block of src (32 rows x 16 bytes): byte
    16 i + 4 j + b of the block to lane i + 32 q (every q < 4: the copy is broadcast to the four lane quarters),
    column j, byte b of the destination; each value's cells proven to be where the fragment keeps it.  ``cta`` 2
    (``_2cta``, ``tcgen05.cp.cta_group::2``): issued by the pair's leader, each CTA's src (at the same shared offset)
    into its own TMEM."""
    tcgen05_cta_group(cx, cta, name)
    if tmem_view(dst) is None:
        raise TypeError(f"{name}: expected the destination as a TMEM tensor (wb.make_tmem_tensor), but got {dst}.")
    t = atom.value_type
    if t.bits != 8 or dst.etype is not t:
        raise TypeError(f"{name}: SM100_UTCCP_4x32dp128bit copies 8-bit scale factors here: expected the atom and the "
                        f"TMEM tensor of one 8-bit scale-factor type, but got {t} and {dst.etype}.")
    # departure: kernels cannot hold ue8m0 in memory, so the shared scale factors are their bits, wb.Uint8
    if getattr(src, "etype", None) not in (t, ir.Uint8) or getattr(getattr(src, "buf", None), "space", None) != "smem":
        raise TypeError(f"{name}: expected the source as a shared tensor of the scale factors' bits (wb.Uint8, laid out as "
                        f"atom.smem_layout_SFA/SFB(tile)), but got {src}.")
    S, T = src.layout, dst.layout
    try:
        rows = S[0][0].size
        same = (S[0][1].shape == T[0][1].shape and T[0][0].size == 4 * rows and S.rank == T.rank
                and all(S[i].shape == T[i].shape for i in range(1, S.rank)))
    except (TypeError, IndexError, AttributeError):
        same = False
    if not same:
        raise ValueError(f"{name}: expected the source laid out as a block-scaled atom's smem_layout_SFA/SFB(tile) and "
                         f"the destination as its make_fragment_SFA/SFB(that shape) (rows four times: one copy a lane "
                         f"quarter), but got {S} and {T}.")
    n = S.size
    e = np.arange(n)
    soff = np.asarray(list(S.offsets()))
    toff = np.asarray(list(T.offsets()))
    tidx = (e % rows)[:, None] + rows * np.arange(4)[None, :] + 4 * rows * (e // rows)[:, None]
    to = toff[tidx]                                                   # (n, 4) value offsets of each value's copies
    dp = 65536 * 4
    lane, col, byte = to // dp, (to % dp) // 4, (to % dp) % 4
    if divisibility_of(src.offset) % 16 if src.offset != 0 else False:
        raise ValueError(f"{name}: the source must start on 16 bytes (a shared-memory descriptor's unit), but its offset "
                         f"is {src.offset}.")
    if divisibility_of(dst.offset) % 4 if dst.offset != 0 else False:
        raise ValueError(f"{name}: the destination must start on a 32-bit TMEM column, but its offset is {dst.offset}.")
    order = np.argsort(soff, kind="stable")
    blocks, i = [], 0
    while i < n:
        start = int(soff[order[i]])
        if start % 16:
            raise ValueError(f"{name}: the source's 512-byte block at byte {start} does not start on 16 bytes.")
        j = i
        while j < n and soff[order[j]] < start + 512:
            j += 1
        sel = order[i:j]
        rel = soff[sel] - start
        if len(np.unique(rel)) != 512:
            raise ValueError(f"{name}: the source's bytes {start}..{start + 511} are not one whole 512-byte block of "
                             "scale factors (tcgen05.cp 32x128b.warpx4 moves 32 rows of 16 bytes).")
        r, c, b = rel // 16, (rel % 16) // 4, rel % 4
        k = sel[np.argmin(rel)]
        l0, c0 = int(lane[k, 0]), int(col[k, 0])
        ok = ((lane[sel] == (l0 + r)[:, None] + 32 * np.arange(4)[None, :]).all() and (col[sel] == (c0 + c)[:, None]).all()
              and (byte[sel] == b[:, None]).all() and l0 == 0)
        if not ok:
            raise ValueError(f"{name}: the source's 512-byte block at byte {start} does not land where the destination "
                             f"keeps it: tcgen05.cp 32x128b.warpx4 puts byte 16 i + 4 j + b at lane i + 32 q (q < 4), "
                             f"column j, byte b from the block's first cell; use the atom's smem_layout_SF* and "
                             f"make_fragment_SF* together.")
        blocks.append((start, c0))
        i = j
    cx.require_arch(100, f"tcgen05.cp ({NO_BLACKWELL})")
    cx.uses_collectives()
    walk_l = np.repeat(np.arange(128)[:, None], 16, axis=1)          # row 32 q + i of the walk: lane i + 32 q
    walk_c = np.tile((np.arange(16) // 4)[None, :], (128, 1))
    walk_s = np.tile((np.arange(16) % 4)[None, :], (128, 1))
    for start, c0 in blocks:
        view = KTensor(src.buf, ir.binop("+", src.offset, start), Layout((32, 16), (16, 1)))
        blk = smem_operand(view, "the source", name, "K", 32, 16, 16, 8)[0]
        walk = np.tile(smem_walk(blk[2], 32, 16), (4, 1))             # the 32 rows, once for each lane quarter
        addr = ir.binop("+", ir.binop("//", dst.offset, 4), c0)
        key = len(_CPS)
        node = Tcgen05Cp(atom, "32x128b.warpx4", ir.as_expr(addr), blk, key, cta)
        _CPS[key] = (node, walk, (walk_l, walk_c, walk_s))
        cx.emit(node)
    cx.mark_written(dst.buf)


ATOM_COPIES[TmemCopyAtom] = utccp_copy
