"""Slicing a layout with CuTe's underscore (``None`` here): ``L(None, 2)``.

``slice_(L, crd)`` keeps the modes where ``crd`` is ``None`` and drops the modes fixed by an
integer; ``dice(L, crd)`` keeps the opposite set.  For every coordinate ``c`` of the sliced
layout, ``L(crd with its Nones filled by c) == slice_(L, crd)(c) + offset`` where
``offset = L(crd with Nones set to 0)`` (:func:`slice_and_offset`).  An F2 (XOR-strided) layout XORs that offset
in; its ``slice_and_offset`` returns it only where XOR and + agree (``workbench.layout.f2.slice_and_offset_f2``).
"""

from __future__ import annotations

from . import inttuple as it
from .layout import Layout, _raw
from .values import has_values, value_of

__all__ = ["slice_", "dice", "slice_and_offset"]


def _as_layout(layout, where):
    if type(layout) is not Layout and not getattr(layout, "_is_composed", False) and not getattr(layout, "_is_f2", False):
        raise TypeError(f"{where}: expected a Layout, but got {type(layout).__name__}.")
    return layout


def slice_(layout, crd):
    """The sub-layout of the modes where ``crd`` is ``None`` (CuTe's ``layout(_, 2)``).

    Guarantee: ``slice_(L, crd)(c) == L(crd filled with c) - L(crd filled with 0)``.
    A composed (swizzled) layout keeps its swizzle and moves the offset inside it.
    """
    _as_layout(layout, "slice_")
    if getattr(layout, "_is_composed", False) or getattr(layout, "_is_f2", False):   # F2: the offset XORs in
        return layout._slice(crd)
    if crd is None:
        return layout
    shp = it.slice_modes(crd, layout.shape, True, f"slice_({layout})")
    std = it.slice_modes(crd, layout.stride, True, f"slice_({layout})")
    return _raw(shp, std)


def dice(layout, crd):
    """The sub-layout of the modes fixed by integers in ``crd`` (CuTe's ``dice``):
    the complement of :func:`slice_`'s selection."""
    _as_layout(layout, "dice")
    if getattr(layout, "_is_f2", False):
        return layout._dice(crd)
    if type(crd) is not tuple:
        return layout
    shp = it.slice_modes(crd, layout.shape, False, f"dice({layout})")
    std = it.slice_modes(crd, layout.stride, False, f"dice({layout})")
    return _raw(shp, std)


def slice_and_offset(crd, layout):
    """``(slice_(layout, crd), layout(crd with None -> 0))``.

    Guarantee: ``layout(crd filled with c) == sliced(c) + offset``.  Either argument order is
    accepted (CuTe's is ``(crd, layout)``).
    """
    if type(crd) is Layout or getattr(crd, "_is_composed", False) or getattr(crd, "_is_f2", False):
        crd, layout = layout, crd
    _as_layout(layout, "slice_and_offset")
    if getattr(layout, "_is_composed", False) or getattr(layout, "_is_f2", False):
        return layout._slice_and_offset(crd)
    sub = slice_(layout, crd)
    return sub, offset_of(layout, it.fill_none(crd))


def offset_of(layout, crd):
    """layout(crd): an int when every value is known, else symbolic (a Dyn or a kernel expression)."""
    shp, std = layout.shape, layout.stride
    if has_values(shp) and has_values(std):
        shp, std = value_of(shp), value_of(std)
    return it._crd2idx(crd, shp, std)
