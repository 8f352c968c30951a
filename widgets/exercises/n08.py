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
    from workbench.dsl import examples as E
    t = [wb.from_dlpack(np.zeros((64, 256), np.float32), assumed_align=16) for _ in range(3)]
    return tuple(name for name, k, extra, _, _ in E.ladder(64, 256) if "uint4" in wb.show_code(k, *t, *extra))


@exercise("08.3", "How many bytes does rung 1 keep in flight on a full H100 SM (2048 threads)?",
          hint="each thread has requested one float of a and one of b")
def _():
    from workbench.bench.ladder import BYTES_IN_FLIGHT_PER_THREAD
    return 2048 * BYTES_IN_FLIGHT_PER_THREAD["naive"]


@exercise("08.4", "In rung 2 with CuTe's tile order on 8192 x 8192, from how many rows does warp 0 read?",
          hint="zipped_divide's tile mode has shape (M, N/4), and a 1-D index walks its first mode first")
def _():
    tiles = wb.zipped_divide(wb.make_layout((8192, 8192), stride=(8192, 1)), (1, 4))[1]
    return len({wb.idx2crd(t, wb.shape(tiles))[0] for t in range(32)})


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
