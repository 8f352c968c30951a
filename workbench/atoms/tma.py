"""The Tensor Memory Accelerator's box as layouts: which tensor modes it walks, the box, and where each element
lands in shared memory.

A TMA descriptor (``cuTensorMapEncodeTiled``) sees a tensor as up to 5 dimensions, the first contiguous (stride
1), the others with strides in bytes that are multiples of 16; a load copies a box (at most 256 elements a
dimension, its first dimension a multiple of 16 bytes) to shared memory *row-major in the descriptor's order*:
box element (c0, c1, ...) lands at byte ``(c0 + b0 * (c1 + b1 * ...)) * bytes``, which then goes through the
descriptor's swizzle (``Swizzle<B,4,3>`` on the absolute byte address, B = 1/2/3 for 32/64/128-byte swizzles,
whose rows must be exactly that wide).  Elements outside the tensor read as zero; the transaction always counts
the whole box's bytes.

:func:`make_tma_box` derives all of it from the tensor's layout (CuTe mode order) and the shared-memory layout
of one box (a GMMA layout atom tiling, typically), and proves the shared layout is the function the TMA writes,
or names the first element where they differ.
"""

from __future__ import annotations

import numpy as np

from ..layout import ComposedLayout, Layout, Swizzle

__all__ = ["TmaBox", "make_tma_box", "MAX_TMA_BOX", "TMA_SWIZZLE_BYTES"]

MAX_TMA_BOX = 256
TMA_SWIZZLE_BYTES = {0: 0, 1: 32, 2: 64, 3: 128}


class TmaBox:
    """dims: the tensor modes in the descriptor's order (dims[0]: the stride-1 mode); box: the box extent of each
    tensor mode (CuTe order); swizzle_bits; element_bits; smem_layout: the shared layout it was proven against."""

    __slots__ = ("dims", "box", "swizzle_bits", "element_bits", "smem_layout")

    def __init__(self, dims, box, swizzle_bits, element_bits, smem_layout):
        self.dims, self.box, self.swizzle_bits = tuple(dims), tuple(box), swizzle_bits
        self.element_bits, self.smem_layout = element_bits, smem_layout

    @property
    def nbytes(self) -> int:
        """The bytes one load moves (and its mbarrier transaction counts): the whole box."""
        return int(np.prod(self.box)) * self.element_bits // 8

    @property
    def box_in_dim_order(self) -> tuple:
        return tuple(self.box[m] for m in self.dims)

    @property
    def alignment(self) -> int:
        """Bytes the shared destination must be aligned to: 128, or the swizzle's period (SW128: 1024)."""
        return max(128, 16 << (self.swizzle_bits + 3)) if self.swizzle_bits else 128

    def smem_byte(self, coord) -> int:
        """Where box element ``coord`` (CuTe mode order) lands, in bytes from the aligned destination."""
        lin, scale = 0, 1
        for m in self.dims:
            lin += coord[m] * scale
            scale *= self.box[m]
        a = lin * self.element_bits // 8
        return Swizzle(self.swizzle_bits, 4, 3)(a) if self.swizzle_bits else a

    def element_offsets(self) -> np.ndarray:
        """Every box element's destination element offset, indexed in the descriptor's order (row-major over
        dims reversed): what the CPU executor scatters a box with."""
        e = self.element_bits // 8
        n = int(np.prod(self.box))
        a = np.arange(n, dtype=np.int64) * e
        if self.swizzle_bits:
            a = Swizzle(self.swizzle_bits, 4, 3)(a)
        return a // e

    def __repr__(self):
        sw = f"SW{TMA_SWIZZLE_BYTES[self.swizzle_bits]}" if self.swizzle_bits else "no swizzle"
        return f"TmaBox(box={self.box}, dims={self.dims}, {sw}, {self.nbytes} B)"


