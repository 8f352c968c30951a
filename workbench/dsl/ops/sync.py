"""Block barriers: ``__syncthreads`` (``wb.sync_threads``) and named barriers ``bar.sync`` / ``bar.arrive``
(``wb.barrier``, ``wb.barrier_arrive``, CuTe DSL's ``cute.arch.barrier``/``barrier_arrive``).

CPU semantics: a thread yields a :class:`~workbench.dsl.scheduling.Sync`, ``Barrier`` or ``BarrierArrive``; the
scheduler releases a Sync when every live thread of the block waits at the same one, a Barrier when ``count``
threads have reached it or arrived, and lets an arriving thread go on at once.
"""

from __future__ import annotations

from .. import ir
from ..builtins import builtin


class SyncThreads(ir.Instruction):
    __slots__ = ()

    def cuda(self, em, d):
        em.w(d, "__syncthreads();")

    def python(self, em, d):
        em.w(d, f"yield _Sync({self.line})")


class NamedBarrier(ir.Instruction):
    """``bar.sync id, count``: the first ``count`` threads (whole warps) to arrive at barrier ``id`` (1-15) go on;
    ``arrive``: ``bar.arrive``, counted without waiting (a producer's signal to the threads that sync)."""

    __slots__ = ("id", "count", "arrive")

    def __init__(self, id_, count, arrive=False):
        self.id, self.count, self.arrive = id_, count, arrive

    def cuda(self, em, d):
        em.w(d, f'asm volatile("bar.{"arrive" if self.arrive else "sync"} {self.id}, {self.count};\\n" ::: "memory");')

    def python(self, em, d):
        em.w(d, f"yield _{'BarrierArrive' if self.arrive else 'Barrier'}({self.id}, {self.count}, {self.line})")


@builtin
def sync_threads(cx):
    """Barrier for the threads of a block (__syncthreads).  Every thread of the block must reach
    it (the CPU executor reports divergent barriers)."""
    cx.uses_sync = True
    cx.emit(SyncThreads())


@builtin
def barrier(cx, barrier_id=0, number_of_threads=None):
    """CuTe DSL's ``cute.arch.barrier``: ``bar.sync barrier_id, number_of_threads``, a barrier for some warps of the
    block (a warpgroup of a warp-specialized kernel: ``wb.barrier(1, 128)``).  Barrier 0 without a count is
    ``sync_threads()``; named barriers are 1 to 15 and count whole warps."""
    cx.uses_sync = True
    if barrier_id == 0 and number_of_threads is None:
        cx.emit(SyncThreads())
        return None
    cx.emit(NamedBarrier(*_named_barrier(barrier_id, number_of_threads, "barrier")))


@builtin
def barrier_arrive(cx, barrier_id, number_of_threads):
    """CuTe DSL's ``cute.arch.barrier_arrive``: ``bar.arrive barrier_id, number_of_threads``: count this thread's
    warp at named barrier ``barrier_id`` without waiting; the barrier releases the threads that ``wb.barrier`` on
    it once ``number_of_threads`` have arrived or synced (one warpgroup telling another it may go on)."""
    cx.uses_sync = True
    cx.emit(NamedBarrier(*_named_barrier(barrier_id, number_of_threads, "barrier_arrive"), arrive=True))


def _named_barrier(barrier_id, number_of_threads, what):
    if type(barrier_id) is not int or not 1 <= barrier_id <= 15:
        raise ValueError(f"{what}: expected a static barrier_id from 1 to 15 (0 is sync_threads'), but got {barrier_id!r}.")
    if type(number_of_threads) is not int or number_of_threads % 32 or not 32 <= number_of_threads <= 1024:
        raise ValueError(f"{what}: expected number_of_threads as a static multiple of 32 up to 1024 (bar.sync counts "
                         f"warps), but got {number_of_threads!r}.")
    return barrier_id, number_of_threads
