"""mbarriers (``mbarrier.*``): ``wb.mbarrier_init(bars, i, count)``, ``wb.mbarrier_init_fence()``,
``wb.mbarrier_arrive(bars, i, cta=None)``, ``wb.mbarrier_arrive_and_expect_tx(bars, i, nbytes)``,
``wb.mbarrier_wait(bars, i, phase)`` on the mbarrier ``bars[i]`` of a shared ``Uint64`` tensor (CuTe DSL's
``cute.arch`` names).

CPU semantics: a block's mbarriers are ``_MB`` = {(buffer, offset): [expected arrivals, pending arrivals, bytes,
phase]}; an arrival or completed bytes (a TMA load, ``tma.py``) that leave nothing pending complete the phase; a
waiter spins (a :class:`~workbench.dsl.scheduling.Spin`), and a wait that can never complete is reported, not hung.
While tracing, the bytes each ``arrive_and_expect_tx`` announces are matched against the TMA loads issued on that
mbarrier after it in the same block of code (:class:`TxLedger`).
"""

from __future__ import annotations

from .. import ir
from ..backends.cpu import KernelRuntimeError, pyexpr
from ..backends.cuda import expr, saddr
from ..builtins import builtin, on_region_end
from ..scheduling import Spin
from ..views import KTensor
from .cluster import cluster_rank


def bar_key(s) -> str:
    """An mbarrier's identity in the block's mbarrier state, as Python source: (buffer name, element offset).  A
    run-time offset is checked against the buffer first (as a data tensor's index is): a GPU would touch whatever
    shared memory lies there."""
    if isinstance(s.bar_off, ir.Const):
        return f"('{s.bar_buf.name}', {pyexpr(s.bar_off)})"
    return f"('{s.bar_buf.name}', _mb_ix('{s.bar_buf.name}', {s.bar_buf.name}.shape[0], {pyexpr(s.bar_off)}))"


def mb_index(name, n, off):
    """A run-time mbarrier offset, checked against its buffer of n elements (the CPU executor's `_mb_ix`)."""
    if not 0 <= off < n:
        raise KernelRuntimeError(f"mbarrier index out of range: expected an mbarrier offset in [0, {n}) of shared buffer {name}, but got "
                                 f"{off}")
    return off


def expr_identity(e):
    """A hashable identity of an IR expression by structure (operators, constants, the very variables it reads),
    not by its printed text (which is '?' for every dynamic value)."""
    k = type(e)
    if k is ir.Const:
        return ("c", e.value, e.type.name)
    if k is ir.BinOp:
        return ("b", e.op, expr_identity(e.a), expr_identity(e.b))
    if k is ir.UnOp:
        return ("u", e.op, expr_identity(e.a))
    if k is ir.Cast:
        return ("t", e.type.name, expr_identity(e.a))
    if k is ir.Select:
        return ("s", expr_identity(e.c), expr_identity(e.a), expr_identity(e.b))
    if k is ir.Special:
        return ("sp", e.name)
    if k is ir.Load:
        return ("ld", e.buf.name, expr_identity(e.offset))
    if k is ir.Call:
        return ("f", str(e.fn), tuple(expr_identity(a) for a in e.args))
    if isinstance(e, ir.Expr):
        return ("id", id(e))        # a variable (or an instruction's result): that very one
    return ("py", e)


class MbarInit(ir.Instruction):
    """``mbarrier.init.shared::cta.b64``: the mbarrier at bar_buf[bar_off] expects ``count`` arrivals a phase."""

    __slots__ = ("bar_buf", "bar_off", "count")

    def __init__(self, bar_buf, bar_off, count):
        self.bar_buf, self.bar_off, self.count = bar_buf, bar_off, count

    def cuda(self, em, d):
        em.w(d, f'asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\\n" :: "r"({saddr(self.bar_buf, self.bar_off)}), '
                f'"r"((unsigned)({expr(self.count)})) : "memory");')

    def python(self, em, d):
        em.w(d, f"_mb_init(_MB, {bar_key(self)}, {pyexpr(self.count)})")


