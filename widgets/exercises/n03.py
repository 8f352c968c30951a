"""Exercises of notebook 03: mdspan and DLPack as CCCL sees them."""

import numpy as np

import workbench as wb

from . import exercise


@exercise("03.1", "What is required_span_size() of the 'stride' view of np.zeros((4, 6), np.float32)[::2, 1:]?",
          hint="the view has extents (2, 5) and strides (12, 1); the span is one past the largest offset, "
               "1 + (2-1)*12 + (5-1)*1")
def _():
    return wb.to_host_mdspan(np.zeros((4, 6), np.float32)[::2, 1:], wb.Float32, 2).required_span_size()


@exercise("03.2", "Which of the layouts 'right', 'left', 'stride', 'stride_relaxed' accept a.T (a: row-major 3x4 float32)?",
          hint="a.T has extents (4, 3) and strides (1, 4): column-major, compact, and all strides positive")
def _():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    accepted = []
    for layout in ("right", "left", "stride", "stride_relaxed"):
        try:
            wb.to_host_mdspan(a.T, wb.Float32, 2, layout)
        except ValueError:
            accepted.append(False)
        else:
            accepted.append(True)
    return tuple(accepted)


@exercise("03.3", "What are (is_unique(), is_exhaustive(), is_strided()) of the 'stride_relaxed' view of "
                  "np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::-1]?",
          hint="strides (3, -1) with offset 2: the offsets are 0..5, each once; is_strided() asks whether the offset "
               "is a plain sum of index times stride, with nothing added")
def _():
    v = wb.to_host_mdspan(np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::-1], wb.Float32, 2, "stride_relaxed")
    return (v.is_unique(), v.is_exhaustive(), v.is_strided())


@exercise("03.4", "What is offset() of the 'stride_relaxed' view of np.arange(20, dtype=np.float32).reshape(4, 5)[::-1, 1:]?",
          hint="element [0, 0] of the view is element 16 of the buffer; the view rebases its data handle to the lowest "
               "element it reaches (row 0 of memory, column 1) and counts the offset from there")
def _():
    return wb.to_host_mdspan(np.arange(20, dtype=np.float32).reshape(4, 5)[::-1, 1:], wb.Float32, 2,
                             "stride_relaxed").offset()


@exercise("03.5", "Which exception does writing bm[0, 0] = 1.0 raise, bm the mdspan of a numpy broadcast?",
          hint="numpy's broadcasts are read-only, DLPack carries that as READ_ONLY, and a read-only tensor becomes a "
               "view of const float")
def _():
    bm = wb.to_host_mdspan(np.broadcast_to(np.arange(3, dtype=np.float32), (4, 3)), wb.Float32, 2, "stride_relaxed")
    try:
        bm[0, 0] = 1.0
    except Exception as e:  # the class the library raises is the answer
        return type(e)
    raise AssertionError("writing through a view of a read-only broadcast was accepted")
