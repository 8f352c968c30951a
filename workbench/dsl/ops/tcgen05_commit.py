"""``tcgen05.commit`` (``wb.tcgen05_commit(bars, i, cta_group=1, multicast=None)``, CuTe DSL's
``tcgen05.commit``/``umma_arrive``): the asynchronous tcgen05 operations this thread issued since its last commit (its
``tcgen05.mma``, ``tcgen05.cp``) arrive once, together, on mbarrier ``bars[i]`` when they have completed; the mbarrier
counts it as one arrival.  Issued by the thread that issued the MMAs.  Compiled for sm_100a (NVRTC, in the tests) and
emulated by the CPU executor; no Blackwell GPU is lent here, so it has never run on one.

What this module relies on, from the PTX ISA's tcgen05.commit section (ISA 8.7 and 9.x say the same) and
CUTLASS 4.2's ``cutlass/arch/barrier.h`` (``umma_arrive``, ``umma_arrive_2x1SM``, ``umma_arrive_multicast``,
``umma_arrive_multicast_2x1SM``):

* "tcgen05.commit.cta_group::2 tracks for the completion of all prior asynchronous tcgen05 operations with
  .cta_group::2 issued by the current thread" (so the pair MMA's commit is issued by the leader's issuing thread);
  the pairing is ``tcgen05.mma.cta_group::N -> tcgen05.commit.cta_group::N`` (same N), and a kernel uses one N;
* ``.mbarrier::arrive::one``: one arrive-on, count 1, at cluster scope;
* ``.multicast::cluster`` with a 16-bit ``ctaMask``: "each bit position ... corresponds to the %cluster_ctarank of the
  destination CTA. The mbarrier signal is multicast to the same offset as mbar in the shared memory of each destination
  CTA" (``multicast=0b11``: the same mbarrier in both CTAs of a pair, CUTLASS's 2-SM pipelines' release);
* without multicast the mbarrier is this CTA's (CUTLASS passes a ``shared::cta`` address as the ``shared::cluster``
  operand: the executing CTA's window).  Arriving on another CTA's mbarrier without multicast (a ``mapa`` address) is
  not offered: use ``multicast=1 << rank``.

CPU semantics: the operations are handed to the block's :class:`~workbench.dsl.ops.tcgen05_alloc.TmemState`, which
completes them (their TMEM cells become readable, in both CTAs for a pair MMA, then one arrival on each destination
mbarrier) only when no thread of the cluster can move otherwise: a thread that reads the accumulator without waiting
on the mbarrier reads it before it lands, which is reported.
"""

from __future__ import annotations

from .. import ir
from ..backends.cpu import KernelRuntimeError
from ..backends.cuda import saddr
from ..builtins import builtin
from .mbarrier import bar_key, bar_operand, mb_arrive, mb_index, peer
from .tcgen05_alloc import NO_BLACKWELL, tcgen05_cta_group, thread_id, tmem_state


class Tcgen05Commit(ir.Instruction):
    """``tcgen05.commit.cta_group::{1|2}.mbarrier::arrive::one.shared::cluster[.multicast::cluster].b64 [bar][, mask]``."""

    __slots__ = ("bar_buf", "bar_off", "cta_group", "multicast")

    def __init__(self, bar_buf, bar_off, cta_group=1, multicast=None):
        self.bar_buf, self.bar_off, self.cta_group, self.multicast = bar_buf, bar_off, cta_group, multicast

    def describe(self):
        return f"tcgen05.commit (line {self.line})"

    def cuda(self, em, d):
        g = self.cta_group
        if self.multicast is None:
            em.w(d, f'asm volatile("tcgen05.commit.cta_group::{g}.mbarrier::arrive::one.shared::cluster.b64 [%0];\\n" :: '
                    f'"r"({saddr(self.bar_buf, self.bar_off)}) : "memory");')
        else:
            em.w(d, f'asm volatile("tcgen05.commit.cta_group::{g}.mbarrier::arrive::one.shared::cluster.multicast::cluster'
                    f'.b64 [%0], %1;\\n" :: "r"({saddr(self.bar_buf, self.bar_off)}), '
                    f'"h"((unsigned short){self.multicast}) : "memory");')

    def python(self, em, d):
        if self.multicast is None:
            dest = "(_MB,)"
        else:
            ranks = tuple(r for r in range(16) if self.multicast >> r & 1)
            dest = "(" + "".join(f"_peer(_CMB, {r}), " for r in ranks) + ")"
        em.w(d, f"_tc_commit(_tmem(_BS), {dest}, {bar_key(self)}, _thread_id(_tx, _ty, _tz, _bdx, _bdy), {self.line})")


def _tc_commit(st, mbs, key, thread, line):
    for mb in mbs:
        if key not in mb:
            raise KernelRuntimeError(f"tcgen05.commit (line {line}) on mbarrier {key[0]}[{key[1]}], which no thread "
                                     f"{'of a destination CTA ' if len(mbs) > 1 else ''}initialized (wb.mbarrier_init "
                                     "before use; a multicast commit's mbarrier in every CTA of its mask)")
    st.arrive = mb_arrive
    st.commit(thread, [(mb, key) for mb in mbs])


Tcgen05Commit.cpu_helpers = {"_tc_commit": _tc_commit, "_tmem": tmem_state, "_thread_id": thread_id, "_mb_ix": mb_index,
                             "_peer": peer}


@builtin
def tcgen05_commit(cx, bars, i, cta_group=1, multicast=None):
    """``tcgen05.commit``: the tcgen05.mma this thread issued since its last commit arrive on mbarrier ``bars[i]`` (one
    arrival) once complete; wait for it (``wb.mbarrier_wait``) before reading their accumulators.  ``cta_group=2``: the
    commit of a CTA pair's MMAs (issued by the leader's thread that issued them; the kernel's tcgen05 instructions all
    have one cta_group).  ``multicast=mask`` (a static bit mask of cluster ranks): one arrival on ``bars[i]`` in each
    CTA the mask names (``0b11``: both CTAs of the pair).  Blackwell only: compiled for sm_100a, emulated by the CPU
    executor; no Blackwell GPU is lent here, so it has never run on one."""
    buf, off = bar_operand(bars, i, "tcgen05_commit")
    g = tcgen05_cta_group(cx, cta_group, "tcgen05_commit")
    if multicast is not None:
        n = cx.cluster[0] * cx.cluster[1] * cx.cluster[2]
        if type(multicast) is not int or not 0 < multicast < 1 << n:
            raise ValueError(f"tcgen05_commit: expected multicast as a static bit mask of the cluster's {n} block ranks "
                             f"(1 to {(1 << n) - 1}), but got {multicast!r}" + (
                                 "; the kernel has no cluster: declare one with @wb.kernel(cluster=(2, 1, 1))." if n == 1
                                 else "."))
    cx.require_arch(100, f"tcgen05.commit ({NO_BLACKWELL})")
    cx.uses_collectives()
    cx.emit(Tcgen05Commit(buf, off, g, multicast))
