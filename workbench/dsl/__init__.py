"""Kernel DSL: ``@wb.kernel`` Python functions compiled to CUDA C++ (NVRTC via cupy) or run on the
CPU reference executor.  See ``workbench/dsl/kernel.py`` for dispatch and ``frontend.py`` for the
supported Python subset."""

from .atoms_in_kernels import cp_async_commit_group, cp_async_wait_group, gemm
from .runtime.cupy import compile_ptx, gpu_available
from .builtins import (
    Constexpr,
    barrier,
    barrier_arrive,
    block_dim,
    block_idx,
    copy,
    grid_dim,
    make_fragment,
    range_dynamic,
    shared_tensor,
    sync_threads,
    thread_idx,
)
from .runtime.cache import cache_info
from .backends.cpu import KernelRuntimeError
from .frontend import KernelError
from .hopper import (
    TmaLoad,
    block_rank_in_cluster,
    cluster_sync,
    fence_proxy_async,
    make_tma_load,
    mbarrier_arrive,
    mbarrier_arrive_and_expect_tx,
    mbarrier_init,
    mbarrier_init_fence,
    mbarrier_wait,
    tma_load,
    tma_store,
    tma_store_commit_group,
    tma_store_wait_group,
    warpgroup_commit_group,
    warpgroup_fence,
    warpgroup_reg_alloc,
    warpgroup_reg_dealloc,
    warpgroup_wait_group,
)
from .runtime.launch import Kernel, Specialization, kernel, show_code

__all__ = [
    "kernel", "Kernel", "Specialization", "thread_idx", "block_idx", "block_dim", "grid_dim", "sync_threads", "barrier", "barrier_arrive",
    "shared_tensor", "make_fragment", "copy", "gemm", "cp_async_commit_group", "cp_async_wait_group", "Constexpr",
    "range_dynamic", "show_code", "cache_info", "compile_ptx", "gpu_available",
    "KernelError", "KernelRuntimeError",
    # Hopper: TMA, mbarriers, warpgroup MMA (hopper.py)
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
    "block_rank_in_cluster",
    "cluster_sync",
]
