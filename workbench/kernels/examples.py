"""The example kernels (used by tests, benchmarks and notebooks) and how to launch and check them.

Each :class:`Example` knows how to make inputs (numpy arrays; the GPU tests copy them to the
device), how to launch its kernel on tensors of either memory, and the numpy reference result.
"""

from __future__ import annotations

import math

import numpy as np

import workbench as wb

TILE = 32          # transpose_smem's tile (32 x 32, padded to 33 in shared memory)
ROWS = 8           # transpose_smem: a 32 x 8 block moves a 32 x 32 tile, 4 rows per thread
VEC = 8            # vectorized copy: 8 floats (two 128-bit accesses) per thread
RED = 256          # row reduction: threads per block (one block per row)
MM = 16            # sgemm tile


@wb.kernel
def vadd(a, b, c):
    """c[i] = a[i] + b[i] over any layout: the 1-D index i is split by each tensor's own layout."""
    i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
    if i < wb.size(c):
        c[i] = a[i] + b[i]


@wb.kernel
def copy2d(src, dst):
    """dst[i, j] = src[i, j]: the two tensors may have different layouts (row/column major, strided)."""
    tx, ty, _ = wb.thread_idx()
    bx, by, _ = wb.block_idx()
    i = by * wb.block_dim().y + ty
    j = bx * wb.block_dim().x + tx
    if i < wb.shape(src)[0] and j < wb.shape(src)[1]:
        dst[i, j] = src[i, j]


@wb.kernel
def transpose_naive(src, dst):
    """dst[j, i] = src[i, j], one element per thread (the writes are uncoalesced)."""
    tx, ty, _ = wb.thread_idx()
    bx, by, _ = wb.block_idx()
    i = by * wb.block_dim().y + ty
    j = bx * wb.block_dim().x + tx
    if i < wb.shape(src)[0] and j < wb.shape(src)[1]:
        dst[j, i] = src[i, j]


@wb.kernel
def transpose_smem(src, dst):
    """Tiled transpose: a 32x32 tile of src (local_tile) goes through shared memory padded to 33
    columns (no bank conflicts) and leaves as a tile of dst, both global accesses coalesced.
    Any size: the identity tensor, tiled like the data, gives each element its coordinate in the
    whole tensor and elem_less drops those past the ragged edge (CuTe's predication)."""
    tile = wb.shared_tensor(wb.Float32, wb.make_layout((TILE, TILE), stride=(TILE + 1, 1)))
    tx, ty, _ = wb.thread_idx()
    bx, by, _ = wb.block_idx()
    gs = wb.local_tile(src, (TILE, TILE), (by, bx))
    cs = wb.local_tile(wb.make_identity_tensor(wb.shape(src)), (TILE, TILE), (by, bx))
    gd = wb.local_tile(dst, (TILE, TILE), (bx, by))
    cd = wb.local_tile(wb.make_identity_tensor(wb.shape(dst)), (TILE, TILE), (bx, by))
    for r in range(0, TILE, ROWS):
        if wb.elem_less(cs[ty + r, tx], wb.shape(src)):
            tile[ty + r, tx] = gs[ty + r, tx]
    wb.sync_threads()
    for r in range(0, TILE, ROWS):
        if wb.elem_less(cd[ty + r, tx], wb.shape(dst)):
            gd[ty + r, tx] = tile[tx, ty + r]


@wb.kernel
def vcopy(src, dst, vec: wb.Constexpr):
    """dst = src with 128-bit accesses: each thread copies a tile of ``vec`` contiguous elements
    (a compile-time constant); the copy is vectorized because the tile's static layout, the
    tensors' assumed_align and the divisibility of its offset (a multiple of vec) prove 16-byte
    alignment.  On the ragged edge (the tile's last coordinate past the end) the thread copies
    the elements that exist one by one."""
    t = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
    gs = wb.local_tile(src, (vec,), (t,))
    gd = wb.local_tile(dst, (vec,), (t,))
    c = wb.local_tile(wb.make_identity_tensor(wb.shape(src)), (vec,), (t,))
    if wb.elem_less(c[vec - 1], wb.shape(src)):
        wb.copy(gs, gd)
    else:
        for k in range(vec):
            if wb.elem_less(c[k], wb.shape(src)):
                gd[k] = gs[k]


