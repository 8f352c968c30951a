"""Blackwell tensor memory allocation (``tcgen05.alloc`` / ``dealloc`` / ``relinquish_alloc_permit``):
``wb.tmem_alloc(holder, ncols)``, ``wb.tmem_dealloc(addr, ncols)``, ``wb.tmem_relinquish_alloc_permit()``
(CuTe DSL's ``cute.arch.alloc_tmem`` / ``dealloc_tmem`` / ``relinquish_tmem_alloc_permit``), and
``wb.make_tmem_tensor(addr, tmem_layout)``: the TMEM tensor at an allocated address in a kernel (CuTe DSL's
``cute.make_tensor(tmem_ptr, layout)``), e.g. ``atom.make_fragment_C(atom.partition_shape_C((M, N)))`` made on the
host.  Each of the three is warp-wide (``.sync.aligned``): every lane of one warp executes it.

Compiled for sm_100a (NVRTC, in the tests) and emulated by the CPU executor; no Blackwell GPU is lent here, so no
tcgen05 kernel has run on one.

CPU semantics: each block has a :class:`TmemState` (its ``_BS['tmem']``): 128 lanes x 512 columns of 32-bit cells,
the allocator of ``workbench.atoms.tmem.TmemAllocator`` (a power of two of 32..512 columns, placed at the lowest
free multiple of its size: read the address, never assume it), and the asynchronous tcgen05 work in flight (the
MMAs of ``tcgen05_mma.py`` until the mbarrier of their ``tcgen05.commit`` completes).  Columns still allocated
when the block ends are reported (a leak: the next CTA on the SM would block in its alloc).
"""

from __future__ import annotations

import numpy as np

from ...atoms.tmem import TMEM_COLUMNS, TMEM_LANES, TmemAllocator, TmemTensor
from .. import ir
from ..backends.cpu import BlockState, KernelRuntimeError, pyexpr
from ..backends.cuda import expr, saddr
from ..builtins import builtin
from ..views import KTensor

NO_BLACKWELL = ("compiled for sm_100a, emulated by the CPU executor; no Blackwell GPU is lent here, so it has never "
                "run on one")


