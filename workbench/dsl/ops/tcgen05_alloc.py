"""Blackwell tensor memory allocation (``tcgen05.alloc`` / ``dealloc`` / ``relinquish_alloc_permit``):
``wb.tmem_alloc(holder, ncols, cta_group=1)``, ``wb.tmem_dealloc(addr, ncols, cta_group=1)``,
``wb.tmem_relinquish_alloc_permit(cta_group=1)`` (CuTe DSL's ``cute.arch.alloc_tmem`` / ``dealloc_tmem`` /
``relinquish_tmem_alloc_permit``; CuTe C++'s ``TMEM::Allocator1Sm`` / ``Allocator2Sm``), and
``wb.make_tmem_tensor(addr, tmem_layout)``: the TMEM tensor at an allocated address in a kernel (CuTe DSL's
``cute.make_tensor(tmem_ptr, layout)``), e.g. ``atom.make_fragment_C(atom.partition_shape_C((M, N)))`` made on the
host.  Each of the three is warp-wide (``.sync.aligned``): every lane of one warp executes it.

``cta_group=2`` (the CTA pair of a 2-SM UMMA, ``tcgen05.*.cta_group::2``) is what this module relies on, from the PTX
ISA (9.7.16.5 Issue Granularity, 9.7.16.5.1 CTA Pair, 9.7.16.7.1 tcgen05.alloc) and CUTLASS 4.2's
``cute/arch/tmem_allocator_sm100.hpp`` (``Allocator2Sm``):

* the two CTAs whose ``%cluster_ctarank`` differ in the last bit form a pair (even and odd); the kernel needs a
  cluster of an even number of CTAs (``@wb.kernel(cluster=(2, 1, 1))``);
* one warp of each CTA of the pair performs the operation collectively: "the first warp to perform the operation
  could block until the second warp in the Peer CTA also performs the operation" (PTX); CuTe's preconditions: the
  two warps have the same warp index in their CTAs and pass the exact same ``dst`` (the holder's shared offset);
* the allocation is of the same columns in both CTAs' tensor memory (both CTAs' accumulator halves live at one
  address: the pair's MMA takes one ``[d]``), and the address is written to ``dst`` in each CTA;
* "All tcgen05 instructions within a kernel must specify the same value for the .cta_group qualifier" (PTX): a kernel
  mixing 1 and 2 is refused while tracing.

Compiled for sm_100a (NVRTC, in the tests) and emulated by the CPU executor; no Blackwell GPU is lent here, so no
tcgen05 kernel has run on one.

CPU semantics: each block has a :class:`TmemState` (its ``_BS['tmem']``): 128 lanes x 512 columns of 32-bit cells,
the allocator of ``workbench.atoms.tmem.TmemAllocator`` (a power of two of 32..512 columns, placed at the lowest
free multiple of its size: read the address, never assume it), and the asynchronous tcgen05 work in flight (the
MMAs of ``tcgen05_mma.py`` until the mbarrier of their ``tcgen05.commit`` completes; a pair MMA's cells in both
CTAs).  Columns still allocated when the block ends are reported (a leak: the next CTA on the SM would block in its
alloc).  A ``cta_group=2`` operation is a rendezvous of the two CTAs' warps (:class:`PairState`): the first warp
waits (blocks) until the peer CTA's warp with the same index performs the same operation with the same operands,
then both go on; a peer that never does is reported as the hang it would be on the GPU, different operands
(columns, holder offset, address) as an error.
"""

from __future__ import annotations

import itertools

import numpy as np

from ...atoms.tmem import TMEM_COLUMNS, TMEM_LANES, TmemAllocator, TmemTensor
from .. import ir
from ..backends.cpu import BlockState, KernelRuntimeError, pyexpr
from ..backends.cuda import expr, saddr
from ..builtins import builtin
from ..views import KTensor

NO_BLACKWELL = ("compiled for sm_100a, emulated by the CPU executor; no Blackwell GPU is lent here, so it has never "
                "run on one")


_IDS = itertools.count(1)     # asynchronous operation ids, unique across blocks (a pair MMA marks cells in two CTAs)


