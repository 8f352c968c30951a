"""Notebook 08 (kernels): the JIT cache, the optimisation ladder, validation."""

import numpy as np

import workbench as wb

from . import exercise


@exercise("08.1", "How many specializations does a kernel have after dynamic arrays of 100, 200 and 300 elements?",
          hint="a dynamic extent is a kernel parameter: the signature does not change with the size")
def _():
    @wb.kernel
    def scale(a, out, s):
        i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
        if i < wb.size(a):
            out[i] = a[i] * s
    for m in (100, 200, 300):
        scale[(wb.ceil_div(m, 128), 1, 1), (128, 1, 1)](np.ones(m, np.float32), np.zeros(m, np.float32), 3.0)
    return len(scale.specializations)


@exercise("08.2", "Which rungs' generated code uses 128-bit accesses for an aligned 64 x 256 float32 tensor?",
          hint="look for uint4 in wb.show_code of each rung; only the rungs that copy through fragments vectorize")
def _():
    from workbench.kernels import examples as E
    t = [wb.from_dlpack(np.zeros((64, 256), np.float32), assumed_align=16) for _ in range(3)]
    return tuple(name for name, k, extra, _, _ in E.ladder(64, 256) if "uint4" in wb.show_code(k, *t, *extra))


def _copy4_unguarded():
    @wb.kernel
    def copy4(src, dst):
        t = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
        wb.copy(wb.local_tile(src, (4,), (t,)), wb.local_tile(dst, (4,), (t,)))
    return copy4


@exercise("08.3", "Find the bug: copy4 (4 floats a thread, no predicate) is launched with 251 threads on 1002 floats. "
                  "The CPU executor stops it at the first out-of-bounds access: which element offset does it report?",
          hint="thread t copies elements 4t .. 4t + 3; the last thread starts where? the first element that does not "
               "exist is the answer")
def _():
    n = 1002
    try:
        _copy4_unguarded()[(1, 1, 1), (251, 1, 1)](np.zeros(n, np.float32), np.zeros(n, np.float32))
    except RuntimeError as e:
        import re
        return int(re.search(r"element offset (\d+)", str(e)).group(1))
    raise AssertionError("the unguarded copy ran past the end unnoticed")


@exercise("08.4", "The fix: c = wb.local_tile(wb.make_identity_tensor(wb.shape(src)), (4,), (t,)). One test "
                  "wb.elem_less(c[k], wb.shape(src)) must decide, for every length, whether the whole 4-float tile "
                  "exists. Which k?",
          hint="the tile's coordinates grow with k; if the largest one is inside, all are")
def _():
    c = wb.local_tile(wb.make_identity_tensor((1002,)), (4,), (250,))
    return max(range(4), key=lambda k: c[k])


@exercise("08.5", "Which exception does a launch raise when the kernel writes read-only memory?",
          hint="the argument's value is wrong, not its type")
def _():
    @wb.kernel
    def fill(a):
        a[wb.thread_idx().x] = 1.0
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    try:
        fill[1, 4](ro)
    except Exception as e:
        return type(e)
    raise AssertionError("a launch wrote read-only memory")
