"""Exercises of 00 · the tour: a layout from a live array, dynamic marking, a predicated tile."""

import numpy as np

import workbench as wb

from . import exercise


@exercise("00.1", "x is a row-major 6x8 float32 numpy array. What layout does wb.from_dlpack(x[:, ::2]) have "
          "(every other column)?",
          hint="slicing moves no element: the shape shrinks and the stride of the sliced mode grows by the step")
def _():
    x = np.zeros((6, 8), np.float32)
    return wb.from_dlpack(x[:, ::2]).layout


@exercise("00.2", "x is a column-major (Fortran-order) 6x8 float32 array, np.zeros((6, 8), np.float32, order='F'). "
          "What does print(wb.from_dlpack(x).mark_layout_dynamic().layout) show? (the text)",
          hint="every extent becomes ?, every stride but the unit one becomes a 64-bit ?{i64}; which mode has the unit "
               "stride in column-major order?")
def _():
    x = np.zeros((6, 8), np.float32, order="F")
    return str(wb.from_dlpack(x).mark_layout_dynamic().layout)


@exercise("00.3", "A 10x6 tensor is cut into 4x4 tiles. How many coordinates of its last tile, (2, 1), does "
          "elem_less keep?",
          hint="the last tile covers rows 8..11 and columns 4..7; only coordinates inside (10, 6) survive")
def _():
    shape = (10, 6)
    tile = wb.local_tile(wb.make_identity_tensor(shape), (4, 4), (2, 1))
    return sum(1 for c in tile if wb.elem_less(c, shape))