class TmemState(BlockState):
    """One block's tensor memory on the CPU executor: ``cells`` (128 x 512 uint32), ``pending`` (the id of the
    asynchronous operation whose result a cell awaits, 0 when the cell is final), the allocator, and the
    asynchronous operations: issued by a thread and not yet committed (``uncommitted``: thread -> ids), committed
    on an mbarrier and not yet complete (``inflight``: [(ids, mbarrier state, key)])."""

    def __init__(self):
        self.cells = np.zeros((TMEM_LANES, TMEM_COLUMNS), np.uint32)
        self.pending = np.zeros((TMEM_LANES, TMEM_COLUMNS), np.int64)
        self.alloc = TmemAllocator(1)
        self.alloc_lines: dict = {}     # first column -> line of its tcgen05.alloc
        self.ops: dict = {}             # async id -> what it is (for errors)
        self.issued_by: dict = {}       # async id -> the thread that issued it
        self.next_id = 1
        self.uncommitted: dict = {}     # thread -> [async ids]
        self.inflight: list = []        # [(ids, mbarrier dict, key)] in commit order
        self.issuers: dict = {}         # id(node) -> the thread that issued it (one-thread instructions)
        self.arrive = None              # mbarrier arrival function (set by the commit's module)

    # -- allocation --------------------------------------------------------------------------------------------
    def allocate(self, ncols, line):
        try:
            addr = self.alloc.allocate(ncols)
        except RuntimeError as e:
            raise KernelRuntimeError(f"tcgen05.alloc (line {line}): {e}") from None
        self.alloc_lines[addr & 0xFFFF] = line
        return addr

    def free(self, addr, ncols, line):
        col = addr & 0xFFFF
        if self.alloc.allocations.get(col) == ncols and not addr >> 16:
            busy = self.pending[:, col:col + ncols]
            if busy.any():
                raise KernelRuntimeError(f"tcgen05.dealloc (line {line}) of columns {col}..{col + ncols - 1} while "
                                         f"{self.ops[int(busy[busy != 0][0])]} still writes them: wait on the mbarrier of "
                                         "its wb.tcgen05_commit first")
        try:
            self.alloc.free(addr, ncols)
        except ValueError as e:
            raise KernelRuntimeError(f"tcgen05.dealloc (line {line}): {e}") from None
        self.alloc_lines.pop(col, None)

    def check_columns(self, lanes, cols, what):
        """Every (lane, column) an instruction touches is in an allocation."""
        lanes, cols = np.asarray(lanes), np.asarray(cols)
        if lanes.size and (lanes.min() < 0 or lanes.max() >= TMEM_LANES or cols.min() < 0 or cols.max() >= TMEM_COLUMNS):
            raise KernelRuntimeError(f"{what} reaches TMEM outside 128 lanes x 512 columns (lanes {lanes.min()}..{lanes.max()}, "
                                     f"columns {cols.min()}..{cols.max()})")
        owned = np.zeros(TMEM_COLUMNS, bool)
        for s, n in self.alloc.allocations.items():
            owned[s:s + n] = True
        bad = cols[~owned[cols]]
        if bad.size:
            raise KernelRuntimeError(f"{what} reaches TMEM column {int(bad.flat[0])}, which this block has not allocated "
                                     f"(allocations (column, size): {sorted(self.alloc.allocations.items())}; "
                                     "wb.tmem_alloc first)")

    # -- asynchronous operations -------------------------------------------------------------------------------
    def begin(self, thread, what):
        """A new asynchronous operation issued by ``thread``: its id, to mark the cells it writes with."""
        i = self.next_id
        self.next_id += 1
        self.ops[i] = what
        self.issued_by[i] = thread
        self.uncommitted.setdefault(thread, []).append(i)
        return i

    def commit(self, thread, mb, key):
        """tcgen05.commit: the operations ``thread`` issued since its last commit arrive on the mbarrier when done."""
        self.inflight.append((self.uncommitted.pop(thread, []), mb, key))

    def read(self, lanes, cols, what):
        """A thread reads cells: each must be final (its writer's commit completed)."""
        p = self.pending[lanes, cols]
        if p.any():
            j = int(np.flatnonzero(p)[0])
            op = self.ops[int(p.flat[j])]
            state = ("the mbarrier phase of its wb.tcgen05_commit has not completed" if any(int(p.flat[j]) in ids for ids, _, _ in
                                                                                  self.inflight)
                     else "no wb.tcgen05_commit covers it yet")
            raise KernelRuntimeError(f"{what} reads TMEM lane {int(np.asarray(lanes).flat[j])}, column "
                                     f"{int(np.asarray(cols).flat[j])} before {op} wrote it: {state} (wb.tcgen05_commit "
                                     "on an mbarrier, then wb.mbarrier_wait on it before reading the accumulator)")

    def progress(self):
        if not self.inflight:
            return False
        for ids, mb, key in self.inflight:   # the tensor core finishes them in order
            if ids:
                self.pending[np.isin(self.pending, ids)] = 0
            self.arrive(mb, key)
        self.inflight = []
        return True

    def one_issuer(self, node, thread, what):
        """A single-thread instruction (tcgen05.mma, .commit, .cp): issued by one thread of the block only."""
        first = self.issuers.setdefault(id(node), thread)
        if first != thread:
            raise KernelRuntimeError(f"{what} is issued by thread {first} and by thread {thread} of the block: one thread "
                                     "issues it for the whole CTA (put it under `if wb.thread_idx().x == 0:` or one "
                                     "elected thread of one warp), or every thread's would run")

    def at_block_end(self):
        if self.alloc.allocations:
            cols = sorted(self.alloc.allocations.items())
            lines = [self.alloc_lines.get(c) for c, _ in cols]
            raise KernelRuntimeError(f"the block ends with TMEM columns still allocated (column, size): {cols} (tcgen05.alloc "
                                     f"at line {', '.join(str(x) for x in lines)}): wb.tmem_dealloc them before the kernel "
                                     "ends, or the next CTA on the SM waits for them forever")
        left = [i for ids in self.uncommitted.values() for i in ids]
        if left:
            raise KernelRuntimeError(f"the block ends with {self.ops[left[0]]} never committed (wb.tcgen05_commit) "
                                     "nor waited for")


