"""Tensor memory to registers and back (``tcgen05.ld`` / ``tcgen05.st`` / ``tcgen05.wait::ld|st``):
``wb.copy(tmem_copy, acc, frag)`` with ``tmem_copy = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_LOAD_32dp32b8x",
wb.Float32), fragment_C)`` loads each thread's row of a TMEM accumulator into its register fragment, ``wb.copy(
store_copy, frag, acc)`` with an ``SM100_TMEM_STORE_*`` atom stores it back; ``wb.tcgen05_wait_ld()`` /
``wb.tcgen05_wait_st()`` wait for them (before the registers are read, before the TMEM is read by an MMA).  The
tensor and the fragment hold one 32-bit type: Float32, or Int32 (a kind::i8 accumulator) or Uint32.

Warp-collective (``.sync.aligned``): warp w of the block reaches only lanes 32*(w%4)..32*(w%4)+31 of TMEM.  Every
shape lowers (``32x32b``, ``16x256b``, ``16x128b``, ``16x64b``, ``16x32bx2`` with CuTe's half offset r, each ``.x{r}``):
one call a tile of the tiled copy, the thread's fragment holding value v of tile k at v + V*k (V values a call; for a
32dp32b copy of an M = 128 accumulator, the thread's row in column order; a 16dp copy reads an M = 64 accumulator's
16 lanes of each quarter).  Each (thread, value)'s cell is proven at trace time to be where the atom's register layout
and ValID put it (CuTe's, differential-tested) for the tensor the tiled copy was made for.  Not yet: the packed
``_16b`` variants (16-bit values).  Compiled for sm_100a (NVRTC, in the tests) and emulated by the CPU executor; no
Blackwell GPU is lent here, so it has never run on one.

CPU semantics: one warp's instruction carried out at once (a :class:`~workbench.dsl.scheduling.Collective`): the
address must be the warp's own (lane field 32*(w%4): another quarter is an error), every cell must be allocated, and a
load of a cell an MMA writes before that MMA's commit completed is an error.  Loads and stores complete at issue, so a
register read before ``tcgen05_wait_ld`` is not caught here.  In a 2-SM kernel (``cta_group::2``) each CTA's warps
read their own CTA's tensor memory, which holds its half of the pair's accumulator (the PTX ISA: ld/st reach "the
Tensor Memory of the current CTA"); a cell the leader's pair MMA writes is pending in the peer CTA too, until the
commit's mbarrier completes.
"""

from __future__ import annotations

import numpy as np

from ...atoms.tmem import DP_b, TmemTiledCopy
from ...layout import complement
from .. import ir
from ..backends.cpu import KernelRuntimeError, pyexpr
from ..backends.cuda import expr, registers
from ..builtins import ATOM_COPIES, builtin
from ..views import KTensor
from .tcgen05_alloc import NO_BLACKWELL, thread_id, tmem_state, tmem_view

# atom shape -> PTX shape (16x32bx2 takes the second half's column offset as an immediate: r, as CuTe writes it)
_PTX_SHAPES = {"32dp32b": "32x32b", "16dp256b": "16x256b", "16dp128b": "16x128b", "16dp64b": "16x64b",
               "16dp32b": "16x32bx2"}
_PLANS: dict = {}    # (atom, tensor layout, tiled copy) -> _plan's answer
_HW: dict = {}       # atom name -> (lanes, columns) of each (lane of the warp, register) from the call's address


