"""Interop with CuTe: its printed text (C++ and DSL), its code, CuTe DSL's objects, Triton's linear layouts.

``parse_cute`` / ``format_cute`` / ``to_cute_cpp`` / ``to_cute_dsl`` (:mod:`.cute`), ``from_cute`` (:mod:`.dsl_objects`),
``to_linear_layout`` / ``from_linear_layout`` (:mod:`.linear`), ``to_triton`` / ``from_gluon`` / ``to_gluon``
(:mod:`.triton`), Gluon's TTGIR attribute text ``parse_ttgir`` / ``format_ttgir`` (:mod:`.ttgir`).  Pure layout text lives in
``workbench.layout.cute_text``; this package adds what needs the atoms.
"""

from .cute import CuteTextError, format_cute, parse_cute, to_cute_cpp, to_cute_dsl
from .dsl_objects import TracedTensor, as_workbench, from_cute
from .linear import LinearLayout, from_linear_layout, to_linear_layout
from .triton import from_gluon, to_gluon, to_triton
from .ttgir import GluonLayout, GluonTextError, format_ttgir, parse_ttgir

__all__ = ["CuteTextError", "parse_cute", "format_cute", "to_cute_cpp", "to_cute_dsl", "from_cute", "as_workbench",
           "TracedTensor", "LinearLayout", "to_linear_layout", "from_linear_layout", "to_triton", "from_gluon",
           "to_gluon", "GluonLayout", "GluonTextError", "parse_ttgir", "format_ttgir"]