class MbarInitFence(ir.Instruction):
    """``fence.mbarrier_init.release.cluster``: initialized mbarriers become visible (the CPU executor's are at once)."""

    __slots__ = ()

    def cuda(self, em, d):
        em.w(d, 'asm volatile("fence.mbarrier_init.release.cluster;\\n" ::: "memory");')

    def python(self, em, d):
        pass


class MbarArrive(ir.Instruction):
    """``mbarrier.arrive[.expect_tx]``: one arrival at the mbarrier; ``tx`` (None or bytes) first raises the
    transaction count the phase also waits for (the bytes TMA loads will complete on it).  ``cta`` (None or an
    Int32 expression): the mbarrier at the same place in that block of the cluster (``mapa``)."""

    __slots__ = ("bar_buf", "bar_off", "tx", "cta")

    def __init__(self, bar_buf, bar_off, tx, cta=None):
        self.bar_buf, self.bar_off, self.tx, self.cta = bar_buf, bar_off, tx, cta

    def cuda(self, em, d):
        a = saddr(self.bar_buf, self.bar_off)
        if self.cta is not None:   # the same mbarrier in block `cta` of the cluster
            em.w(d, f'asm volatile("{{\\n.reg .b32 ra;\\nmapa.shared::cluster.u32 ra, %0, %1;\\n'
                    f'mbarrier.arrive.shared::cluster.b64 _, [ra];\\n}}\\n" :: "r"({a}), '
                    f'"r"((unsigned)({expr(self.cta)})) : "memory");')
        elif self.tx is None:
            em.w(d, f'asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\\n" :: "r"({a}) : "memory");')
        else:
            em.w(d, f'asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n" :: "r"({a}), '
                    f'"r"({self.tx}u) : "memory");')

    def python(self, em, d):
        mb = "_MB" if self.cta is None else f"_peer(_CMB, {pyexpr(self.cta)})"
        em.w(d, f"_mb_arrive({mb}, {bar_key(self)}, {self.tx or 0})")


class MbarWait(ir.Instruction):
    """``mbarrier.try_wait.parity`` in a loop: wait until the phase of parity ``phase`` has completed."""

    __slots__ = ("bar_buf", "bar_off", "phase")

    def __init__(self, bar_buf, bar_off, phase):
        self.bar_buf, self.bar_off, self.phase = bar_buf, bar_off, phase

    def cuda(self, em, d):   # try_wait suspends the thread for a while; loop until the phase has completed
        em.w(d, "for (unsigned _ok = 0; !_ok;) {")
        em.w(d + 1, f'asm volatile("{{\\n.reg .pred p;\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n'
                    f'selp.u32 %0, 1, 0, p;\\n}}\\n" : "=r"(_ok) : "r"({saddr(self.bar_buf, self.bar_off)}), '
                    f'"r"((unsigned)({expr(self.phase)})) : "memory");')
        em.w(d, "}")

    def python(self, em, d):   # spins: the scheduler runs the other threads until the phase completes
        em.w(d, f"while not _mb_done(_MB, {bar_key(self)}, {pyexpr(self.phase)}):")
        em.w(d + 1, f"yield _Spin({self.line}, {bar_key(self)})")


# -- mbarriers: a block's state is {(buffer, offset): [expected arrivals, pending arrivals, bytes, phase]} ---------
def _mb_state(mb, key, what):
    st = mb.get(key)
    if st is None:
        raise KernelRuntimeError(f"{what} on mbarrier {key[0]}[{key[1]}], which no thread initialized "
                                 "(wb.mbarrier_init before use)")
    return st


def _mb_check(mb, key, st):
    if st[1] == 0 and st[2] == 0:     # every arrival and every byte: the phase completes
        st[3] ^= 1
        st[1] = st[0]
    mb["_epoch"] = mb.get("_epoch", 0) + 1


def _mb_init(mb, key, count):
    if not 1 <= count < 1 << 20:       # PTX: the expected count is 1 to 2**20 - 1
        raise KernelRuntimeError(f"mbarrier_init: expected an arrival count in [1, 2**20), but got {count}")
    mb[key] = [count, count, 0, 0]
    mb["_epoch"] = mb.get("_epoch", 0) + 1