class TmemState(BlockState):
    """One block's tensor memory on the CPU executor: ``cells`` (128 x 512 uint32), ``pending`` (the id of the
    asynchronous operation whose result a cell awaits, 0 when the cell is final), the allocator, and the
    asynchronous operations: issued by a thread and not yet committed (``uncommitted``: thread -> ids), committed
    and not yet complete (``inflight``: [(ids, [(mbarrier state, key) it arrives on])]); ``remote``: id -> the other
    blocks' states whose cells a pair operation (cta_group::2) issued here writes."""

    def __init__(self):
        self.cells = np.zeros((TMEM_LANES, TMEM_COLUMNS), np.uint32)
        self.pending = np.zeros((TMEM_LANES, TMEM_COLUMNS), np.int64)
        self.alloc = TmemAllocator(1)
        self.alloc_lines: dict = {}     # first column -> line of its tcgen05.alloc
        self.ops: dict = {}             # async id -> what it is (for errors)
        self.issued_by: dict = {}       # async id -> the thread that issued it
        self.uncommitted: dict = {}     # thread -> [async ids]
        self.inflight: list = []        # [(ids, [(mbarrier dict, key)])] in commit order
        self.committed: set = set()     # ids whose commit was issued (here or, for a pair MMA, by the peer)
        self.remote: dict = {}          # id -> [TmemState of the peer CTA] (a pair MMA's other half)
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

    def free(self, addr, ncols, line, check_only=False):
        col = addr & 0xFFFF
        if self.alloc.allocations.get(col) == ncols and not addr >> 16:
            busy = self.pending[:, col:col + ncols]
            if busy.any():
                raise KernelRuntimeError(f"tcgen05.dealloc (line {line}) of columns {col}..{col + ncols - 1} while "
                                         f"{self.ops[int(busy[busy != 0][0])]} still writes them: wait on the mbarrier of "
                                         "its wb.tcgen05_commit first")
        if check_only:
            if self.alloc.allocations.get(col) != ncols or addr >> 16:
                raise KernelRuntimeError(f"tcgen05.dealloc (line {line}): no allocation of {ncols} columns starts at "
                                         f"0x{addr:08x}; allocations (column, size): {sorted(self.alloc.allocations.items())}")
            return
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
        i = next(_IDS)
        self.ops[i] = what
        self.issued_by[i] = thread
        self.uncommitted.setdefault(thread, []).append(i)
        return i

    def mark_remote(self, i, other, lanes, cols):
        """Operation i (issued here) also writes cells of another block's TMEM (a pair MMA's peer half)."""
        other.ops[i] = self.ops[i]
        other.pending[lanes, cols] = i
        self.remote.setdefault(i, []).append(other)

    def commit(self, thread, arrivals):
        """tcgen05.commit: the operations ``thread`` issued since its last commit arrive, once done, on each of
        ``arrivals`` [(mbarrier dict, key)] (one mbarrier, or each CTA of a multicast mask)."""
        ids = self.uncommitted.pop(thread, [])
        for i in ids:
            self.committed.add(i)
            for other in self.remote.get(i, ()):
                other.committed.add(i)
        self.inflight.append((ids, arrivals))

    def read(self, lanes, cols, what):
        """A thread reads cells: each must be final (its writer's commit completed)."""
        p = self.pending[lanes, cols]
        if p.any():
            j = int(np.flatnonzero(p)[0])
            op = self.ops[int(p.flat[j])]
            state = ("the mbarrier phase of its wb.tcgen05_commit has not completed" if int(p.flat[j]) in self.committed
                     else "no wb.tcgen05_commit covers it yet")
            raise KernelRuntimeError(f"{what} reads TMEM lane {int(np.asarray(lanes).flat[j])}, column "
                                     f"{int(np.asarray(cols).flat[j])} before {op} wrote it: {state} (wb.tcgen05_commit "
                                     "on an mbarrier, then wb.mbarrier_wait on it before reading the accumulator)")

    def progress(self):
        if not self.inflight:
            return False
        for ids, arrivals in self.inflight:   # the tensor core finishes them in order
            if ids:
                for st in [self] + [o for i in ids for o in self.remote.get(i, ())]:
                    st.pending[np.isin(st.pending, ids)] = 0
            for mb, key in arrivals:
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


# -- the CTA pair (cta_group::2): a rendezvous of one warp of each CTA ------------------------------------------------
class PairState(BlockState):
    """The two CTAs of a pair on the CPU executor (one object in both blocks' ``_BS['tmem_pair']``): each
    ``cta_group::2`` alloc/dealloc/relinquish of warp w of one CTA is matched, in program order, with the same of warp
    w of the peer CTA; when both have arrived, the operation is carried out on both CTAs' tensor memory.  A side that
    never gets its match spins forever: the scheduler's hang report names it ("1 of 2 arrivals")."""

    def __init__(self):
        self.entries: dict = {}     # (kind, warp) -> [entry: {'line', 'done', side -> operands}]
        self.seq: dict = {}         # (kind, warp, side) -> how many this side has issued

    def arrive(self, kind, warp, side, operands, line, perform):
        lst = self.entries.setdefault((kind, warp), [])
        n = self.seq.get((kind, warp, side), 0)
        self.seq[(kind, warp, side)] = n + 1
        if n == len(lst):
            lst.append({"line": line, "done": False})
        e = lst[n]
        e[side] = operands
        if 0 in e and 1 in e:
            perform(e[0], e[1])
            e["done"] = True
        return e


