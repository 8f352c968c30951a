"""Layouts: integer tuples, static/dynamic values, Layout and its algebra."""

from .algebra import (
    LayoutAlgebraError,
    append,
    coalesce,
    complement,
    composition,
    filter_,
    filter_zeros,
    flatten,
    group_modes,
    is_compact,
    left_inverse,
    make_ordered_layout,
    max_common_layout,
    max_common_vector,
    nullspace,
    prepend,
    product_each,
    recast_layout,
    right_inverse,
    select,
)
from .basis import ArithTuple, E
from .cute_text import CuteTextError, parse_layout, parse_tiler
from .explanation import Explanation, Step, explain
from .f2 import F2Layout, F2Stride, f2_bases, f2_equal, make_f2_layout
from .identity import IdentityTensor, elem_less, make_identity_tensor
from .inttuple import format_inttuple
from .layout import (
    Layout,
    ceil_div,
    compact_col_major,
    compact_row_major,
    cosize,
    crd2idx,
    depth,
    idx2crd,
    make_layout,
    offset_span,
    prefix_product,
    product,
    rank,
    shape,
    size,
    stride,
)
from .slicing import dice, slice_, slice_and_offset
from .swizzle import ComposedLayout, Swizzle, make_composed_layout, make_swizzle
from .tiling import (
    blocked_product,
    flat_divide,
    flat_product,
    local_partition,
    local_tile,
    logical_divide,
    logical_product,
    raked_product,
    tile_to_shape,
    tiled_divide,
    tiled_product,
    zipped_divide,
    zipped_product,
)
from .tv import make_layout_tv
from .values import Dyn, Symbolic, divisibility_of, is_dynamic, is_static, is_symbolic, known_value, value_of

__all__ = [
    "Dyn", "Symbolic", "is_static", "is_dynamic", "is_symbolic", "known_value", "value_of", "divisibility_of",
    "E", "ArithTuple", "IdentityTensor", "make_identity_tensor", "elem_less",
    "flatten", "product", "prefix_product", "ceil_div", "format_inttuple",
    "Layout", "make_layout", "parse_layout", "parse_tiler", "CuteTextError", "size", "cosize", "rank", "depth", "shape", "stride",
    "crd2idx", "idx2crd", "offset_span", "is_compact",
    # the layout algebra
    "LayoutAlgebraError", "coalesce", "filter_", "filter_zeros", "composition", "complement",
    "right_inverse", "left_inverse", "max_common_vector", "max_common_layout", "select", "group_modes",
    "append", "prepend", "make_ordered_layout", "product_each", "nullspace", "recast_layout",
    "compact_col_major", "compact_row_major",
    "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
    "logical_product", "zipped_product", "tiled_product", "flat_product", "blocked_product", "raked_product",
    "local_tile", "local_partition", "tile_to_shape", "make_layout_tv",
    # the algebra derived step by step
    "explain", "Explanation", "Step",
    "slice_", "dice", "slice_and_offset",
    "Swizzle", "ComposedLayout", "make_swizzle", "make_composed_layout",
    # F2 (XOR-strided) layouts, Triton's linear layouts
    "F2Layout", "F2Stride", "make_f2_layout", "f2_equal", "f2_bases",
]