class TmemLdSt(ir.Instruction):
    """One ``tcgen05.ld|st.sync.aligned.{shape}.x{r}.b32`` of a warp: addr = the TMEM address expression of warp 0's
    call (the warp adds its 32-lane quarter), regs = (register buffer, static offsets of the thread's values in
    register order), hw = the atom's (lane, column) of each (lane of the warp, register) from the address."""

    __slots__ = ("store", "addr", "regs", "atom_name", "shape", "r", "np_type")
    threads = 32

    def __init__(self, store, addr, regs, atom_name, shape, r, np_type=np.float32):
        self.store, self.addr, self.regs, self.atom_name, self.shape, self.r = store, addr, regs, atom_name, shape, r
        self.np_type = np_type      # how the CPU executor reads the 32-bit cells: Float32, Int32 or Uint32 values

    def describe(self):
        return f"tcgen05.{'st' if self.store else 'ld'} {_PTX_SHAPES[self.shape]}.x{self.r} (line {self.line})"

    def _warp_addr(self, lang):
        """The warp's address: the tensor's plus its 32-lane quarter (lane field 32 * (warp % 4))."""
        if lang == "cuda":
            return f"((unsigned)({expr(self.addr)}) + ((((unsigned)threadIdx.x >> 5) & 3u) << 21))"
        return f"({pyexpr(self.addr)} + (((_tx >> 5) & 3) << 21))"

    def cuda(self, em, d):
        buf, offs = self.regs
        regs = registers(buf, offs, "B32")
        n = len(regs)
        shape = _PTX_SHAPES[self.shape]
        imm = f", {self.r}" if self.shape == "16dp32b" else ""
        vals = "{" + ", ".join(f"%{i + (1 if self.store else 0)}" for i in range(n)) + "}"
        if self.store:
            ins = ", ".join(f'"{c}"({r})' for c, r in regs)
            em.w(d, f'asm volatile("tcgen05.st.sync.aligned.{shape}.x{self.r}.b32 [%0]{imm}, {vals};\\n" :: '
                    f'"r"({self._warp_addr("cuda")}), {ins} : "memory");')
        else:
            outs = ", ".join(f'"={c}"({r})' for c, r in regs)
            em.w(d, f'asm volatile("tcgen05.ld.sync.aligned.{shape}.x{self.r}.b32 {vals}, [%{n}]{imm};\\n" : {outs} : '
                    f'"r"({self._warp_addr("cuda")}) : "memory");')

    def python(self, em, d):
        buf, offs = self.regs
        vals = "(" + "".join(f"{buf.name}.item({o}), " for o in offs) + ")" if self.store else "None"
        em.w(d, f"_r = yield _Collective({em.collective(self)}, (_tmem(_BS), {self._warp_addr('python')}, "
                f"_thread_id(_tx, _ty, _tz, _bdx, _bdy), {vals}))")
        if not self.store:
            for i, o in enumerate(offs):
                em.w(d, f"{buf.name}[{o}] = _r[{i}]")

    def emulate(self, lanes):
        st, addr, thread, _ = lanes[0]
        what = self.describe()
        if any(op[1] != addr for op in lanes):
            raise ValueError(f"{what}: the lanes of the warp pass different TMEM addresses "
                             f"({sorted({hex(op[1]) for op in lanes})[:4]}...); .sync.aligned needs one")
        warp = thread // 32
        hl, hc = _HW[self.atom_name]
        ls, cs = hl + (addr >> 16), hc + (addr & 0xFFFF)
        q = 32 * (warp % 4)
        if ls.min() < q or ls.max() > q + 31:
            raise ValueError(f"{what}: warp {warp} reaches TMEM lanes {int(ls.min())}..{int(ls.max())}, but warp w may "
                             f"only reach lanes 32*(w%4)..32*(w%4)+31 = {q}..{q + 31} (tcgen05.ld/st's rule); a tensor "
                             "made at another lane offset needs the warp that owns those lanes")
        try:
            st.check_columns(ls, cs, what)
            cells = st.cells.view(self.np_type)
            if self.store:
                cells[ls, cs] = np.array([op[3] for op in lanes], dtype=self.np_type)
                return [None] * 32
            st.read(ls, cs, what)
        except KernelRuntimeError as e:
            raise ValueError(str(e)) from None
        py = float if self.np_type is np.float32 else int
        return [tuple(py(x) for x in row) for row in cells[ls, cs]]


TmemLdSt.cpu_helpers = {"_tmem": tmem_state, "_thread_id": thread_id}