def pair_state(cbs, rank) -> PairState:
    """The pair of block ``rank`` of the cluster (its states ``cbs``, by rank), made on first use."""
    lead = rank & ~1
    if lead + 1 >= len(cbs):
        raise KernelRuntimeError(f"block rank {rank} has no peer CTA in a cluster of {len(cbs)} blocks (a CTA pair is "
                                 "ranks 2k and 2k+1)")
    st = cbs[lead].get("tmem_pair")
    if st is None:
        st = cbs[lead]["tmem_pair"] = cbs[lead + 1]["tmem_pair"] = PairState()
    return st


def _rendezvous(node, kind, lanes, perform):
    """A pair operation's warp arriving: [the entry each lane waits on, until its 'done']; its mbarrier-shaped wait
    key and state in the block's _MB (so that a peer that never comes is reported as "1 of 2 arrivals")."""
    rank, cbs, mb, thread = lanes[0][1:5]
    operands = lanes[0][5:]
    warp = thread // 32
    e = pair_state(cbs, rank).arrive(kind, warp, rank & 1, (tmem_state(cbs[rank]),) + tuple(operands), node.line, perform)
    key = (f"{kind}.cta_group::2 of warp {warp} (the peer CTA's warp {warp} must perform it too)", node.line)
    mb[key] = [2, 0, 0, 1] if e["done"] else [2, 1, 0, 0]
    mb["_epoch"] = mb.get("_epoch", 0) + 1
    return [(e, key)] * len(lanes)


def _pair_done(ticket):
    return ticket[0]["done"]


_PAIR_ARGS = "_RANK, _CBS, _MB, _thread_id(_tx, _ty, _tz, _bdx, _bdy)"


def _pair_python(node, em, d, operands):
    em.w(d, f"_pt = yield _Collective({em.collective(node)}, (_tmem(_BS), {_PAIR_ARGS}{operands}))")
    em.w(d, "while not _pair_done(_pt):")
    em.w(d + 1, f"yield _Spin({node.line}, _pt[1])")


# -- the instructions ------------------------------------------------------------------------------------------
class TmemAlloc(ir.Instruction):
    """``tcgen05.alloc.cta_group::{1|2}.sync.aligned.shared::cta.b32 [dst], ncols``: the warp allocates ``ncols``
    columns and the address (lane 0, first column) is written to the shared Uint32 at dst (cta_group 2: with one warp
    of the peer CTA, the same columns in both CTAs, the address written to dst in each)."""

    __slots__ = ("buf", "off", "ncols", "cta_group")
    threads = 32

    def __init__(self, buf, off, ncols, cta_group=1):
        self.buf, self.off, self.ncols, self.cta_group = buf, off, ncols, cta_group

    def describe(self):
        return f"tcgen05.alloc.cta_group::{self.cta_group} of {self.ncols} columns"

    def cuda(self, em, d):
        em.w(d, f'asm volatile("tcgen05.alloc.cta_group::{self.cta_group}.sync.aligned.shared::cta.b32 [%0], '
                f'{self.ncols};\\n" :: "r"({saddr(self.buf, self.off)}) : "memory");')

    def python(self, em, d):
        if self.cta_group == 2:
            _pair_python(self, em, d, f", '{self.buf.name}', {self.buf.name}, {pyexpr(self.off)}")
        else:
            em.w(d, f"yield _Collective({em.collective(self)}, (_tmem(_BS), {self.buf.name}, {pyexpr(self.off)}))")

    def emulate(self, lanes):
        if self.cta_group == 1:
            st, arr, off = lanes[0]
            arr[off] = st.allocate(self.ncols, self.line)
            return [None] * len(lanes)

        def perform(even, odd):
            (st0, name0, arr0, off0), (st1, name1, arr1, off1) = even, odd
            if (name0, off0) != (name1, off1):
                raise ValueError(f"tcgen05.alloc.cta_group::2 (line {self.line}): the two CTAs of the pair pass different "
                                 f"holders ({name0}[{off0}] and {name1}[{off1}]); CuTe's Allocator2Sm: both CTAs must "
                                 "provide the exact same dst_ptr")
            try:
                a0 = st0.allocate(self.ncols, self.line)
                a1 = st1.allocate(self.ncols, self.line)
            except KernelRuntimeError as e:
                raise ValueError(str(e)) from None
            if a0 != a1:
                raise ValueError(f"tcgen05.alloc.cta_group::2 (line {self.line}): the pair's columns differ between its "
                                 f"CTAs (0x{a0:08x}, 0x{a1:08x}): their earlier allocations differ")
            arr0[off0], arr1[off1] = a0, a1
        return _rendezvous(self, "tcgen05.alloc", lanes, perform)


