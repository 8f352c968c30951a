"""Kernel DSL: ``@wb.kernel`` Python functions compiled to CUDA C++ (NVRTC via cupy) or run on the CPU reference
executor.

* ``frontend.py``: Python AST -> IR (``ir.py``), builtins found by identity (``builtins.py``'s registry);
* ``ops/``: one module per hardware operation (its builtin, IR node, CUDA/PTX text, CPU semantics, scheduling);
* ``atoms_in_kernels.py``: the atoms' partitions and fragments in kernels, ``wb.gemm``/``wb.copy`` dispatch to the
  op module of the atom's instruction;
* ``backends/``: CUDA C++ (``cuda.py``) and the CPU executor (``cpu.py``, scheduled by ``scheduling.py``'s waits);
* ``runtime/``: argument specs, the C launcher, specializations and dispatch, NVRTC/cupy, caches, limits.
"""

from .atoms_in_kernels import gemm
from .backends.cpu import KernelRuntimeError
from .builtins import (
    Constexpr,
    block_dim,
    block_idx,
    grid_dim,
    make_fragment,
    range_dynamic,
    shared_tensor,
    thread_idx,
)
from .frontend import KernelError
from .ops.atomic import atomic_add
from .ops.cluster import block_rank_in_cluster, cluster_sync
from .ops.cp_async import cp_async_commit_group, cp_async_wait_group
from .ops.fence import fence_proxy_async
from .ops.mbarrier import (
    mbarrier_arrive,
    mbarrier_arrive_and_expect_tx,
    mbarrier_init,
    mbarrier_init_fence,
    mbarrier_wait,
)
from .ops.setmaxnreg import warpgroup_reg_alloc, warpgroup_reg_dealloc
from .ops.sync import barrier, barrier_arrive, sync_threads
from .ops.tcgen05_alloc import make_tmem_tensor, tmem_alloc, tmem_dealloc, tmem_relinquish_alloc_permit
from .ops.tcgen05_commit import tcgen05_commit
from .ops.tcgen05_fence import tcgen05_fence_after, tcgen05_fence_before
from .ops.tcgen05_ld_st import tcgen05_wait_ld, tcgen05_wait_st
from .ops.tma import TmaLoad, make_tma_load, tma_load, tma_store, tma_store_commit_group, tma_store_wait_group
from .ops.vector_copy import copy
from .ops.wgmma import warpgroup_commit_group, warpgroup_fence, warpgroup_wait_group
from .runtime.cache import cache_info
from .runtime.cupy import compile_ptx, gpu_available
from .runtime.launch import Kernel, Specialization, kernel, show_code

__all__ = [
    "kernel", "Kernel", "Specialization", "thread_idx", "block_idx", "block_dim", "grid_dim", "sync_threads", "barrier", "barrier_arrive",
    "shared_tensor", "make_fragment", "copy", "gemm", "cp_async_commit_group", "cp_async_wait_group", "Constexpr",
    "range_dynamic", "show_code", "cache_info", "compile_ptx", "gpu_available",
    "KernelError", "KernelRuntimeError",
    # Hopper: TMA, mbarriers, warpgroup MMA, clusters (ops/)
    "TmaLoad",
    "make_tma_load",
    "tma_load",
    "tma_store",
    "tma_store_commit_group",
    "tma_store_wait_group",
    "mbarrier_init",
    "mbarrier_init_fence",
    "mbarrier_arrive",
    "mbarrier_arrive_and_expect_tx",
    "mbarrier_wait",
    "warpgroup_fence",
    "warpgroup_commit_group",
    "warpgroup_wait_group",
    "warpgroup_reg_alloc",
    "warpgroup_reg_dealloc",
    "fence_proxy_async",
    "atomic_add",
    "block_rank_in_cluster",
    "cluster_sync",
    # Blackwell: tensor memory, UMMA (ops/tcgen05_*; compiled for sm_100a, emulated on the CPU, never run on a
    # Blackwell GPU here)
    "make_tmem_tensor",
    "tmem_alloc",
    "tmem_dealloc",
    "tmem_relinquish_alloc_permit",
    "tcgen05_commit",
    "tcgen05_fence_before",
    "tcgen05_fence_after",
    "tcgen05_wait_ld",
    "tcgen05_wait_st",
]