class Tcgen05Wait(ir.Instruction):
    """``tcgen05.wait::ld|st.sync.aligned``: this thread's tcgen05 loads (or stores) are complete."""

    __slots__ = ("store",)

    def __init__(self, store):
        self.store = store

    def cuda(self, em, d):
        em.w(d, f'asm volatile("tcgen05.wait::{"st" if self.store else "ld"}.sync.aligned;\\n" ::: "memory");')

    def python(self, em, d):
        pass   # the executor's loads and stores complete at issue


def _hardware(atom, store):
    """(lanes, columns) of each (lane of the warp, register) from the call's address: the atom's register layout
    (CuTe's DstLayout of a load, SrcLayout of a store: (thread, bit) -> bit of its TMEM footprint) through its ValID
    (footprint bit -> TMEM bit address, lanes DP_b apart)."""
    hw = _HW.get(atom.name)
    if hw is None:
        reg = atom.layout_src_tv_bits if store else atom.layout_dst_tv_bits
        n = reg[1].size // 32
        hl, hc = np.zeros((32, n), np.int64), np.zeros((32, n), np.int64)
        for lane in range(32):
            for j in range(n):
                lane_off, bit = divmod(atom.val_id_bits(reg((lane, 32 * j))), DP_b)
                hl[lane, j], hc[lane, j] = lane_off, bit // 32
        hw = _HW[atom.name] = (hl, hc)
    return hw


def _colex(x, sizes):
    out = []
    for s in sizes:
        out.append(x % s)
        x //= s
    return out


def _plan(tiled, data, store, name):
    """The calls a warpgroup makes to copy the TMEM tensor ``data`` (its layout; offsets in 32-bit values) with the
    tiled copy: [(lane, column) of warp 0's call address] per tile of the tiler, in the fragment's order (element
    v + V * k: value v of the atom, tile k), each (thread, value)'s cell proven to be where the hardware puts it."""
    hl, hc = _hardware(tiled.atom, store)
    tv = tiled.layout_src_tv_tiled if store else tiled.layout_dst_tv_tiled
    V = tv[1].size
    if V != hl.shape[1]:
        raise ValueError(f"copy({name}): expected one atom call a thread per tile ({hl.shape[1]} registers), but the "
                         f"tiled copy gives a thread {V} values a tile.")
    modes = [data[i] for i in range(data.rank)] if type(data.shape) is tuple else [data]
    tiler = tiled.tiler_mn
    if len(tiler) != len(modes):
        raise ValueError(f"copy({name}): the tiled copy was made for a TMEM tensor of {len(tiler)} modes, but this one "
                         f"has {len(modes)} ({data}); slice it as the tensor given to wb.make_tmem_copy (e.g. "
                         "t[(None, None), 0, k] keeps both modes of a ((M, N), ...) accumulator).")
    comps = [complement(t, m.size) for t, m in zip(tiler, modes)]
    tsz, rsz = [t.size for t in tiler], [c.size for c in comps]
    tiles = 1
    for x in rsz:
        tiles *= x

    def cell(t, v, k):
        o = sum(m(ti(x) + c(kk)) for m, ti, c, x, kk in zip(modes, tiler, comps, _colex(tv((t, v)), tsz), _colex(k, rsz)))
        return o >> 16, o & 0xFFFF

    calls = []
    for k in range(tiles):
        lane0, col0 = cell(0, 0, k)
        base = (lane0 - int(hl[0, 0]), col0 - int(hc[0, 0]))
        for w in range(4):
            for lane in range(32):
                for j in range(V):
                    got = cell(32 * w + lane, j, k)
                    want = (base[0] + 32 * w + int(hl[lane, j]), base[1] + int(hc[lane, j]))
                    if got != want:
                        raise ValueError(f"copy({name}): thread {32 * w + lane}'s value {j} of tile {k} is the tensor's "
                                         f"TMEM cell (lane, column) {got}, but the warp's call reads {want}: the tiled "
                                         "copy does not fit the tensor (make it with wb.make_tmem_copy(atom, tensor)).")
        calls.append(base)
    return V, calls