class TmemDealloc(ir.Instruction):
    """``tcgen05.dealloc.cta_group::{1|2}.sync.aligned.b32 taddr, ncols``: the warp frees an allocation (cta_group 2:
    with one warp of the peer CTA, in both CTAs)."""

    __slots__ = ("addr", "ncols", "cta_group")
    threads = 32

    def __init__(self, addr, ncols, cta_group=1):
        self.addr, self.ncols, self.cta_group = addr, ncols, cta_group

    def describe(self):
        return f"tcgen05.dealloc.cta_group::{self.cta_group} of {self.ncols} columns"

    def cuda(self, em, d):
        em.w(d, f'asm volatile("tcgen05.dealloc.cta_group::{self.cta_group}.sync.aligned.b32 %0, {self.ncols};\\n" :: '
                f'"r"((unsigned)({expr(self.addr)})) : "memory");')

    def python(self, em, d):
        if self.cta_group == 2:
            _pair_python(self, em, d, f", {pyexpr(self.addr)}")
        else:
            em.w(d, f"yield _Collective({em.collective(self)}, (_tmem(_BS), {pyexpr(self.addr)}))")

    def emulate(self, lanes):
        addr = lanes[0][-1]
        if any(op[-1] != addr for op in lanes):
            raise ValueError(f"tcgen05.dealloc (line {self.line}): the lanes of the warp pass different addresses "
                             f"({sorted({op[-1] for op in lanes})}); .sync.aligned needs one")
        if self.cta_group == 1:
            lanes[0][0].free(addr, self.ncols, self.line)
            return [None] * len(lanes)

        def perform(even, odd):
            (st0, a0), (st1, a1) = even, odd
            if a0 != a1:
                raise ValueError(f"tcgen05.dealloc.cta_group::2 (line {self.line}): the two CTAs of the pair free different "
                                 f"addresses (0x{a0:08x}, 0x{a1:08x})")
            try:
                for st in (st0, st1):            # both checked before either is freed
                    st.free(a0, self.ncols, self.line, check_only=True)
                for st in (st0, st1):
                    st.free(a0, self.ncols, self.line)
            except KernelRuntimeError as e:
                raise ValueError(str(e)) from None
        return _rendezvous(self, "tcgen05.dealloc", lanes, perform)


class TmemRelinquish(ir.Instruction):
    """``tcgen05.relinquish_alloc_permit.cta_group::{1|2}.sync.aligned``: this CTA (cta_group 2: the pair, with one
    warp of the peer CTA) allocates no more."""

    __slots__ = ("cta_group",)
    threads = 32

    def __init__(self, cta_group=1):
        self.cta_group = cta_group

    def describe(self):
        return f"tcgen05.relinquish_alloc_permit.cta_group::{self.cta_group}"

    def cuda(self, em, d):
        em.w(d, f'asm volatile("tcgen05.relinquish_alloc_permit.cta_group::{self.cta_group}.sync.aligned;\\n" ::: '
                '"memory");')

    def python(self, em, d):
        if self.cta_group == 2:
            _pair_python(self, em, d, "")
        else:
            em.w(d, f"yield _Collective({em.collective(self)}, (_tmem(_BS),))")

    def emulate(self, lanes):
        if self.cta_group == 1:
            lanes[0][0].alloc.release_allocation_lock()
            return [None] * len(lanes)

        def perform(even, odd):
            even[0].alloc.release_allocation_lock()
            odd[0].alloc.release_allocation_lock()
        return _rendezvous(self, "tcgen05.relinquish_alloc_permit", lanes, perform)


for _c in (TmemAlloc, TmemDealloc, TmemRelinquish):
    _c.cpu_helpers = {"_tmem": tmem_state, "_thread_id": thread_id, "_pair_done": _pair_done}


