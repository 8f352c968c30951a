"""``tcgen05.commit`` (``wb.tcgen05_commit(bars, i)``, CuTe DSL's ``tcgen05.commit``/``umma_arrive``): the
asynchronous tcgen05 operations this thread issued since its last commit (its ``tcgen05.mma``) arrive once, together,
on mbarrier ``bars[i]`` when they have completed; the mbarrier counts it as one arrival.  Issued by the thread that
issued the MMAs.  Compiled for sm_100a (NVRTC, in the tests) and emulated by the CPU executor; no Blackwell GPU is lent
here, so it has never run on one.

CPU semantics: the operations are handed to the block's :class:`~workbench.dsl.ops.tcgen05_alloc.TmemState`, which
completes them (their TMEM cells become readable, then the arrival) only when no thread of the block can move
otherwise: a thread that reads the accumulator without waiting on the mbarrier reads it before it lands, which is
reported.
"""

from __future__ import annotations

from .. import ir
from ..backends.cpu import KernelRuntimeError
from ..backends.cuda import saddr
from ..builtins import builtin
from .mbarrier import bar_key, bar_operand, mb_arrive, mb_index
from .tcgen05_alloc import NO_BLACKWELL, thread_id, tmem_state


class Tcgen05Commit(ir.Instruction):
    """``tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar]``."""

    __slots__ = ("bar_buf", "bar_off")

    def __init__(self, bar_buf, bar_off):
        self.bar_buf, self.bar_off = bar_buf, bar_off

    def describe(self):
        return f"tcgen05.commit (line {self.line})"

    def cuda(self, em, d):
        em.w(d, f'asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];\\n" :: '
                f'"r"({saddr(self.bar_buf, self.bar_off)}) : "memory");')

    def python(self, em, d):
        em.w(d, f"_tc_commit(_tmem(_BS), _MB, {bar_key(self)}, _thread_id(_tx, _ty, _tz, _bdx, _bdy))")


def _tc_commit(st, mb, key, thread):
    if key not in mb:
        raise KernelRuntimeError(f"tcgen05.commit on mbarrier {key[0]}[{key[1]}], which no thread initialized "
                                 "(wb.mbarrier_init before use)")
    st.arrive = mb_arrive
    st.commit(thread, mb, key)


Tcgen05Commit.cpu_helpers = {"_tc_commit": _tc_commit, "_tmem": tmem_state, "_thread_id": thread_id, "_mb_ix": mb_index}


@builtin
def tcgen05_commit(cx, bars, i):
    """``tcgen05.commit``: the tcgen05.mma this thread issued since its last commit arrive on mbarrier ``bars[i]`` (one
    arrival) once complete; wait for it (``wb.mbarrier_wait``) before reading their accumulators.  Blackwell only:
    compiled for sm_100a, emulated by the CPU executor; no Blackwell GPU is lent here, so it has never run on one."""
    buf, off = bar_operand(bars, i, "tcgen05_commit")
    cx.require_arch(100, f"tcgen05.commit ({NO_BLACKWELL})")
    cx.uses_collectives()
    cx.emit(Tcgen05Commit(buf, off))
