"""Layout Workbench: see and measure CuTe-style tensor layouts.

``import workbench as wb`` gives the public API of DESIGN.md section 3.  Every export is named
here (array-api-strict style): a name not listed is internal, reachable only through its
submodule (``workbench.dsl.compile_ptx``, ``workbench._mdspan.MdspanMapping`` ...).  No public
name shadows a Python builtin or a submodule (tests/test_public_api.py checks it).
"""

from ._element_types import (
    BFloat16,
    Boolean,
    Complex32,
    Complex64,
    Complex128,
    ElementType,
    Float4E2M1FN,
    Float6E2M3FN,
    Float6E3M2FN,
    Float8E3M4,
    Float8E4M3,
    Float8E4M3B11FNUZ,
    Float8E4M3FN,
    Float8E4M3FNUZ,
    Float8E5M2,
    Float8E5M2FNUZ,
    Float8E8M0FNU,
    Float16,
    Float32,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    TFloat32,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    vector_type,
)
from ._mdspan import (
    Mdspan,
    const,
    full_extent,
    make_mdspan,
    submdspan,
    to_device_mdspan,
    to_dlpack_tensor,
    to_host_mdspan,
    to_managed_mdspan,
)
from ._memory import host_buffers
from ._tensor import AddressSpace, Pointer, Tensor, from_dlpack, make_ptr, make_tensor
from .atoms import (
    CopyAtom,
    MMAAtom,
    TiledCopy,
    TiledMMA,
    TmemAllocator,
    TmemTensor,
    UmmaInstrDescriptor,
    UmmaSmemDescriptor,
    bank_conflicts,
    copy_atom,
    gmma_smem_atom,
    make_tiled_copy,
    make_tiled_copy_A,
    make_tiled_copy_B,
    make_tiled_copy_C,
    make_tiled_mma,
    make_tmem_copy,
    make_umma_desc,
    mma_atom,
    suggest_swizzle,
    umma_smem_atom,
)
from .dsl import (
    Constexpr,
    Kernel,
    KernelError,
    KernelRuntimeError,
    TmaLoad,
    atomic_add,
    barrier,
    barrier_arrive,
    block_dim,
    block_idx,
    block_rank_in_cluster,
    cache_info,
    cluster_sync,
    copy,
    cp_async_commit_group,
    cp_async_wait_group,
    fence_proxy_async,
    gemm,
    gpu_available,
    grid_dim,
    kernel,
    make_fragment,
    make_tma_load,
    make_tmem_tensor,
    mbarrier_arrive,
    mbarrier_arrive_and_expect_tx,
    mbarrier_init,
    mbarrier_init_fence,
    mbarrier_wait,
    range_dynamic,
    shared_tensor,
    show_code,
    sync_threads,
    tcgen05_commit,
    tcgen05_fence_after,
    tcgen05_fence_before,
    tcgen05_wait_ld,
    tcgen05_wait_st,
    thread_idx,
    tma_load,
    tma_store,
    tma_store_commit_group,
    tma_store_wait_group,
    tmem_alloc,
    tmem_dealloc,
    tmem_relinquish_alloc_permit,
    warpgroup_commit_group,
    warpgroup_fence,
    warpgroup_reg_alloc,
    warpgroup_reg_dealloc,
    warpgroup_wait_group,
)
from .interop import (
    CuteTextError,
    GluonLayout,
    LinearLayout,
    format_cute,
    from_cute,
    from_gluon,
    from_linear_layout,
    parse_cute,
    to_cute_cpp,
    to_cute_dsl,
    to_gluon,
    to_linear_layout,
    to_triton,
)
from .layout import (
    ArithTuple,
    ComposedLayout,
    Dyn,
    E,
    IdentityTensor,
    Layout,
    LayoutAlgebraError,
    Swizzle,
    Symbolic,
    append,
    blocked_product,
    ceil_div,
    coalesce,
    compact_col_major,
    compact_row_major,
    complement,
    composition,
    cosize,
    crd2idx,
    depth,
    dice,
    elem_less,
    explain,
    filter_,
    filter_zeros,
    flat_divide,
    flat_product,
    flatten,
    group_modes,
    idx2crd,
    is_compact,
    is_dynamic,
    is_static,
    left_inverse,
    local_partition,
    local_tile,
    logical_divide,
    logical_product,
    make_composed_layout,
    make_identity_tensor,
    make_layout,
    make_layout_tv,
    make_ordered_layout,
    make_swizzle,
    max_common_layout,
    max_common_vector,
    nullspace,
    offset_span,
    parse_layout,
    prepend,
    product,
    product_each,
    raked_product,
    rank,
    recast_layout,
    right_inverse,
    select,
    shape,
    size,
    slice_,
    slice_and_offset,
    stride,
    tile_to_shape,
    tiled_divide,
    tiled_product,
    zipped_divide,
    zipped_product,
)
from .layout.f2 import F2Layout, F2Stride, f2_bases, f2_equal, make_f2_layout
from .layout.printing import print_layout


def tune(kind, shapes, dtypes=None, **options):
    """Sweep a GEMM configuration space ("hopper", "smem" or "cpu") over shapes and dtypes, one worker per GPU (or
    a Ray actor per GPU of a cluster with ``ray_address=``); returns the sweep with the best configuration per
    (shape, dtype), cached per GPU model.  The options and what is measured: ``workbench._tune.tune``."""
    # imported when called: the tuner builds the kernels of workbench.kernels, which import this package
    import importlib
    return importlib.import_module("workbench._tune").tune(kind, shapes, dtypes, **options)