def tcgen05_cta_group(cx, cta_group, what):
    """The kernel's ``.cta_group`` (1 or 2), checked: the PTX ISA's "All tcgen05 instructions within a kernel must
    specify the same value for the .cta_group qualifier"; 2 needs a cluster of CTA pairs (an even number of CTAs)."""
    if cta_group not in (1, 2) or type(cta_group) is not int:
        raise ValueError(f"{what}: expected cta_group 1 (one CTA) or 2 (the CTA pair of a 2-SM UMMA), but got "
                         f"{cta_group!r}.")
    have = getattr(cx, "tcgen05_cta_group", None)
    if have is not None and have[0] != cta_group:
        raise ValueError(f"{what}: cta_group::{cta_group}, but {have[1]} in this kernel is cta_group::{have[0]}; the PTX "
                         "ISA: all tcgen05 instructions within a kernel must specify the same value for the .cta_group "
                         "qualifier.")
    if cta_group == 2:
        n = cx.cluster[0] * cx.cluster[1] * cx.cluster[2]
        if n % 2:
            raise ValueError(f"{what}: cta_group::2 works on the CTA pair (cluster ranks 2k and 2k+1), but the kernel's "
                             f"cluster is {cx.cluster} ({n} CTA{'s' if n > 1 else ''}); declare one of an even number of "
                             "CTAs, e.g. @wb.kernel(cluster=(2, 1, 1)).")
    if have is None:
        cx.tcgen05_cta_group = (cta_group, what)
    return cta_group


def _ncols(n, what):
    if type(n) is not int or n < 32 or n > 512 or n & (n - 1):
        raise ValueError(f"{what}: expected a static number of columns, a power of two in 32..512 (tcgen05.alloc's "
                         f"rule), but got {n!r}.")
    return n


@builtin
def tmem_alloc(cx, holder, ncols, cta_group=1):
    """``tcgen05.alloc`` (warp-wide: all 32 lanes of one warp call it): allocate ``ncols`` TMEM columns (a power of two,
    32..512) and write their address to ``holder[0]``, a shared ``wb.Uint32`` tensor; read it after a
    ``wb.tcgen05_fence_before()`` / ``wb.sync_threads()`` / ``wb.tcgen05_fence_after()``.  ``cta_group=2``: the CTA
    pair's allocation (CuTe's Allocator2Sm): the warp with the same index in each CTA of the pair calls it with the same
    holder, and the same columns are allocated in both CTAs.  Blackwell only: compiled for sm_100a, emulated by the
    CPU executor; no Blackwell GPU is lent here, so it has never run on one."""
    if type(holder) is not KTensor or holder.buf.space != "smem" or holder.etype.bits != 32:
        raise TypeError(f"tmem_alloc: expected the address's place as a shared tensor of wb.Uint32 "
                        f"(wb.shared_tensor(wb.Uint32, 1)), but got {holder if type(holder) is KTensor else type(holder).__name__}.")
    g = tcgen05_cta_group(cx, cta_group, "tmem_alloc")
    cx.require_arch(100, f"tcgen05 (Blackwell tensor memory; {NO_BLACKWELL})")
    cx.uses_collectives()
    cx.emit(TmemAlloc(holder.buf, ir.as_expr(holder.offset_of(0)), _ncols(ncols, "tmem_alloc"), g))
    cx.mark_written(holder.buf)


@builtin
def tmem_dealloc(cx, addr, ncols, cta_group=1):
    """``tcgen05.dealloc`` (warp-wide): free the ``ncols`` columns allocated at ``addr`` (what tmem_alloc wrote), after
    every MMA writing them completed; ``cta_group=2``: with the same warp of the peer CTA, in both CTAs (after the
    pair's last use of them: the PTX ISA's example meets at a cluster barrier first).  Compiled for sm_100a, emulated
    on the CPU; never run on a Blackwell GPU here."""
    cx.scalar(addr, "a TMEM address")
    g = tcgen05_cta_group(cx, cta_group, "tmem_dealloc")
    cx.require_arch(100, f"tcgen05 (Blackwell tensor memory; {NO_BLACKWELL})")
    cx.uses_collectives()
    cx.emit(TmemDealloc(ir.cast(ir.as_expr(addr, ir.Uint32), ir.Uint32), _ncols(ncols, "tmem_dealloc"), g))


@builtin
def tmem_relinquish_alloc_permit(cx, cta_group=1):
    """``tcgen05.relinquish_alloc_permit`` (warp-wide): this CTA (``cta_group=2``: the pair, with the same warp of the
    peer CTA) allocates no more TMEM, so that others on the SM may.  Compiled for sm_100a, emulated on the CPU; never
    run on a Blackwell GPU here."""
    g = tcgen05_cta_group(cx, cta_group, "tmem_relinquish_alloc_permit")
    cx.require_arch(100, f"tcgen05 (Blackwell tensor memory; {NO_BLACKWELL})")
    cx.uses_collectives()
    cx.emit(TmemRelinquish(g))


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
