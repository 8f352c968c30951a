"""Thread-block clusters: ``%cluster_ctarank`` (``wb.block_rank_in_cluster``) and ``barrier.cluster``
(``wb.cluster_sync``).

CPU semantics: the executor runs a cluster's blocks together (``CompiledCPU.run``); a block's rank is ``_RANK``;
``cluster_sync`` yields a :class:`~workbench.dsl.scheduling.ClusterBarrier`, released when every live thread of
the cluster waits at it.
"""

from __future__ import annotations

from .. import ir
from ..builtins import builtin


class ClusterRank(ir.InstructionExpr):
    """This block's rank in its cluster (an Int32 value)."""

    __slots__ = ()
    cuda_preamble = ("__device__ __forceinline__ unsigned _wb_cluster_ctarank() { unsigned r; "
                     'asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }')

    def __init__(self):
        self.type, self.div = ir.Int32, 1

    def cuda(self):
        return "(int)_wb_cluster_ctarank()"

    def python(self):
        return "_RANK"


class ClusterSync(ir.Instruction):
    """``barrier.cluster.arrive`` + ``wait``: every thread of every block of the cluster."""

    __slots__ = ()

    def cuda(self, em, d):   # the non-.aligned forms: threads may reach it from divergent code
        em.w(d, 'asm volatile("barrier.cluster.arrive.release;\\nbarrier.cluster.wait.acquire;\\n" ::: "memory");')

    def python(self, em, d):
        em.w(d, f"yield _ClusterBarrier({self.line})")


def cluster_rank(cx, r, what):
    """A block rank in the kernel's cluster as an Int32 expression (static ranks checked), for remote operations."""
    n = cx.cluster[0] * cx.cluster[1] * cx.cluster[2]
    cx.scalar(r, "a block rank in the cluster")
    if type(r) is int and not 0 <= r < n:
        raise ValueError(f"{what}: expected a block rank in the cluster, 0 to {n - 1}, but got {r}.")
    if n == 1:
        raise ValueError(f"{what}: the kernel has no cluster; declare one with @wb.kernel(cluster=(2, 1, 1)).")
    return ir.as_expr(ir.cast(r, ir.Int32) if isinstance(r, ir.Expr) else r, ir.Int32)


@builtin
def block_rank_in_cluster(cx):
    """This block's rank in its cluster (``%cluster_ctarank``, CuTe DSL's ``block_idx_in_cluster`` flattened):
    0 to cluster size - 1, x fastest."""
    return ClusterRank()


@builtin
def cluster_sync(cx):
    """``barrier.cluster.arrive`` + ``wait``: every thread of every block of the cluster meets here (after the
    mbarriers are initialized, before any block uses a peer's; and before a block exits while a peer may still
    reach its shared memory)."""
    if cx.cluster == (1, 1, 1):
        raise ValueError("cluster_sync: the kernel has no cluster; declare one with @wb.kernel(cluster=(2, 1, 1)).")
    cx.uses_sync = True
    cx.emit(ClusterSync())