def tmem_state(bs) -> TmemState:
    """The block's TMEM (the CPU executor's ``_BS``), made on first use."""
    st = bs.get("tmem")
    if st is None:
        st = bs["tmem"] = TmemState()
    return st


def thread_id(tx, ty, tz, bdx, bdy):
    return tx + bdx * (ty + bdy * tz)


# -- the instructions ------------------------------------------------------------------------------------------
class TmemAlloc(ir.Instruction):
    """``tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [dst], ncols``: the warp allocates ``ncols``
    columns and the address (lane 0, first column) is written to the shared Uint32 at dst."""

    __slots__ = ("buf", "off", "ncols")
    threads = 32

    def __init__(self, buf, off, ncols):
        self.buf, self.off, self.ncols = buf, off, ncols

    def describe(self):
        return f"tcgen05.alloc of {self.ncols} columns"

    def cuda(self, em, d):
        em.w(d, f'asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], {self.ncols};\\n" :: '
                f'"r"({saddr(self.buf, self.off)}) : "memory");')

    def python(self, em, d):
        em.w(d, f"yield _Collective({em.collective(self)}, (_tmem(_BS), {self.buf.name}, {pyexpr(self.off)}))")

    def emulate(self, lanes):
        st, arr, off = lanes[0]
        arr[off] = st.allocate(self.ncols, self.line)
        return [None] * len(lanes)


class TmemDealloc(ir.Instruction):
    """``tcgen05.dealloc.cta_group::1.sync.aligned.b32 taddr, ncols``: the warp frees an allocation."""

    __slots__ = ("addr", "ncols")
    threads = 32

    def __init__(self, addr, ncols):
        self.addr, self.ncols = addr, ncols

    def describe(self):
        return f"tcgen05.dealloc of {self.ncols} columns"

    def cuda(self, em, d):
        em.w(d, f'asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, {self.ncols};\\n" :: '
                f'"r"((unsigned)({expr(self.addr)})) : "memory");')

    def python(self, em, d):
        em.w(d, f"yield _Collective({em.collective(self)}, (_tmem(_BS), {pyexpr(self.addr)}))")

    def emulate(self, lanes):
        st, addr = lanes[0]
        if any(op[1] != addr for op in lanes):
            raise ValueError(f"tcgen05.dealloc (line {self.line}): the lanes of the warp pass different addresses "
                             f"({sorted({op[1] for op in lanes})}); .sync.aligned needs one")
        st.free(addr, self.ncols, self.line)
        return [None] * len(lanes)


class TmemRelinquish(ir.Instruction):
    """``tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned``: this CTA allocates no more."""

    __slots__ = ()
    threads = 32

    def describe(self):
        return "tcgen05.relinquish_alloc_permit"

    def cuda(self, em, d):
        em.w(d, 'asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\\n" ::: "memory");')

    def python(self, em, d):
        em.w(d, f"yield _Collective({em.collective(self)}, (_tmem(_BS),))")

    def emulate(self, lanes):
        lanes[0][0].alloc.release_allocation_lock()
        return [None] * len(lanes)


for _c in (TmemAlloc, TmemDealloc, TmemRelinquish):
    _c.cpu_helpers = {"_tmem": tmem_state}


def _ncols(n, what):
    if type(n) is not int or n < 32 or n > 512 or n & (n - 1):
        raise ValueError(f"{what}: expected a static number of columns, a power of two in 32..512 (tcgen05.alloc's "
                         f"rule), but got {n!r}.")
    return n