@wb.kernel
def vcopy_tv(src, dst, tv: wb.Constexpr):
    """dst = src through a thread/value layout (CuTe's canonical elementwise copy): block b copies tile b of
    size(tv) elements; thread t's values are tv(t, v), chunks of 4 consecutive floats that a warp reads together
    (coalesced 512-byte segments), all of a thread's 128-bit loads issued before its stores.  The ragged last
    tile is copied element by element where the identity tensor says the element exists."""
    t = wb.thread_idx().x
    b = wb.block_idx().x
    n = wb.size(tv)
    gs = wb.composition(wb.local_tile(src, (n,), (b,)), tv)[t, None]
    gd = wb.composition(wb.local_tile(dst, (n,), (b,)), tv)[t, None]
    c = wb.composition(wb.local_tile(wb.make_identity_tensor(wb.shape(src)), (n,), (b,)), tv)[t, None]
    if wb.elem_less(c[wb.size(gs) - 1], wb.shape(src)):
        wb.copy(gs, gd)
    else:
        for k in range(wb.size(gs)):
            if wb.elem_less(c[k], wb.shape(src)):
                gd[k] = gs[k]


def copy_tv(threads=256, chunks=4, lanes=4):
    """The TV layout of vcopy_tv: `threads` threads, each `chunks` 128-bit chunks of 4 floats; chunk j of thread t
    starts at element (j * threads + t) * 4, so a warp's j-th accesses are 512 consecutive bytes."""
    return wb.make_layout((threads, (lanes, chunks)), stride=(lanes, (1, lanes * threads)))


# shared-memory stores and loads of 1, 2 or 4 floats (indexed by vec // 2): the swizzled tile is read and written
# through an atom, which proves each chunk stays whole and aligned under the swizzle
_SMEM_COPY = tuple(wb.copy_atom(f"UniversalCopy_U{32 * v}", wb.Float32) for v in (1, 2, 4))


