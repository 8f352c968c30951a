"""Tensor memory to registers and back (``tcgen05.ld`` / ``tcgen05.st`` / ``tcgen05.wait::ld|st``):
``wb.copy(tmem_copy, acc, frag)`` with ``tmem_copy = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_LOAD_32dp32b8x",
wb.Float32), fragment_C)`` loads each thread's row of a TMEM accumulator into its register fragment, ``wb.copy(
store_copy, frag, acc)`` with an ``SM100_TMEM_STORE_*`` atom stores it back; ``wb.tcgen05_wait_ld()`` /
``wb.tcgen05_wait_st()`` wait for them (before the registers are read, before the TMEM is read by an MMA).

Warp-collective (``.sync.aligned``): warp w of the block reaches only lanes 32*(w%4)..32*(w%4)+31 of TMEM, thread t of
it lane 32*(w%4) + t%32, one 32-bit column a value (the 32dp32b shapes: the M = 128 accumulator of a 1-SM UMMA, one row
a thread); a call of the ``...{r}x`` atom moves r columns, and the copy walks the row r columns at a time.  Other
shapes (16dp*) and packed 16-bit variants are not lowered in kernels yet.  Compiled for sm_100a (NVRTC, in the tests)
and emulated by the CPU executor; no Blackwell GPU is lent here, so it has never run on one.

CPU semantics: one warp's instruction carried out at once (a :class:`~workbench.dsl.scheduling.Collective`): the
address must be the warp's own (lane field 32*(w%4): another quarter is an error), every cell must be allocated, and a
load of a cell an MMA writes before that MMA's commit completed is an error.  Loads and stores complete at issue, so a
register read before ``tcgen05_wait_ld`` is not caught here.
"""

from __future__ import annotations

import numpy as np

from ...atoms.tmem import TmemTiledCopy
from .. import ir
from ..backends.cpu import KernelRuntimeError, pyexpr
from ..backends.cuda import expr, registers
from ..builtins import ATOM_COPIES, builtin
from ..views import KTensor
from .tcgen05_alloc import NO_BLACKWELL, thread_id, tmem_state, tmem_view


class TmemLdSt(ir.Instruction):
    """One ``tcgen05.ld|st.sync.aligned.32x32b.x{r}.b32`` of a warp: addr = the tensor's TMEM address expression (lane 0
    of the tensor, its first column of this call), regs = (register buffer, static offsets of the r values)."""

    __slots__ = ("store", "addr", "regs", "r")
    threads = 32

    def __init__(self, store, addr, regs, r):
        self.store, self.addr, self.regs, self.r = store, addr, regs, r

    def describe(self):
        return f"tcgen05.{'st' if self.store else 'ld'} 32x32b.x{self.r} (line {self.line})"

    def _warp_addr(self, lang):
        """The warp's address: the tensor's plus its 32-lane quarter (lane field 32 * (warp % 4))."""
        if lang == "cuda":
            return f"((unsigned)({expr(self.addr)}) + ((((unsigned)threadIdx.x >> 5) & 3u) << 21))"
        return f"({pyexpr(self.addr)} + (((_tx >> 5) & 3) << 21))"

    def cuda(self, em, d):
        buf, offs = self.regs
        regs = registers(buf, offs, "B32")
        n = len(regs)
        vals = "{" + ", ".join(f"%{i + (1 if self.store else 0)}" for i in range(n)) + "}"
        if self.store:
            ins = ", ".join(f'"{c}"({r})' for c, r in regs)
            em.w(d, f'asm volatile("tcgen05.st.sync.aligned.32x32b.x{self.r}.b32 [%0], {vals};\\n" :: '
                    f'"r"({self._warp_addr("cuda")}), {ins} : "memory");')
        else:
            outs = ", ".join(f'"={c}"({r})' for c, r in regs)
            em.w(d, f'asm volatile("tcgen05.ld.sync.aligned.32x32b.x{self.r}.b32 {vals}, [%{n}];\\n" : {outs} : '
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
        lane0, col0 = addr >> 16, addr & 0xFFFF
        if lane0 != 32 * (warp % 4):
            raise ValueError(f"{what}: warp {warp} reaches TMEM lanes {lane0}..{lane0 + 31}, but warp w may only reach "
                             f"lanes 32*(w%4)..32*(w%4)+31 = {32 * (warp % 4)}..{32 * (warp % 4) + 31} (tcgen05.ld/st's "
                             "rule); a tensor made at another lane offset needs the warp that owns those lanes")
        ls = np.repeat(np.arange(lane0, lane0 + 32), self.r).reshape(32, self.r)
        cs = np.tile(np.arange(col0, col0 + self.r), 32).reshape(32, self.r)
        try:
            st.check_columns(ls, cs, what)
            f32 = st.cells.view(np.float32)
            if self.store:
                f32[ls, cs] = np.array([op[3] for op in lanes], dtype=np.float32)
                return [None] * 32
            st.read(ls, cs, what)
        except KernelRuntimeError as e:
            raise ValueError(str(e)) from None
        return [tuple(float(x) for x in row) for row in f32[ls, cs]]


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


def tmem_copy(cx, tiled, src, dst, pred=None):
    """wb.copy(make_tmem_copy(SM100_TMEM_LOAD/STORE_32dp32b{r}x atom, ...), TMEM tensor, fragment) (or the fragment
    first for a store): one tcgen05.ld/st per r columns of the thread's row."""
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
    if shape != "32dp32b" or pack or atom.value_type.bits != 32 or tm.etype.bits != 32 or frag.etype is not tm.etype:
        raise ValueError(f"copy({name}): kernels lower the 32dp32b TMEM atoms over 32-bit values (one row a thread, "
                         f"fragments of the tensor's type) so far; got {name} over {atom.value_type}, tensor of {tm.etype}, "
                         f"fragment of {frag.etype}.")
    lay = tm.layout
    size = lay.size
    if type(size) is not int or size % 128:
        raise ValueError(f"copy({name}): expected a TMEM tensor of 128 rows (the M = 128 accumulator), but got {tm}.")
    n = size // 128
    for i in range(size):          # one row a lane, the columns in order: lane m, column c
        m, c = i % 128, i // 128
        if lay(i) != (m << 16) + c:
            raise ValueError(f"copy({name}): expected the 128 x N accumulator of a 1-SM M=128 UMMA (element (m, n) at lane "
                             f"m, column n), but {lay} puts ({m}, {c}) at offset {lay(i)}.")
    if frag.layout.size != n or n % r:
        raise ValueError(f"copy({name}): each thread moves its row of {n} values, {r} a call: expected a fragment of {n} "
                         f"values (a multiple of {r}), but got {frag}.")
    offs = [ir.binop("+", frag.offset, frag.layout(j)) for j in range(n)]
    if any(type(o) is not int for o in offs):
        raise ValueError(f"copy({name}): expected the fragment at static register positions, but got {frag}.")
    cx.require_arch(100, f"tcgen05.{'st' if store else 'ld'} ({NO_BLACKWELL})")
    cx.uses_collectives()
    cx.require_block_threads(tiled.size, repr(tiled), at_least=True)
    for j in range(0, n, r):
        cx.emit(TmemLdSt(store, ir.as_expr(ir.binop("+", tm.offset, j)), (frag.buf, tuple(offs[j:j + r])), r))
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
