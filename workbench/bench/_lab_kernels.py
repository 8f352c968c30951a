"""The overhead lab's kernels: the same elementwise update over 1, 2, 4 and 8 fp32 tensors of 1024
elements (a += b + c + ...; a += 1 for one tensor), as workbench kernels taking tensors, workbench
kernels taking pointers (the bypass), and CuTe DSL kernels (built only when nvidia-cutlass-dsl is
installed).  Written out per count because both DSLs read a kernel's source."""

from __future__ import annotations

import workbench as wb

ELEMENTS = 1024
THREADS = 256
GRID = ELEMENTS // THREADS


@wb.kernel
def tensors1(a):
    i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
    if i < wb.size(a):
        a[i] = a[i] + 1.0


@wb.kernel
def pointers1(pa, n):
    a = wb.make_tensor(pa, wb.make_layout((n,), stride=(1,)))
    i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
    if i < n:
        a[i] = a[i] + 1.0


@wb.kernel
def tensors2(a, b):
    i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
    if i < wb.size(a):
        a[i] = a[i] + b[i]


@wb.kernel
def pointers2(pa, pb, n):
    a = wb.make_tensor(pa, wb.make_layout((n,), stride=(1,)))
    b = wb.make_tensor(pb, wb.make_layout((n,), stride=(1,)))
    i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
    if i < n:
        a[i] = a[i] + b[i]


@wb.kernel
def tensors4(a, b, c, d):
    i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
    if i < wb.size(a):
        a[i] = a[i] + b[i] + c[i] + d[i]


@wb.kernel
def pointers4(pa, pb, pc, pd, n):
    a = wb.make_tensor(pa, wb.make_layout((n,), stride=(1,)))
    b = wb.make_tensor(pb, wb.make_layout((n,), stride=(1,)))
    c = wb.make_tensor(pc, wb.make_layout((n,), stride=(1,)))
    d = wb.make_tensor(pd, wb.make_layout((n,), stride=(1,)))
    i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
    if i < n:
        a[i] = a[i] + b[i] + c[i] + d[i]


@wb.kernel
def tensors8(a, b, c, d, e, f, g, h):
    i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
    if i < wb.size(a):
        a[i] = a[i] + b[i] + c[i] + d[i] + e[i] + f[i] + g[i] + h[i]


@wb.kernel
def pointers8(pa, pb, pc, pd, pe, pf, pg, ph, n):
    a = wb.make_tensor(pa, wb.make_layout((n,), stride=(1,)))
    b = wb.make_tensor(pb, wb.make_layout((n,), stride=(1,)))
    c = wb.make_tensor(pc, wb.make_layout((n,), stride=(1,)))
    d = wb.make_tensor(pd, wb.make_layout((n,), stride=(1,)))
    e = wb.make_tensor(pe, wb.make_layout((n,), stride=(1,)))
    f = wb.make_tensor(pf, wb.make_layout((n,), stride=(1,)))
    g = wb.make_tensor(pg, wb.make_layout((n,), stride=(1,)))
    h = wb.make_tensor(ph, wb.make_layout((n,), stride=(1,)))
    i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
    if i < n:
        a[i] = a[i] + b[i] + c[i] + d[i] + e[i] + f[i] + g[i] + h[i]


TENSORS = {1: tensors1, 2: tensors2, 4: tensors4, 8: tensors8}
POINTERS = {1: pointers1, 2: pointers2, 4: pointers4, 8: pointers8}


# CuTe DSL re-reads a kernel's source and resolves names in its module's globals: the kernels are
# module-level definitions, present only when nvidia-cutlass-dsl is installed.
try:
    import cutlass
    import cutlass.cute as cute
except ImportError:
    cutlass = cute = None

