"""What a thread of the CPU executor yields to the scheduler when it cannot go on alone: typed waits.

A thread is a Python generator (``backends/cpu.py``); an op module's CPU semantics yields one of these where the
hardware makes threads wait for each other, and the scheduler (``CompiledCPU._run_cluster``) releases it by the
rule its type documents.  Nothing else is yielded.
"""

from __future__ import annotations

from typing import NamedTuple


class Sync(NamedTuple):
    """``__syncthreads()`` at ``line``: released when every live thread of the block waits at the same one."""
    line: int


class Barrier(NamedTuple):
    """``bar.sync id, count``: released when ``count`` threads of the block (those waiting here plus those counted
    by a ``bar.arrive`` of the same id) have reached it."""
    id: int
    count: int
    line: int


class BarrierArrive(NamedTuple):
    """``bar.arrive id, count``: counted towards barrier ``id``'s current round; the thread goes on at once."""
    id: int
    count: int
    line: int


class ClusterBarrier(NamedTuple):
    """``barrier.cluster.arrive`` + ``wait``: released when every live thread of every block of the cluster waits."""
    line: int


class Collective(NamedTuple):
    """A warp- or warpgroup-wide instruction: the node is the emitter's ``collectives[index]``; carried out (its
    ``emulate``) once all ``node.threads`` threads of the group wait at it, each resuming with its result."""
    index: int
    operands: tuple


class Spin(NamedTuple):
    """A wait on an mbarrier ``key`` at ``line``: the thread re-checks it whenever anything else moved; when no
    thread can move and no mbarrier changed, the block would hang on a GPU, which is reported."""
    line: int
    key: tuple
    # where the mbarrier's phase stands, for the hang report ("1 of 2 arrivals"): set by ops/mbarrier.py, whose
    # state it reads (the backend does not import the op module)
    describe_state = None


WAITS = {"_Sync": Sync, "_Barrier": Barrier, "_BarrierArrive": BarrierArrive, "_ClusterBarrier": ClusterBarrier,
         "_Collective": Collective, "_Spin": Spin}   # the names the generated Python uses