def _mb_arrive(mb, key, tx):
    st = _mb_state(mb, key, "mbarrier_arrive")
    if st[1] <= 0:
        raise KernelRuntimeError(f"more arrivals at mbarrier {key[0]}[{key[1]}] than the {st[0]} its phase expects")
    st[2] += tx
    st[1] -= 1
    _mb_check(mb, key, st)


def mb_arrive(mb, key):
    """One arrival on mbarrier key of a block's state mb by an asynchronous unit (a tcgen05.commit completing)."""
    _mb_arrive(mb, key, 0)


def mb_complete_tx(mb, key, nbytes):
    """nbytes of a TMA load land on mbarrier key of a block's state mb."""
    st = _mb_state(mb, key, "a TMA load")
    st[2] -= nbytes
    _mb_check(mb, key, st)


def _mb_done(mb, key, parity):
    """try_wait.parity: the phase of this parity has completed once the current phase's parity differs."""
    return _mb_state(mb, key, "mbarrier_wait")[3] != parity


def mb_describe(mb, key) -> str:
    """Where a phase that never completes stands, for the hang report: "1 of 2 arrivals" (and the announced bytes
    that have not landed)."""
    st = mb.get(key)
    if st is None:
        return "which no thread initialized"
    got = st[0] - st[1]
    text = f"whose phase never completes: {got} of {st[0]} arrival{'s' if st[0] != 1 else ''}"
    return text + (f", {st[2]} announced bytes not landed" if st[2] > 0 else "")


def peer(cluster, rank):
    """A block of the cluster by rank (its shared tensors or mbarriers), or the error a GPU would not give."""
    if not 0 <= rank < len(cluster):
        raise KernelRuntimeError(f"block rank {rank} is outside the cluster of {len(cluster)} blocks")
    return cluster[rank]


MbarInit.cpu_helpers = {"_mb_init": _mb_init, "_mb_ix": mb_index}
MbarArrive.cpu_helpers = {"_mb_arrive": _mb_arrive, "_peer": peer, "_mb_ix": mb_index}
MbarWait.cpu_helpers = {"_mb_done": _mb_done, "_mb_ix": mb_index}
Spin.describe_state = staticmethod(mb_describe)


# -- mbarriers ------------------------------------------------------------------------------------------
def bar_operand(bars, i, what):
    """(buffer, offset expression) of mbarrier bars[i]: a shared Uint64 tensor and an index (static ones checked)."""
    if type(bars) is not KTensor or bars.buf.space != "smem" or bars.etype.bits != 64:
        raise TypeError(f"{what}: expected the mbarriers as a shared tensor of wb.Uint64 (wb.shared_tensor(wb.Uint64, n)) "
                        f"and an index, but got {bars if type(bars) is KTensor else type(bars).__name__}.")
    n = bars.layout.size
    if type(i) is int and not 0 <= i < n:
        raise IndexError(f"{what}: mbarrier index {i} is outside the {n} mbarriers of {bars}.")
    return bars.buf, ir.as_expr(bars.offset_of(i))


def _static_or_expr(cx, v, what):
    cx.scalar(v, what)
    return ir.as_expr(v, ir.Int32)


@builtin
def mbarrier_init(cx, bars, i, count):
    """``mbarrier.init``: mbarrier ``bars[i]`` expects ``count`` arrivals a phase (one thread initializes it; then
    ``wb.mbarrier_init_fence()`` and ``wb.sync_threads()`` before any thread uses it)."""
    buf, off = bar_operand(bars, i, "mbarrier_init")
    if type(count) is int and not 1 <= count < 1 << 20:
        raise ValueError(f"mbarrier_init: expected an arrival count in [1, 2**20), but got {count}.")
    cx.require_arch(90, "mbarrier")
    cx.emit(MbarInit(buf, off, _static_or_expr(cx, count, "an arrival count")))
    cx.mark_written(buf)
    tx_ledger(cx).clear()


@builtin
def mbarrier_init_fence(cx):
    """``fence.mbarrier_init``: make the initialized mbarriers visible to the other threads and to the TMA."""
    cx.emit(MbarInitFence())