if cute is not None:

    @cute.kernel
    def k1(a: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * THREADS + tidx
        a[i] = a[i] + 1.0

    @cute.jit
    def t1(a: cute.Tensor):
        k1(a).launch(grid=(GRID, 1, 1), block=(THREADS, 1, 1))

    @cute.jit
    def p1(pa: cute.Pointer, n: cutlass.Int32):
        a = cute.make_tensor(pa, cute.make_layout(n))
        k1(a).launch(grid=(GRID, 1, 1), block=(THREADS, 1, 1))

    @cute.kernel
    def k2(a: cute.Tensor, b: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * THREADS + tidx
        a[i] = a[i] + b[i]

    @cute.jit
    def t2(a: cute.Tensor, b: cute.Tensor):
        k2(a, b).launch(grid=(GRID, 1, 1), block=(THREADS, 1, 1))

    @cute.jit
    def p2(pa: cute.Pointer, pb: cute.Pointer, n: cutlass.Int32):
        a = cute.make_tensor(pa, cute.make_layout(n))
        b = cute.make_tensor(pb, cute.make_layout(n))
        k2(a, b).launch(grid=(GRID, 1, 1), block=(THREADS, 1, 1))

    @cute.kernel
    def k4(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * THREADS + tidx
        a[i] = a[i] + b[i] + c[i] + d[i]

    @cute.jit
    def t4(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        k4(a, b, c, d).launch(grid=(GRID, 1, 1), block=(THREADS, 1, 1))

    @cute.jit
    def p4(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, pd: cute.Pointer, n: cutlass.Int32):
        a = cute.make_tensor(pa, cute.make_layout(n))
        b = cute.make_tensor(pb, cute.make_layout(n))
        c = cute.make_tensor(pc, cute.make_layout(n))
        d = cute.make_tensor(pd, cute.make_layout(n))
        k4(a, b, c, d).launch(grid=(GRID, 1, 1), block=(THREADS, 1, 1))

    @cute.kernel
    def k8(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor, e: cute.Tensor, f: cute.Tensor, g: cute.Tensor, h: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * THREADS + tidx
        a[i] = a[i] + b[i] + c[i] + d[i] + e[i] + f[i] + g[i] + h[i]

    @cute.jit
    def t8(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor, e: cute.Tensor, f: cute.Tensor, g: cute.Tensor, h: cute.Tensor):
        k8(a, b, c, d, e, f, g, h).launch(grid=(GRID, 1, 1), block=(THREADS, 1, 1))

    @cute.jit
    def p8(pa: cute.Pointer, pb: cute.Pointer, pc: cute.Pointer, pd: cute.Pointer, pe: cute.Pointer, pf: cute.Pointer, pg: cute.Pointer, ph: cute.Pointer, n: cutlass.Int32):
        a = cute.make_tensor(pa, cute.make_layout(n))
        b = cute.make_tensor(pb, cute.make_layout(n))
        c = cute.make_tensor(pc, cute.make_layout(n))
        d = cute.make_tensor(pd, cute.make_layout(n))
        e = cute.make_tensor(pe, cute.make_layout(n))
        f = cute.make_tensor(pf, cute.make_layout(n))
        g = cute.make_tensor(pg, cute.make_layout(n))
        h = cute.make_tensor(ph, cute.make_layout(n))
        k8(a, b, c, d, e, f, g, h).launch(grid=(GRID, 1, 1), block=(THREADS, 1, 1))


    # the same launches with unannotated parameters: CuTe DSL 4.8.1 converts framework tensors implicitly
    # only there (a cute.Tensor annotation refuses a torch.Tensor: ARG_ANNOTATION_MISMATCH)
    @cute.jit
    def u1(a):
        k1(a).launch(grid=(GRID, 1, 1), block=(THREADS, 1, 1))

    @cute.jit
    def u2(a, b):
        k2(a, b).launch(grid=(GRID, 1, 1), block=(THREADS, 1, 1))

    @cute.jit
    def u4(a, b, c, d):
        k4(a, b, c, d).launch(grid=(GRID, 1, 1), block=(THREADS, 1, 1))

    @cute.jit
    def u8(a, b, c, d, e, f, g, h):
        k8(a, b, c, d, e, f, g, h).launch(grid=(GRID, 1, 1), block=(THREADS, 1, 1))


def cute_kernels():
    """{n: (jit over cute tensors, jit over pointers + n, jit over framework tensors)} in CuTe DSL;
    raises ImportError without it."""
    if cute is None:
        raise ImportError("nvidia-cutlass-dsl is not installed")
    return {1: (t1, p1, u1), 2: (t2, p2, u2), 4: (t4, p4, u4), 8: (t8, p8, u8)}