def tmem_copy(cx, tiled, src, dst, pred=None):
    """wb.copy(make_tmem_copy(SM100_TMEM_LOAD/STORE atom, tmem tensor), TMEM tensor, fragment) (or the fragment first
    for a store): one tcgen05.ld/st a tile of the tiled copy; the thread's fragment holds value v of tile k at v + V*k
    (the atom's V values a call, the tiles in order: for a 32dp32b copy of an M = 128 accumulator, the thread's row)."""
    atom = tiled.atom
    store = atom.instruction == "tcgen05_st"
    tm, frag = (dst, src) if store else (src, dst)
    name = atom.name
    if pred is not None:
        raise ValueError(f"copy({name}): tcgen05.ld/st take no predicate (every lane of the warp takes part).")
    view = tmem_view(tm)
    if view is None:
        raise TypeError(f"copy({name}): expected the {'destination' if store else 'source'} as a TMEM tensor "
                        f"(wb.make_tmem_tensor), but got {tm}.")
    if type(frag) is not KTensor or frag.buf.space != "rmem":
        raise TypeError(f"copy({name}): expected the {'source' if store else 'destination'} as a register fragment "
                        f"(wb.make_fragment), but got {frag}.")
    shape, dps, r, pack = atom.shape_info
    if pack or atom.value_type.bits != 32 or tm.etype.bits != 32 or frag.etype is not tm.etype:
        raise ValueError(f"copy({name}): kernels lower the TMEM atoms over 32-bit values (fragments of the tensor's "
                         f"type) so far, not the packed _16b variants; got {name} over {atom.value_type}, tensor of "
                         f"{tm.etype}, fragment of {frag.etype}.")
    np_type = {ir.Float32: np.float32, ir.Int32: np.int32, ir.Uint32: np.uint32}.get(tm.etype)
    if np_type is None:
        raise ValueError(f"copy({name}): kernels move TMEM tensors of Float32, Int32 or Uint32 (an MMA's accumulator), "
                         f"but this one holds {tm.etype}.")
    lay = tm.layout
    if not lay.is_static:
        raise ValueError(f"copy({name}): expected a static TMEM layout, but got {lay}.")
    key = (name, str(lay), str(tiled.layout_tv), str(tiled.tiler_mn))
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _plan(tiled, lay, store, name)
    V, calls = plan
    n = V * len(calls)
    if frag.layout.size != n:
        raise ValueError(f"copy({name}): each thread moves {V} values a call in {len(calls)} calls: expected a fragment "
                         f"of {n} values, but got {frag}.")
    offs = [ir.binop("+", frag.offset, frag.layout(j)) for j in range(n)]
    if any(type(o) is not int for o in offs):
        raise ValueError(f"copy({name}): expected the fragment at static register positions, but got {frag}.")
    cx.require_arch(100, f"tcgen05.{'st' if store else 'ld'} ({NO_BLACKWELL})")
    cx.uses_collectives()
    cx.require_block_threads(tiled.size, repr(tiled), at_least=True)
    for k, (lane, col) in enumerate(calls):
        addr = ir.as_expr(ir.binop("+", tm.offset, (lane << 16) + col))
        cx.emit(TmemLdSt(store, addr, (frag.buf, tuple(offs[k * V:(k + 1) * V])), name, shape, r, np_type))
    if store:
        cx.mark_written(tm.buf)
    else:
        cx.mark_written(frag.buf)


ATOM_COPIES[TmemTiledCopy] = tmem_copy


@builtin
def tcgen05_wait_ld(cx):
    """``tcgen05.wait::ld``: this thread's tcgen05 loads are complete (before reading their registers).  Compiled for
    sm_100a, never run on a Blackwell GPU here."""
    cx.require_arch(100, f"tcgen05.wait ({NO_BLACKWELL})")
    cx.emit(Tcgen05Wait(False))


@builtin
def tcgen05_wait_st(cx):
    """``tcgen05.wait::st``: this thread's tcgen05 stores are complete.  Compiled for sm_100a, never run on a Blackwell
    GPU here."""
    cx.require_arch(100, f"tcgen05.wait ({NO_BLACKWELL})")
    cx.emit(Tcgen05Wait(True))