@builtin
def tmem_alloc(cx, holder, ncols):
    """``tcgen05.alloc`` (warp-wide: all 32 lanes of one warp call it): allocate ``ncols`` TMEM columns (a power of two,
    32..512) and write their address to ``holder[0]``, a shared ``wb.Uint32`` tensor; read it after a
    ``wb.tcgen05_fence_before()`` / ``wb.sync_threads()`` / ``wb.tcgen05_fence_after()``.  Blackwell only: compiled for
    sm_100a, emulated by the CPU executor; no Blackwell GPU is lent here, so it has never run on one."""
    if type(holder) is not KTensor or holder.buf.space != "smem" or holder.etype.bits != 32:
        raise TypeError(f"tmem_alloc: expected the address's place as a shared tensor of wb.Uint32 "
                        f"(wb.shared_tensor(wb.Uint32, 1)), but got {holder if type(holder) is KTensor else type(holder).__name__}.")
    cx.require_arch(100, f"tcgen05 (Blackwell tensor memory; {NO_BLACKWELL})")
    cx.uses_collectives()
    cx.emit(TmemAlloc(holder.buf, ir.as_expr(holder.offset_of(0)), _ncols(ncols, "tmem_alloc")))
    cx.mark_written(holder.buf)


@builtin
def tmem_dealloc(cx, addr, ncols):
    """``tcgen05.dealloc`` (warp-wide): free the ``ncols`` columns allocated at ``addr`` (what tmem_alloc wrote), after
    every MMA writing them completed.  Compiled for sm_100a, emulated on the CPU; never run on a Blackwell GPU here."""
    cx.scalar(addr, "a TMEM address")
    cx.require_arch(100, f"tcgen05 (Blackwell tensor memory; {NO_BLACKWELL})")
    cx.uses_collectives()
    cx.emit(TmemDealloc(ir.cast(ir.as_expr(addr, ir.Uint32), ir.Uint32), _ncols(ncols, "tmem_dealloc")))


@builtin
def tmem_relinquish_alloc_permit(cx):
    """``tcgen05.relinquish_alloc_permit`` (warp-wide): this CTA allocates no more TMEM, so that others on the SM may.
    Compiled for sm_100a, emulated on the CPU; never run on a Blackwell GPU here."""
    cx.require_arch(100, f"tcgen05 (Blackwell tensor memory; {NO_BLACKWELL})")
    cx.uses_collectives()
    cx.emit(TmemRelinquish())


_TMEM_BUFS: dict = {}


def tmem_buffer(etype) -> ir.Buffer:
    """The pseudo-buffer every kernel TMEM tensor of etype views (space 'tmem': never declared, never indexed; only
    the tcgen05 op modules read its views' offsets, which are TMEM addresses in units of etype)."""
    b = _TMEM_BUFS.get(etype)
    if b is None:
        b = _TMEM_BUFS[etype] = ir.Buffer("tmem", etype, "tmem", 16)
    return b


def tmem_view(t):
    """(value bits, element offset expression, layout) of a kernel TMEM tensor, or None for other tensors."""
    if type(t) is KTensor and t.buf.space == "tmem":
        return t.etype.bits, t.offset, t.layout
    return None


@builtin
def make_tmem_tensor(cx, addr, layout):
    """The TMEM tensor at ``addr`` (an address tmem_alloc wrote: lane << 16 | column) laid out as ``layout``, a host
    TMEM tensor such as ``atom.make_fragment_C(atom.partition_shape_C((M, N)))`` (CuTe DSL's
    ``cute.make_tensor(tmem_ptr, layout)``).  Partition it (``thr_copy.partition_S``) and copy it to registers with
    a TMEM copy atom; it is never indexed element by element."""
    if type(layout) is not TmemTensor:
        raise TypeError(f"make_tmem_tensor: expected a TMEM layout (a host TmemTensor: atom.make_fragment_C(...)), but "
                        f"got {type(layout).__name__}.")
    cx.scalar(addr, "a TMEM address")
    per = 32 // layout.value_type.bits          # values a 32-bit column holds: offsets are in units of the value
    a = cx.bind(ir.cast(ir.as_expr(addr, ir.Uint32), ir.Int32), "taddr")
    off = ir.binop("+", ir.binop("*", a, per), layout.offset + per * layout.base)
    return KTensor(tmem_buffer(layout.value_type), off, layout.layout)