def load_tune(path):
    """A sweep saved by ``wb.tune(...).save(path)`` or ``python -m workbench tune --out path``, as the TuneResult
    ``wb.tune`` returns (its table, ``plot()``, ``best_config``), the choices made again from its rows."""
    import importlib
    return importlib.import_module("workbench._tune").TuneResult.load(path)

__version__ = "0.1.0"

__all__ = [
    # element types (CuTe DSL's spellings)
    "ElementType", "vector_type",
    "Boolean", "Int8", "Int16", "Int32", "Int64", "Uint8", "Uint16", "Uint32", "Uint64",
    "Float16", "Float32", "Float64", "BFloat16", "TFloat32", "Float8E3M4", "Float8E4M3", "Float8E4M3B11FNUZ", "Float8E4M3FN",
    "Float8E4M3FNUZ", "Float8E5M2", "Float8E5M2FNUZ", "Float8E8M0FNU", "Float6E2M3FN", "Float6E3M2FN", "Float4E2M1FN",
    "Complex32", "Complex64", "Complex128",
    # layouts: values, construction, queries
    "Layout", "Dyn", "Symbolic", "E", "ArithTuple", "make_layout", "parse_layout", "make_ordered_layout",
    "size", "cosize", "rank", "depth", "shape", "stride", "crd2idx", "idx2crd", "offset_span", "is_compact",
    "is_static", "is_dynamic", "product", "product_each", "ceil_div", "flatten",
    # the layout algebra
    "LayoutAlgebraError", "coalesce", "filter_", "filter_zeros", "composition", "complement", "right_inverse",
    "left_inverse", "max_common_vector", "max_common_layout", "select", "group_modes", "append", "prepend",
    "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
    "logical_product", "zipped_product", "tiled_product", "flat_product", "blocked_product", "raked_product",
    "local_tile", "local_partition", "tile_to_shape", "make_layout_tv", "slice_", "dice", "slice_and_offset", "explain",
    "nullspace", "recast_layout", "compact_col_major", "compact_row_major",
    "Swizzle", "ComposedLayout", "make_swizzle", "make_composed_layout",
    "F2Layout", "F2Stride", "make_f2_layout", "f2_equal", "f2_bases",
    "print_layout",
    # CuTe interop: its printed text (C++ and DSL) both ways, its code
    "CuteTextError", "parse_cute", "format_cute", "to_cute_cpp", "to_cute_dsl", "from_cute",
    # Triton linear layouts (F2 bases)
    "LinearLayout", "to_linear_layout", "from_linear_layout", "to_triton", "from_gluon", "to_gluon", "GluonLayout",
    # predication
    "IdentityTensor", "make_identity_tensor", "elem_less",
    # tensors
    "AddressSpace", "Pointer", "Tensor", "from_dlpack", "make_ptr", "make_tensor",
    # mdspan views (CCCL)
    "Mdspan", "const", "full_extent", "make_mdspan", "submdspan",
    "to_host_mdspan", "to_device_mdspan", "to_managed_mdspan", "to_dlpack_tensor",
    # MMA and copy atoms (CuTe C++ names)
    "MMAAtom", "CopyAtom", "TiledMMA", "TiledCopy", "mma_atom", "copy_atom", "make_tiled_mma", "make_tiled_copy",
    "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C", "gmma_smem_atom", "bank_conflicts",
    "suggest_swizzle",
    # Blackwell host objects: UMMA descriptors, tensor memory
    "make_tmem_copy", "TmemAllocator", "TmemTensor", "make_umma_desc", "umma_smem_atom", "UmmaSmemDescriptor",
    "UmmaInstrDescriptor",
    # the kernel DSL
    "kernel", "Kernel", "KernelError", "KernelRuntimeError", "Constexpr", "thread_idx", "block_idx", "block_dim",
    "grid_dim", "sync_threads", "barrier", "barrier_arrive", "shared_tensor", "make_fragment", "copy", "gemm", "cp_async_commit_group",
    "cp_async_wait_group", "range_dynamic", "show_code", "cache_info", "gpu_available", "host_buffers",
    # Hopper in kernels: TMA boxes, mbarriers, warpgroup MMA
    "TmaLoad", "make_tma_load", "tma_load", "tma_store", "tma_store_commit_group", "tma_store_wait_group", "mbarrier_init", "mbarrier_init_fence", "mbarrier_arrive", "mbarrier_arrive_and_expect_tx", "mbarrier_wait", "warpgroup_fence", "warpgroup_commit_group", "warpgroup_wait_group", "warpgroup_reg_alloc", "warpgroup_reg_dealloc", "fence_proxy_async", "atomic_add", "block_rank_in_cluster", "cluster_sync",
    # Blackwell in kernels: compiled for sm_100a, emulated on the CPU, never run on a Blackwell GPU here
    "make_tmem_tensor", "tmem_alloc", "tmem_dealloc", "tmem_relinquish_alloc_permit", "tcgen05_commit", "tcgen05_fence_before", "tcgen05_fence_after", "tcgen05_wait_ld", "tcgen05_wait_st",
    # the tuner
    "tune", "load_tune",
]