@wb.kernel
def transpose_tile(src, dst, tile: wb.Constexpr, vec: wb.Constexpr, rows: wb.Constexpr, dst_rows: wb.Constexpr):
    """dst = src.T at close to copy bandwidth (launch it with :func:`launch_transpose_tile`).  Block k moves one
    tile x tile tile with rows * tile / vec threads, tile / rows chunks of vec floats a thread.  Why it is fast:
    (1) every global access is a vec-wide chunk (128-bit for vec=4) and each warp's access covers whole 128-byte
    lines: 32 / vec lanes along a row, vec rows a warp; (2) a thread issues all its loads into a register fragment
    before it touches shared memory, so they are in flight together; (3) the shared tile is swizzled so that both
    the vec-wide stores along its rows and the scalar loads down its columns are free of bank conflicts (padding
    would break the 16-byte alignment of its rows); (4) with dst_rows, consecutive blocks take consecutive tiles
    of one destination row band, so the writes in flight at once fill long stretches of destination rows.  On the
    H200, 8192^2 fp32 (benchmarks/transpose_sweep.py): 0.97x of a device-to-device copy at 64x64, vec=4, rows=32;
    0.945x walking along the source's rows instead; 0.89x for the previous scalar, padded version.
    Chunks past the ragged edge go element by element, predicated by the identity tensor; where a chunk's
    alignment is not proven (a row pitch not a multiple of vec), its copy falls back to narrower accesses."""
    lanes = 32 // vec                   # threads along a row in a warp: 128 bytes
    groups = tile // 32                 # warps side by side along a tile row
    # chunk c of row r sits at chunk c ^ ((r / vec) % lanes): the lanes of a warp that load one column (rows
    # vec * tx + j) meet lanes distinct chunks, and the vec columns of the warp fill the rest of the 32 banks
    buf = wb.shared_tensor(wb.Float32, wb.composition(
        wb.Swizzle(int(math.log2(lanes)), int(math.log2(vec)), int(math.log2(tile))),
        wb.make_layout((tile, (vec, tile // vec)), stride=(tile, (1, vec)))))
    t = wb.thread_idx().x
    w = t // 32
    tx = t % lanes + lanes * (w % groups)
    ty = (t % 32) // lanes + vec * (w // groups)
    f = wb.make_fragment(wb.make_layout((vec, tile // rows), stride=(1, vec)), wb.Float32)
    k = wb.block_idx().x
    if dst_rows:   # a Constexpr: decided while tracing
        nty = wb.ceil_div(wb.shape(src)[0], tile)
        by = k % nty
        bx = k // nty
    else:
        ntx = wb.ceil_div(wb.shape(src)[1], tile)
        by = k // ntx
        bx = k % ntx
    gs = wb.local_tile(src, (tile, tile), (by, bx))
    cs = wb.local_tile(wb.make_identity_tensor(wb.shape(src)), (tile, tile), (by, bx))
    gd = wb.local_tile(dst, (tile, tile), (bx, by))
    cd = wb.local_tile(wb.make_identity_tensor(wb.shape(dst)), (tile, tile), (bx, by))
    for r in range(0, tile, rows):
        g = wb.local_tile(gs[ty + r, None], (vec,), (tx,))
        c = wb.local_tile(cs[ty + r, None], (vec,), (tx,))
        if wb.elem_less(c[vec - 1], wb.shape(src)):
            wb.copy(g, f[None, r // rows])
        else:
            for j in range(vec):
                if wb.elem_less(c[j], wb.shape(src)):
                    f[j, r // rows] = g[j]
    for r in range(0, tile, rows):
        wb.copy(_SMEM_COPY[vec // 2], f[None, r // rows], buf[ty + r, (None, tx)])
    wb.sync_threads()
    for r in range(0, tile, rows):
        for j in range(vec):
            f[j, r // rows] = buf[vec * tx + j, ty + r]
        g = wb.local_tile(gd[ty + r, None], (vec,), (tx,))
        c = wb.local_tile(cd[ty + r, None], (vec,), (tx,))
        if wb.elem_less(c[vec - 1], wb.shape(dst)):
            wb.copy(f[None, r // rows], g)
        else:
            for j in range(vec):
                if wb.elem_less(c[j], wb.shape(dst)):
                    g[j] = f[j, r // rows]


def launch_transpose_tile(src, dst, tile=64, vec=4, rows=32, dst_rows=True):
    """dst = src.T through transpose_tile for a 2-D src (m, n) and dst (n, m), any tensors a kernel takes (pass
    wb.from_dlpack(x, assumed_align=16) to let it prove 128-bit accesses): one block of rows * tile / vec threads
    a tile.  The defaults are the fastest shape on the H200 (benchmarks/transpose_sweep.py)."""
    if tile not in (32, 64, 128) or vec not in (1, 2, 4):
        raise ValueError(f"Expected tile in (32, 64, 128) and vec in (1, 2, 4), but got tile={tile}, vec={vec}.")
    if rows % vec or tile % rows or rows * tile // vec > 1024:
        raise ValueError(f"Expected rows a multiple of vec ({vec}) that divides tile ({tile}) with at most 1024 "
                         f"threads (rows * tile / vec), but got rows={rows}.")
    (m, n), (dn, dm) = tuple(src.shape), tuple(dst.shape)
    if (dn, dm) != (n, m):
        raise ValueError(f"Expected dst of shape {(n, m)} for src of shape {(m, n)}, but got {(dn, dm)}.")
    tiles = math.ceil(m / tile) * math.ceil(n / tile)
    return transpose_tile[(tiles, 1, 1), (rows * tile // vec, 1, 1)](src, dst, tile, vec, rows, dst_rows)


@wb.kernel
def row_sum(a, out):
    """out[r] = sum_j a[r, j]: one block of RED threads per row (a slice a[r, None] of the tensor and
    of its identity tensor); a strided partial sum per thread, predicated with elem_less, then a
    tree reduction in shared memory (an unrolled loop with a barrier per level)."""
    buf = wb.shared_tensor(wb.Float32, wb.make_layout(RED))
    t = wb.thread_idx().x
    r = wb.block_idx().x
    row = a[r, None]
    crow = wb.make_identity_tensor(wb.shape(a))[r, None]
    acc = 0.0
    for k in range(wb.ceil_div(wb.size(row), RED)):
        if wb.elem_less(crow[k * RED + t], wb.shape(a)):
            acc += row[k * RED + t]
    buf[t] = acc
    wb.sync_threads()
    for level in range(int(math.log2(RED)) - 1, -1, -1):
        half = 1 << level
        if t < half:
            buf[t] = buf[t] + buf[t + half]
        wb.sync_threads()
    if t == 0:
        out[r] = buf[0]


@wb.kernel
def sgemm(A, B, C):
    """C = A @ B in fp32 on SIMT cores: 16x16 tiles of A and B staged in shared memory, each thread
    accumulating one element of C.  local_tile with a None keeps the k-tiles as a third mode
    (CuTe's ``local_tile(A, tiler, (m, _))``); identity tensors tiled the same way zero-fill the
    ragged edges of A and B and guard the store to C."""
    sA = wb.shared_tensor(wb.Float32, wb.make_layout((MM, MM), stride=(MM + 1, 1)))
    sB = wb.shared_tensor(wb.Float32, wb.make_layout((MM, MM), stride=(MM + 1, 1)))
    tx, ty, _ = wb.thread_idx()
    bx, by, _ = wb.block_idx()
    gA = wb.local_tile(A, (MM, MM), (by, None))          # (MM, MM, k-tiles)
    gB = wb.local_tile(B, (MM, MM), (None, bx))          # (MM, MM, k-tiles)
    cA = wb.local_tile(wb.make_identity_tensor(wb.shape(A)), (MM, MM), (by, None))
    cB = wb.local_tile(wb.make_identity_tensor(wb.shape(B)), (MM, MM), (None, bx))
    acc = 0.0
    for kt in range(wb.size(gA, mode=2)):
        sA[ty, tx] = gA[ty, tx, kt] if wb.elem_less(cA[ty, tx, kt], wb.shape(A)) else 0.0
        sB[ty, tx] = gB[ty, tx, kt] if wb.elem_less(cB[ty, tx, kt], wb.shape(B)) else 0.0
        wb.sync_threads()
        for kk in range(MM):
            acc += sA[ty, kk] * sB[kk, tx]
        wb.sync_threads()
    gC = wb.local_tile(C, (MM, MM), (by, bx))
    cC = wb.local_tile(wb.make_identity_tensor(wb.shape(C)), (MM, MM), (by, bx))
    if wb.elem_less(cC[ty, tx], wb.shape(C)):
        gC[ty, tx] = acc


@wb.kernel
def add_ptr(pa, pb, pc, m, n):
    """The pointer bypass: three wb.make_ptr pointers and two ints; tensors are built in the kernel."""
    a = wb.make_tensor(pa, wb.make_layout((m, n), stride=(n, 1)))
    b = wb.make_tensor(pb, wb.make_layout((m, n), stride=(n, 1)))
    c = wb.make_tensor(pc, wb.make_layout((m, n), stride=(n, 1)))
    i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
    if i < m * n:
        r = i // n
        j = i % n
        c[r, j] = a[r, j] + b[r, j]


# -- the optimisation ladder: c = a + b on an (M, N) fp32 tensor, four ways ----------------------------
# Each rung moves the same bytes; what changes is how many a thread keeps in flight (by Little's law,
# bytes in flight = bandwidth x latency bounds the bandwidth) and which addresses a warp and the
# consecutive blocks touch together (coalescing, DRAM locality).
LANES = 4                                                     # floats in one 128-bit access
LADDER_THREADS = wb.make_layout((4, 32), stride=(32, 1))      # 128 threads: 4 rows of one warp each
# (tiler, TV layout): thread t's value v lies at coordinate TV(t, v) of a 4x128 block tile
LADDER_TV = wb.make_layout_tv(LADDER_THREADS, wb.make_layout((1, LANES), stride=(LANES, 1)))


@wb.kernel
def add_naive(a, b, c):
    """Rung 1: one element per thread; thread (i, j) of a 2-D grid of 32x8 blocks adds element (i, j).
    Two 4-byte loads in flight per thread."""
    tx, ty, _ = wb.thread_idx()
    bx, by, _ = wb.block_idx()
    i = by * wb.block_dim().y + ty
    j = bx * wb.block_dim().x + tx
    if i < wb.shape(c)[0] and j < wb.shape(c)[1]:
        c[i, j] = a[i, j] + b[i, j]


@wb.kernel
def add_fragment(ta, tb, tc, coords, extent):
    """c = a + b on one thread's values (slices of the three tensors and of the identity tensor, in the
    same order): loaded into register fragments with vector copies, added, stored, when the thread's
    last value lies inside the tensor; element by element, predicated, on the ragged edge."""
    ra = wb.make_fragment(wb.make_layout(wb.size(ta)), wb.Float32)
    rb = wb.make_fragment(wb.make_layout(wb.size(ta)), wb.Float32)
    if wb.elem_less(coords[wb.size(ta) - 1], extent):
        wb.copy(ta, ra)
        wb.copy(tb, rb)
        for k in range(wb.size(ta)):
            ra[k] = ra[k] + rb[k]
        wb.copy(ra, tc)
    else:
        for k in range(wb.size(ta)):
            if wb.elem_less(coords[k], extent):
                tc[k] = ta[k] + tb[k]


@wb.kernel
def tile_of(i, tiles, rows, by_rows: wb.Constexpr):
    """Which tile of a (rows, tiles/rows) grid of tiles index i takes: CuTe's own (colexicographic) order
    walks down the rows first; by_rows walks along a row first, as row-major memory does."""
    tile = i
    if by_rows:   # a Constexpr: decided while tracing, so tile may become a coordinate pair
        tile = (i // (tiles // rows), i % (tiles // rows))
    return tile


@wb.kernel
def add_vectorized(a, b, c, by_rows: wb.Constexpr):
    """Rung 2: zipped_divide by (1, 4) makes ((1,4),(M, N/4)): tile (i, j) is 4 consecutive floats of
    row i, one 128-bit load per tensor per thread (four times rung 1's bytes in flight).  Thread t takes
    tile t in CuTe's order of the (M, N/4) mode, t -> (t % M, t // M): a warp then reads one tile from each
    of 32 rows, 32 separate 16-byte pieces.  by_rows: tile (t // (N/4), t % (N/4)), 512 contiguous bytes
    a warp."""
    t = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
    ga = wb.zipped_divide(a, (1, LANES))
    if t < wb.size(ga, mode=1):
        tile = tile_of(t, wb.size(ga, mode=1), wb.shape(a)[0], by_rows)
        cs = wb.zipped_divide(wb.make_identity_tensor(wb.shape(c)), (1, LANES))
        add_fragment(ga[None, tile], wb.zipped_divide(b, (1, LANES))[None, tile],
                     wb.zipped_divide(c, (1, LANES))[None, tile], cs[None, tile], wb.shape(c))


@wb.kernel
def add_tv(a, b, c, tv: wb.Constexpr, by_rows: wb.Constexpr):
    """Rungs 3 and 4: a thread/value layout.  Block `blk` takes tile blk of zipped_divide(x, tiler);
    composing the tile with the TV layout and slicing thread t gives exactly its values, in order
    (CuTe's canonical elementwise kernel): the warps of a block read whole 512-byte row segments.
    Rung 3 numbers the block tiles in CuTe's order (consecutive blocks go down the rows); rung 4
    remaps the block index to walk along the rows (by_rows), so consecutive blocks read consecutive
    memory."""
    tiler, layout_tv = tv
    tidx = wb.thread_idx().x
    blk = tile_of(wb.block_idx().x, wb.size(wb.zipped_divide(c, tiler), mode=1), wb.ceil_div(wb.shape(c)[0], tiler[0]),
                  by_rows)
    cs = wb.composition(wb.zipped_divide(wb.make_identity_tensor(wb.shape(c)), tiler)[None, blk], layout_tv)
    add_fragment(wb.composition(wb.zipped_divide(a, tiler)[None, blk], layout_tv)[tidx, None],
                 wb.composition(wb.zipped_divide(b, tiler)[None, blk], layout_tv)[tidx, None],
                 wb.composition(wb.zipped_divide(c, tiler)[None, blk], layout_tv)[tidx, None],
                 cs[tidx, None], wb.shape(c))


def ladder(m, n, *, variants=False):
    """[(rung, kernel, extra arguments, launch(a, b, c), threads launched)] on an (m, n) tensor: naive,
    vectorized, tv, remapped; variants adds rung 2 with its tiles by rows ('vectorized_by_rows')."""
    vgrid = ((math.ceil(m * math.ceil(n / LANES) / 256), 1, 1), (256, 1, 1))
    (tm, tn), _ = LADDER_TV
    blocks = math.ceil(m / tm) * math.ceil(n / tn)

    def tv(by_rows):
        return lambda a, b, c: add_tv[(blocks, 1, 1), (128, 1, 1)](a, b, c, LADDER_TV, by_rows)

    def vec(by_rows):
        return lambda a, b, c: add_vectorized[vgrid](a, b, c, by_rows)

    rungs = [("naive", add_naive, (), lambda a, b, c: add_naive[grid2(m, n, 32, 8)](a, b, c), m * n),
             ("vectorized", add_vectorized, (False,), vec(False), m * math.ceil(n / LANES)),
             ("tv", add_tv, (LADDER_TV, False), tv(False), blocks * 128),
             ("remapped", add_tv, (LADDER_TV, True), tv(True), blocks * 128)]
    if variants:
        rungs.append(("vectorized_by_rows", add_vectorized, (True,), vec(True), m * math.ceil(n / LANES)))
    return rungs


# -- how to run and check each example --------------------------------------------------------------
class Example:
    """extra: the kernel's arguments after the tensors (Constexpr values), for show_code and checks."""

    def __init__(self, name, kernel, make, launch, reference, outputs, rtol=1e-6, extra=()):
        self.name, self.kernel, self.make, self.launch = name, kernel, make, launch
        self.reference, self.outputs, self.rtol, self.extra = reference, outputs, rtol, tuple(extra)


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _poison(*shape):
    return np.full(shape, np.nan, np.float32)


def grid2(m, n, bx=16, by=16):
    return (math.ceil(n / bx), math.ceil(m / by), 1), (bx, by, 1)


# Every size is a non-multiple of the tiles (32x32 transpose, 8-element copy, 256-wide rows, 16x16 gemm),
# so each example runs its ragged-edge predication; vcopy's length n1 + 3 is odd.
SIZES = {
    "small": dict(n1=1000, m2=40, n2=56, rs=(6, 300), mm=(40, 24, 36)),                    # CI, CPU executor
    "irregular": dict(n1=999_999, m2=1000, n2=999, rs=(1000, 999), mm=(1000, 999, 250)),  # GPU + memcheck
    "large": dict(n1=(1 << 22) + 5, m2=4099, n2=4097, rs=(512, 4099), mm=(1000, 999, 513)),
}


def make_examples(size="small"):
    """The examples at a size of :data:`SIZES`: 'small' (CI on the CPU executor), 'irregular'
    (1000 x 999 class, for the GPU under compute-sanitizer) or 'large' (GPU)."""
    if size not in SIZES:
        raise ValueError(f"Expected a size in {sorted(SIZES)}, but got {size!r}.")
    z = SIZES[size]
    n1, m2, n2, rs, mm = z["n1"], z["m2"], z["n2"], z["rs"], z["mm"]

    def strided_vadd(rng):
        a = _f32(rng, 2 * n1)[::2]                       # stride 2
        b = _f32(rng, n1)
        return [a, b, _poison(n1)]

    ex = [
        Example("vadd", vadd, lambda rng: [_f32(rng, n1), _f32(rng, n1), _poison(n1)],
                lambda xs: vadd[(math.ceil(n1 / 256), 1, 1), (256, 1, 1)](*xs),
                lambda xs: [xs[0] + xs[1]], [2]),
        Example("vadd_strided", vadd, strided_vadd,
                lambda xs: vadd[(math.ceil(n1 / 256), 1, 1), (256, 1, 1)](*xs),
                lambda xs: [xs[0] + xs[1]], [2]),
        Example("vadd_2d_colmajor", vadd,
                lambda rng: [_f32(rng, m2, n2), np.asfortranarray(_f32(rng, m2, n2)), _poison(m2, n2)],
                lambda xs: vadd[(math.ceil(m2 * n2 / 128), 1, 1), (128, 1, 1)](*xs),
                lambda xs: [xs[0] + xs[1]], [2]),
        Example("copy2d", copy2d, lambda rng: [_f32(rng, m2, n2), np.asfortranarray(_poison(m2, n2))],
                lambda xs: copy2d[grid2(m2, n2)](*xs), lambda xs: [xs[0].copy()], [1]),
        Example("transpose_naive", transpose_naive, lambda rng: [_f32(rng, m2, n2), _poison(n2, m2)],
                lambda xs: transpose_naive[grid2(m2, n2)](*xs), lambda xs: [xs[0].T.copy()], [1]),
        Example("transpose_smem", transpose_smem, lambda rng: [_f32(rng, m2, n2), _poison(n2, m2)],
                lambda xs: transpose_smem[(math.ceil(n2 / TILE), math.ceil(m2 / TILE), 1), (TILE, ROWS, 1)](*xs),
                lambda xs: [xs[0].T.copy()], [1]),
        Example("vcopy", vcopy, lambda rng: [_f32(rng, n1 + 3), _poison(n1 + 3)],
                lambda xs: vcopy[(math.ceil((n1 + 3) / VEC / 128), 1, 1), (128, 1, 1)](*xs, VEC),
                lambda xs: [xs[0].copy()], [1], extra=(VEC,)),
        Example("vcopy_tv", vcopy_tv, lambda rng: [_f32(rng, n1 + 3), _poison(n1 + 3)],
                lambda xs: vcopy_tv[(math.ceil((n1 + 3) / 1024), 1, 1), (256, 1, 1)](
                    *[wb.from_dlpack(x, assumed_align=16) for x in xs], copy_tv(256, 1)),
                lambda xs: [xs[0].copy()], [1], extra=(copy_tv(256, 1),)),
        Example("transpose_tile", transpose_tile, lambda rng: [_f32(rng, m2, n2), _poison(n2, m2)],
                lambda xs: launch_transpose_tile(*[wb.from_dlpack(x, assumed_align=16) for x in xs]),
                lambda xs: [xs[0].T.copy()], [1], extra=(64, 4, 32, True)),
        Example("row_sum", row_sum, lambda rng: [_f32(rng, *rs), _poison(rs[0])],
                lambda xs: row_sum[(rs[0], 1, 1), (RED, 1, 1)](*xs),
                lambda xs: [xs[0].astype(np.float64).sum(axis=1)], [1], rtol=1e-4),
        *[Example(f"add_{name}", kernel, lambda rng: [_f32(rng, m2, n2), _f32(rng, m2, n2), _poison(m2, n2)],
                  lambda xs, launch=launch: launch(*[wb.from_dlpack(x, assumed_align=16) for x in xs]),
                  lambda xs: [xs[0] + xs[1]], [2], extra=extra)
          for name, kernel, extra, launch, _ in ladder(m2, n2, variants=True)],
        Example("sgemm", sgemm, lambda rng: [_f32(rng, mm[0], mm[2]), _f32(rng, mm[2], mm[1]), _poison(mm[0], mm[1])],
                lambda xs: sgemm[grid2(mm[0], mm[1], MM, MM)](*xs),
                lambda xs: [xs[0].astype(np.float64) @ xs[1].astype(np.float64)], [2], rtol=1e-4),
    ]
    return {e.name: e for e in ex}


def rel_error(out, ref) -> float:
    """||out - ref|| / ||ref|| in float64 (NaN anywhere -> inf)."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if not np.all(np.isfinite(out)):
        return math.inf
    den = np.linalg.norm(ref)
    return float(np.linalg.norm(out - ref) / (den if den else 1.0))
