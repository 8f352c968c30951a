"""Exercises of notebook 07 (dynamic marking: mark_layout_dynamic, mark_compact_shape_dynamic, refusals)."""

import workbench as wb

from . import exercise


@exercise("07.1", "t = wb.from_dlpack(torch.empty(3, 1, 5).expand(3, 4, 5)).mark_layout_dynamic(). "
                  "What is t.dynamic_strides_mask?",
          hint="every stride becomes ? except the leading dimension's 1 and zero (broadcast) strides; "
               "expand gives the new mode stride 0")
def _():
    import torch

    return wb.from_dlpack(torch.empty(3, 1, 5).expand(3, 4, 5)).mark_layout_dynamic().dynamic_strides_mask


@exercise("07.2", "torch.empty(6, 1) arrives as (6,1):(1,1). Which leading_dim does mark_layout_dynamic() deduce?",
          hint="two modes have stride 1, but the stride of an extent-1 mode means nothing: the mode with "
               "extent > 1 wins")
def _():
    import torch

    return wb.from_dlpack(torch.empty(6, 1)).mark_layout_dynamic().leading_dim


@exercise("07.3", "Write the layout (as text, exactly as printed) of "
                  "wb.from_dlpack(torch.empty(6, 8, 2)).mark_compact_shape_dynamic(mode=1, divisibility=4).",
          hint="the strides of the dynamic mode and of the modes inside it stay static; a stride outside it is "
               "a product that includes the dynamic extent, so it becomes ?{i64 div=N}, N the divisibility times "
               "the static factors")
def _():
    import torch

    return str(wb.from_dlpack(torch.empty(6, 8, 2)).mark_compact_shape_dynamic(mode=1, divisibility=4).layout)


@exercise("07.4", "t = wb.from_dlpack(torch.empty(16, 8, 4)).mark_compact_shape_dynamic(0, divisibility=4)"
                  ".mark_compact_shape_dynamic(2, divisibility=2). What is t.dynamic_strides_mask?",
          hint="the calls chain: after both, which stride depends on a dynamic extent? (the innermost stride "
               "is always 1)")
def _():
    import torch

    t = wb.from_dlpack(torch.empty(16, 8, 4)).mark_compact_shape_dynamic(0, divisibility=4)
    return t.mark_compact_shape_dynamic(2, divisibility=2).dynamic_strides_mask


@exercise("07.5", "Which exception does wb.from_dlpack(torch.empty(16, 8)).mark_compact_shape_dynamic(0, "
                  "divisibility=2.0) raise?",
          hint="a bad value raises ValueError, a value of the wrong type raises TypeError")
def _():
    import torch

    try:
        wb.from_dlpack(torch.empty(16, 8)).mark_compact_shape_dynamic(0, divisibility=2.0)
    except Exception as e:  # the class is the answer
        return type(e)
    raise AssertionError("a float divisibility was accepted")


@exercise("07.6", "Find the bug: t = wb.from_dlpack(torch.empty(8, 6).T).mark_layout_dynamic(leading_dim=1) raises. "
                  "Which leading_dim is the right one?",
          hint="x.T of a row-major 8x6 tensor is (6,8):(1,6): the leading dimension is the mode whose stride is 1")
def _():
    import torch
    return wb.from_dlpack(torch.empty(8, 6).T).mark_layout_dynamic().leading_dim


@exercise("07.7", "Find the bug: a kernel wants a row-major (M, 64) fp32 tensor whose M is dynamic and a multiple of 8, "
                  "and marks it with .mark_compact_shape_dynamic(mode=1, divisibility=8). Which mode should it pass?",
          hint="mode counts the tensor's modes in order: M is mode 0, the 64 columns are mode 1; the mode made "
               "dynamic is the one whose extent varies")
def _():
    import torch
    t = wb.from_dlpack(torch.empty(16, 64)).mark_compact_shape_dynamic(mode=0, divisibility=8)
    return next(i for i, d in enumerate(t.dynamic_shapes_mask) if d)
