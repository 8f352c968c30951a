"""Layouts: integer tuples, static/dynamic values, Layout and its algebra."""

from .inttuple import ceil_div, flatten, format_inttuple, prefix_product, product
from .layout import (
    Layout, cosize, crd2idx, depth, idx2crd, make_layout, parse_layout, rank, shape, size, stride,
)
from .values import Dyn, divisibility_of, is_dynamic, is_static, value_of

__all__ = [
    "Dyn", "is_static", "is_dynamic", "value_of", "divisibility_of",
    "flatten", "product", "prefix_product", "ceil_div", "format_inttuple",
    "Layout", "make_layout", "parse_layout", "size", "cosize", "rank", "depth", "shape", "stride",
    "crd2idx", "idx2crd",
]