def _smem_function(smem_layout, element_bits):
    """(B, f): the swizzle bits of a shared layout over 16-byte units (Swizzle<B,4,3> on bytes) and its
    unswizzled function."""
    if type(smem_layout) is Layout:
        return 0, smem_layout
    if type(smem_layout) is not ComposedLayout or type(smem_layout.inner) is not Swizzle:
        raise TypeError(f"make_tma_load: expected a shared-memory layout (a Layout or a swizzle composed with one), but "
                        f"got {smem_layout!r}.")
    sw = smem_layout.inner
    base = (128 // element_bits).bit_length() - 1
    if sw.bits and (sw.bits > 3 or sw.base != base or sw.shift != 3):
        raise ValueError(f"make_tma_load: TMA swizzles 16-byte chunks of 32/64/128-byte rows (Swizzle<B,4,3> on bytes, for "
                         f"{element_bits}-bit elements S<B,{base},3> on elements), but the shared layout has {sw}.")
    if smem_layout.offset != 0:
        raise ValueError(f"make_tma_load: expected the box's shared layout without an offset, but got {smem_layout}.")
    return sw.bits, smem_layout.outer


def _flat(x):
    return [y for e in x for y in _flat(e)] if type(x) is tuple else [x]


def make_tma_box(shape, stride, element_bits: int, smem_layout) -> TmaBox:
    """The TMA box of a tensor (static or symbolic ``shape``/``stride`` in elements, CuTe mode order; flat) loaded
    into ``smem_layout`` (static, one box: its shape is the box)."""
    rank = len(shape)
    if not 1 <= rank <= 5:
        raise ValueError(f"make_tma_load: TMA walks tensors of rank 1 to 5, but the tensor has rank {rank}.")
    b, f = _smem_function(smem_layout, element_bits)
    box = tuple(f[m].size for m in range(f.rank)) if type(f.shape) is tuple else (f.shape,)
    if len(box) != rank or not f.is_static:
        raise ValueError(f"make_tma_load: expected a static shared layout of rank {rank} (one box of the tensor), but "
                         f"got {smem_layout}.")
    for m, x in enumerate(box):
        if not 1 <= x <= MAX_TMA_BOX:
            raise ValueError(f"make_tma_load: a TMA box has 1 to {MAX_TMA_BOX} elements a mode, but mode {m} of the box "
                             f"has {x} ({smem_layout}); load it as several boxes.")
    ones = [m for m in range(rank) if stride[m] == 1]
    if not ones:
        raise ValueError(f"make_tma_load: TMA needs one contiguous mode (stride 1), but the strides are {tuple(stride)}.")
    first = ones[0]
    # the descriptor's further dimensions in the order the shared box walks them (smallest shared stride first), so
    # that the TMA's row-major box is the shared layout whatever the tensor's mode order (a rank-3 row-major box)
    def walk(m):
        leaves = [(sh, st) for sh, st in zip(_flat(f[m].shape), _flat(f[m].stride)) if sh > 1]
        return (min(abs(st) for _, st in leaves) if leaves else 1 << 62, m)
    dims = (first,) + tuple(sorted((m for m in range(rank) if m != first), key=walk))
    e = element_bits // 8
    inner_bytes = box[first] * e
    if inner_bytes % 16:
        raise ValueError(f"make_tma_load: the box's contiguous mode must span a multiple of 16 bytes, but mode {first} "
                         f"has {box[first]} elements of {e} B ({inner_bytes} B).")
    if b and inner_bytes != TMA_SWIZZLE_BYTES[b]:
        raise ValueError(f"make_tma_load: a {TMA_SWIZZLE_BYTES[b]}-byte swizzle needs rows of exactly "
                         f"{TMA_SWIZZLE_BYTES[b]} bytes in the contiguous mode, but the box has {inner_bytes} B "
                         f"({box[first]} elements); use a box whose contiguous mode spans {TMA_SWIZZLE_BYTES[b]} bytes, or the GMMA "
                         "atom whose swizzle matches the row.")
    tb = TmaBox(dims, box, b, element_bits, smem_layout)
    # the proof: every box element lands where the shared layout says
    n = int(np.prod(box))
    idx = np.arange(n, dtype=np.int64)
    crd = []
    for m in range(rank):
        crd.append(idx % box[m])
        idx = idx // box[m]
    want = np.asarray(smem_layout.offsets(), dtype=np.int64)
    lin = np.zeros(n, dtype=np.int64)
    scale = 1
    for m in dims:
        lin += crd[m] * scale
        scale *= box[m]
    got = lin * e
    if b:
        got = Swizzle(b, 4, 3)(got)
    got //= e
    bad = np.nonzero(got != want)[0]
    if bad.size:
        i = int(bad[0])
        c = tuple(int(x[i]) for x in crd)
        raise ValueError(f"make_tma_load: the TMA writes box element {c} at element {int(got[i])} of the shared tile "
                         f"(row-major over modes {dims} {'+ the swizzle' if b else ''}), but {smem_layout} puts it at "
                         f"{int(want[i])}; give the shared layout the box's contiguous mode innermost (e.g. "
                         "wb.tile_to_shape(wb.gmma_smem_atom('Layout_K_SW128_Atom', dtype), box)).")
    return tb

