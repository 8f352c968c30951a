"""Exercises of notebook 01 (layouts: shape, stride, coordinates, offsets, nesting, printing)."""

import workbench as wb

from . import exercise


@exercise("01.1", "What offset does coordinate (2,3) of the column-major layout (4,6):(1,4) map to?",
          hint="offset = sum of coordinate times stride, mode by mode: here 2*1 + 3*4")
def _():
    return wb.make_layout((4, 6), stride=(1, 4))((2, 3))


@exercise("01.2", "In (4,(2,3)):(1,(4,8)), what is the natural (hierarchical) coordinate of index 22? "
                  "Answer a nested tuple such as (0,(1,1)).",
          hint="the first mode runs fastest: 22 = row + 4*column, then the column 0..5 splits over (2,3), "
               "first sub-mode fastest (wb.idx2crd does it)")
def _():
    L = wb.make_layout((4, (2, 3)), stride=(1, (4, 8)))
    return wb.idx2crd(22, wb.shape(L))


@exercise("01.3", "What are (size, cosize) of the layout (4,3):(0,2)?",
          hint="size counts coordinates (the product of the shape); cosize is one past the largest offset, gaps included")
def _():
    L = wb.make_layout((4, 3), stride=(0, 2))
    return (wb.size(L), wb.cosize(L))


@exercise("01.4", "x = torch.zeros(6, 8). Write the layout of the view x[::2, 1:] as text, e.g. '(2,2):(2,1)'.",
          hint="a slice keeps the strides of the tensor it comes from, times the step; its start moves the "
               "pointer, not the layout")
def _():
    import torch

    return wb.from_dlpack(torch.zeros(6, 8)[::2, 1:]).layout


@exercise("01.5", "How many coordinates of (4,(2,2)):(2,(1,0)) map to offset 3?",
          hint="a stride-0 mode does not move in memory: every coordinate of it lands on the same offset")
def _():
    L = wb.make_layout((4, (2, 2)), stride=(2, (1, 0)))
    return sum(1 for i in range(wb.size(L)) if L(i) == 3)