@builtin
def mbarrier_arrive(cx, bars, i, cta=None):
    """One arrival of this thread at ``bars[i]``; with ``cta=r``, at the mbarrier in the same place of block r of the
    cluster (CuTe DSL's ``peer_cta_rank_in_cluster``: a consumer releasing a stage a peer's multicast fills)."""
    buf, off = bar_operand(bars, i, "mbarrier_arrive")
    cx.require_arch(90, "mbarrier")
    cx.uses_collectives()
    rank = None
    if cta is not None:
        rank = cluster_rank(cx, cta, "mbarrier_arrive")
    cx.emit(MbarArrive(buf, off, None, rank))


@builtin
def mbarrier_arrive_and_expect_tx(cx, bars, i, nbytes):
    """One arrival at ``bars[i]`` that also makes its phase wait for ``nbytes`` more bytes (the TMA loads issued on
    it next, by this thread, in this block of code: their boxes must add up to nbytes, checked while tracing)."""
    buf, off = bar_operand(bars, i, "mbarrier_arrive_and_expect_tx")
    if type(nbytes) is not int or not 0 < nbytes < 1 << 20:
        raise ValueError(f"mbarrier_arrive_and_expect_tx: expected a static byte count in [1, 2**20) (the TMA boxes' "
                         f"bytes: tma.nbytes), but got {nbytes!r}.")
    cx.require_arch(90, "mbarrier")
    cx.uses_collectives()
    tx_ledger(cx).open(cx, (buf.name, expr_identity(off)), nbytes)
    cx.emit(MbarArrive(buf, off, nbytes))


@builtin
def mbarrier_wait(cx, bars, i, phase):
    """Wait until the phase of parity ``phase`` (0 or 1) of ``bars[i]`` has completed (every arrival and byte)."""
    buf, off = bar_operand(bars, i, "mbarrier_wait")
    if type(phase) is int and phase not in (0, 1):
        raise ValueError(f"mbarrier_wait: expected a phase parity 0 or 1, but got {phase}.")
    cx.require_arch(90, "mbarrier")
    cx.uses_collectives()
    cx.emit(MbarWait(buf, off, ir.binop("&", _static_or_expr(cx, phase, "a phase parity"), 1)))


class TxLedger:
    """The bytes an ``arrive_and_expect_tx`` announced and the TMA loads issued on that mbarrier after it, in the
    same block of code: they must match, or the phase never completes (a hang on the GPU)."""

    def __init__(self):
        self.open_tx: dict = {}     # (buffer, offset expr_identity) -> [announced, loaded, line, region]

    def clear(self):
        self.open_tx.clear()

    def open(self, cx, key, nbytes):
        self.close(cx, key)
        self.open_tx[key] = [nbytes, 0, getattr(cx.node, "lineno", 0), id(cx.out)]

    def load(self, cx, key, nbytes, what):
        e = self.open_tx.get(key)
        if e is None or e[3] != id(cx.out):
            raise ValueError(f"{what}: a TMA load completes its bytes on an mbarrier whose phase expects them: call "
                             f"wb.mbarrier_arrive_and_expect_tx on the same mbarrier (same index expression) just before, "
                             "in the same block of code.")
        e[1] += nbytes
        if e[1] > e[0]:
            raise ValueError(f"{what}: the TMA loads on this mbarrier move {e[1]} bytes, but arrive_and_expect_tx "
                             f"announced {e[0]}; announce the boxes' bytes (tma.nbytes each).")

    def close(self, cx, key=None):
        keys = [key] if key is not None else [k for k, e in self.open_tx.items() if e[3] == id(cx.out)]
        for k in keys:
            e = self.open_tx.pop(k, None)
            if e is not None and e[1] != e[0]:
                raise ValueError(f"mbarrier_arrive_and_expect_tx (line {e[2]}) announced {e[0]} bytes, but the TMA loads "
                                 f"on that mbarrier after it move {e[1]}: the phase would never complete (a hang on the "
                                 "GPU); announce exactly the boxes' bytes (tma.nbytes each).")


def tx_ledger(cx) -> TxLedger:
    led = getattr(cx, "tx_ledger", None)
    if led is None:
        led = cx.tx_ledger = TxLedger()
    return led


@on_region_end
def close_tx_ledger(cx):
    """End of a block of code (the frontend calls it): every announcement in it must be matched."""
    led = getattr(cx, "tx_ledger", None)
    if led is not None:
        led.close(cx)


