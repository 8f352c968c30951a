"""GMMA shared-memory matrix descriptors: the 64-bit word a ``wgmma.mma_async`` reads an operand through.

A descriptor names no layout: it gives a start address, two byte offsets (LBO, SBO) and a swizzle mode, and
the hardware walks one fixed *canonical* layout with them (PTX ISA, "Matrix Descriptor"; CuTe's
``make_gmma_desc`` spells them out).  In elements, with ``T = 16 bytes / element bytes`` and ``W = 2**B`` the
swizzle's 16-byte chunks a row (INTER: B = 0, SW32/64/128: B = 1/2/3), an operand tile (MN, K) of one wgmma
(K = 32 bytes) is::

    K-major   INTER  ((8,m),(T,2)):((T,SBO),(1,LBO))        MN-major  INTER  ((T,1,m),(8,k)):((1,T,SBO),(T,LBO))
              SWxx   ((8,m),(T,2)):((W*T,SBO),(1,T))                  SWxx   ((T,W,m),(8,k)):((1,T,LBO),(W*T,SBO))

and the byte address ``start + offset * bytes`` then goes through ``Swizzle<B,4,3>`` on its absolute bits (so
the buffer must be aligned to the swizzle's period, 1024 bytes for SW128, and a start that moves by a k-block
inside a swizzled row is still the layout's own function).  :func:`make_gmma_desc` finds the descriptor of a
tile of a GMMA smem layout atom (``tile_to_shape(gmma_smem_atom(...), ...)``, sliced to one wgmma's k-block) by
probing the tile, then proves it by comparing every element's address with the tile's layout, or says which
element breaks the canonical form.  :meth:`GmmaDescriptor.address` is the hardware's walk, which the CPU
executor emulates ``wgmma`` with.
"""

from __future__ import annotations

from ..layout import ComposedLayout, Layout, Swizzle, slice_and_offset

__all__ = ["GmmaDescriptor", "make_gmma_desc", "k_block_tile", "SWIZZLE_MODES", "GMMA_ELEMENT_BITS", "check_reads"]

GMMA_ELEMENT_BITS = (8, 16, 32)     # fp8/int8, fp16/bf16, tf32: the widths a wgmma operand has
SMEM_WINDOW = 1 << 18               # the descriptor's start: 14 bits of 16-byte units (256 KiB of shared addresses)


def _check_int(what, name, v, ok, expected):
    if type(v) is not int:
        raise TypeError(f"{what}: expected {name} to be an int ({expected}), but got {type(v).__name__} {v!r}.")
    if not ok(v):
        raise ValueError(f"{what}: expected {name} {expected}, but got {v}.")

SWIZZLE_MODES = ("INTER", "SW32", "SW64", "SW128")        # by swizzle bits B = 0..3
_LAYOUT_TYPE = {0: 0, 3: 1, 2: 2, 1: 3}                     # B -> the descriptor's 2-bit layout type (bits 62-63)
_B_OF_TYPE = {v: k for k, v in _LAYOUT_TYPE.items()}


class GmmaDescriptor:
    """One operand's descriptor: ``major`` ('K' or 'MN'), ``swizzle_bits`` B, ``lbo``/``sbo`` in bytes,
    ``start`` in bytes (relative to the buffer, which is aligned to the swizzle's period), the element width,
    and the tile extents (``mn``, ``k``) it covers."""

    __slots__ = ("major", "swizzle_bits", "lbo", "sbo", "start", "element_bits", "mn", "k")

    def __init__(self, major, swizzle_bits, lbo, sbo, start, element_bits, mn, k):
        what = "GmmaDescriptor"
        if major not in ("K", "MN"):
            raise ValueError(f"{what}: expected major 'K' or 'MN', but got {major!r}.")
        _check_int(what, "swizzle_bits", swizzle_bits, lambda v: 0 <= v <= 3, "0 to 3 (INTER, SW32, SW64, SW128)")
        _check_int(what, "element_bits", element_bits, lambda v: v in GMMA_ELEMENT_BITS, "8, 16 or 32")
        for name, v in (("lbo", lbo), ("sbo", sbo), ("start", start)):
            _check_int(what, name, v, lambda v: 0 <= v < SMEM_WINDOW and v % 16 == 0,
                       "a multiple of 16 bytes in [0, 256 KiB) (14 bits of 16-byte units)")
        for name, v in (("mn", mn), ("k", k)):
            _check_int(what, name, v, lambda v: v > 0, "> 0")
        self.major, self.swizzle_bits, self.lbo, self.sbo = major, swizzle_bits, lbo, sbo
        self.start, self.element_bits, self.mn, self.k = start, element_bits, mn, k

    @property
    def swizzle(self) -> str:
        return SWIZZLE_MODES[self.swizzle_bits]

    @property
    def alignment(self) -> int:
        """Bytes the buffer must be aligned to: the byte swizzle's period (16 without a swizzle)."""
        return 16 << (self.swizzle_bits + 3) if self.swizzle_bits else 16

    def static_bits(self) -> int:
        """The descriptor word without its start address: LBO (bits 16-29), SBO (32-45), layout type (62-63),
        all in 16-byte units; base offset 0 (the buffer is aligned to the swizzle's period)."""
        return ((self.lbo >> 4) << 16) | ((self.sbo >> 4) << 32) | (_LAYOUT_TYPE[self.swizzle_bits] << 62)

    def encode(self, address: int | None = None) -> int:
        """The 64-bit word for a buffer at shared-memory ``address`` (default 0): start in bits 0-13."""
        a = (address or 0) + self.start
        if type(a) is not int or not 0 <= a < SMEM_WINDOW or a % 16:
            raise ValueError(f"GmmaDescriptor.encode: expected a 16-byte aligned shared address + start in [0, 256 KiB) "
                             f"(the descriptor's 14-bit start field), but got {address!r} + {self.start} = {a!r}.")
        return self.static_bits() | (a >> 4)

    @staticmethod
    def decode(word: int, major: str, element_bits: int, mn: int, k: int) -> GmmaDescriptor:
        """The fields of a descriptor word (start relative to shared address 0)."""
        return GmmaDescriptor(major, _B_OF_TYPE[(word >> 62) & 3], ((word >> 16) & 0x3FFF) << 4,
                              ((word >> 32) & 0x3FFF) << 4, (word & 0x3FFF) << 4, element_bits, mn, k)

    def canonical_offset(self, mn: int, k: int) -> int:
        """Element offset of (mn, k) from the start in the canonical layout, before the swizzle."""
        e = self.element_bits // 8
        T, W = 16 // e, 1 << self.swizzle_bits
        lbo, sbo = self.lbo // e, self.sbo // e
        if self.major == "K":
            r, g, c, j = mn % 8, mn // 8, k % T, k // T
            if self.swizzle_bits == 0:
                return r * T + g * sbo + c + j * lbo
            return r * (W * T) + g * sbo + c + j * T
        c, q, g, r, j = mn % T, (mn // T) % W, mn // (T * W), k % 8, k // 8
        if self.swizzle_bits == 0:
            return c + g * sbo + r * T + j * lbo
        return c + q * T + g * lbo + r * (W * T) + j * sbo

    def address(self, mn: int, k: int) -> int:
        """The byte address (relative to the aligned buffer) the hardware reads element (mn, k) from: the
        canonical offset, then ``Swizzle<B,4,3>`` on the absolute byte address."""
        a = self.start + self.canonical_offset(mn, k) * (self.element_bits // 8)
        return Swizzle(self.swizzle_bits, 4, 3)(a) if self.swizzle_bits else a

    def fields(self) -> dict:
        return {"major": self.major, "swizzle": self.swizzle, "start_bytes": self.start, "LBO_bytes": self.lbo,
                "SBO_bytes": self.sbo, "layout_type": _LAYOUT_TYPE[self.swizzle_bits], "base_offset": 0,
                "word": f"0x{self.encode():016x}"}

    def __repr__(self):
        return (f"GmmaDescriptor({self.major}-major {self.swizzle}, start={self.start} B, LBO={self.lbo} B, "
                f"SBO={self.sbo} B, {self.mn}x{self.k} of {self.element_bits}-bit)")


def _parts(tile, element_bits):
    """(B, offset, f) of a tile layout: its swizzle's bits (checked to be a GMMA swizzle for this element
    width), the offset inside it and the unswizzled (mn, k) -> element offset function."""
    T = 128 // element_bits
    if type(tile) is Layout:
        return 0, 0, tile
    if type(tile) is not ComposedLayout or type(tile.inner) is not Swizzle:
        raise TypeError(f"make_gmma_desc: expected a shared-memory layout (a Layout, or a swizzle composed with one), "
                        f"but got {tile!r}.")
    sw = tile.inner
    base = T.bit_length() - 1
    if sw.bits and (sw.base != base or sw.shift != 3 or sw.bits > 3):
        raise ValueError(f"make_gmma_desc: GMMA reads through Swizzle<B,4,3> on byte addresses (for {element_bits}-bit "
                         f"elements S<B,{base},3> on element offsets, B = 1, 2, 3), but the layout has {sw}; build it "
                         "with wb.tile_to_shape(wb.gmma_smem_atom(...), shape).")
    return sw.bits, tile.offset, tile.outer


def make_gmma_desc(tile, element_bits: int, major: str, mn: int, k: int) -> GmmaDescriptor:
    """The descriptor of one wgmma operand tile: ``tile`` maps (mn, k) of an (mn, k) tile (mn = 64 for A, N for
    B; k = 32 bytes of elements; as the index mn + MN * k, CuTe's order) to element offsets in an aligned shared buffer (``S o off o L``, static).
    ``major`` is what the atom expects ('K' or 'MN').  Raises, naming the first element whose offset the
    canonical layout cannot give, when the tile is not a GMMA layout."""
    if major not in ("K", "MN"):
        raise ValueError(f"make_gmma_desc: expected major 'K' or 'MN', but got {major!r}.")
    _check_int("make_gmma_desc", "element_bits", element_bits, lambda v: v in GMMA_ELEMENT_BITS,
               "8, 16 or 32 (a wgmma operand's element width)")
    for name, v in (("mn", mn), ("k", k)):
        _check_int("make_gmma_desc", name, v, lambda v: v > 0, "> 0")
    e = element_bits // 8
    T = 16 // e
    b, off, f = _parts(tile, element_bits)
    W = 1 << b
    if type(off) is not int:
        raise ValueError(f"make_gmma_desc: expected a static offset inside the swizzle, but got {off}.")

    if f.size != mn * k or not f.is_static:
        raise ValueError(f"make_gmma_desc: expected a static tile of {mn}x{k} elements (one wgmma's operand), but got "
                         f"{f}.")

    def at(x, y):   # (mn, k) in the atom's value order: index x + mn * y (CuTe's colexicographic order)
        return off + f(x + mn * y)

    start = off
    if major == "K":
        sbo = (at(8, 0) - start) if mn > 8 else 0
        lbo = (at(0, T) - start) if b == 0 else T
    else:
        g = T * W
        first = (at(g, 0) - start) if mn > g else 0
        second = (at(0, 8) - start) if k > 8 else 0
        sbo, lbo = (first, second) if b == 0 else (second, first)
    if start % T or sbo % T or lbo % T or sbo < 0 or lbo < 0:
        raise ValueError(f"make_gmma_desc: a descriptor's start and strides are in 16-byte units, but the tile gives "
                         f"start {start * e} B, LBO {lbo * e} B, SBO {sbo * e} B ({major}-major {SWIZZLE_MODES[b]}); "
                         "the tile must start at a 16-byte boundary of a GMMA smem layout atom tiling.")
    if not 0 <= start * e < SMEM_WINDOW:
        raise ValueError(f"make_gmma_desc: expected the tile to start in [0, 256 KiB) of shared memory (the "
                         f"descriptor's 14-bit start field of 16-byte units), but it starts at byte {start * e}.")
    for v, what in ((lbo, "LBO"), (sbo, "SBO")):
        if v * e >= 1 << 18:
            raise ValueError(f"make_gmma_desc: {what} = {v * e} bytes does not fit the descriptor's 14 bits of 16-byte "
                             "units (< 256 KiB).")
    d = GmmaDescriptor(major, b, lbo * e, sbo * e, start * e, element_bits, mn, k)
    sw = Swizzle(b, T.bit_length() - 1, 3) if b else None
    for y in range(k):
        for x in range(mn):
            want = at(x, y)
            want = sw(want) if sw else want
            got = d.address(x, y)
            if got != want * e:
                raise ValueError(
                    f"make_gmma_desc: the tile is not a {major}-major GMMA layout ({SWIZZLE_MODES[b]}): element "
                    f"(mn={x}, k={y}) lies at byte {want * e}, but the descriptor (LBO {d.lbo} B, SBO {d.sbo} B) "
                    f"reads byte {got}; build the shared tensor with wb.tile_to_shape(wb.gmma_smem_atom("
                    f"'Layout_{major}_..._Atom', dtype), shape) and partition it with the tiled MMA.")
    return d


def check_reads(d: GmmaDescriptor, tile, what="GmmaDescriptor"):
    """Raise ValueError unless descriptor ``d`` reads exactly ``tile`` (index x + mn * y -> element offset from the
    aligned buffer, swizzle included): the first element where its walk and the tile differ."""
    e = d.element_bits // 8
    if tile.size != d.mn * d.k:
        raise ValueError(f"{what}: expected the tile the descriptor was made from ({d.mn} x {d.k} elements), but got "
                         f"{tile} of size {tile.size}.")
    for y in range(d.k):
        for x in range(d.mn):
            want, got = tile(x + d.mn * y) * e, d.address(x, y)
            if got != want:
                raise ValueError(f"{what}: the descriptor does not read this tile: element (mn={x}, k={y}) lies at byte "
                                 f"{want} of {tile}, but {d} reads byte {got}; pass the tile it was made from.")


def k_block_tile(partition, kb: int, mn: int = 0):
    """The operand tile of one wgmma: k-block ``kb`` (and MN-block ``mn``) of a thread's partition (V, MN, K) of a
    GMMA smem layout (``thr_mma.partition_A/B``), as a layout from the buffer's start (the swizzle kept, the
    offset folded in): what :func:`make_gmma_desc` takes and the views draw."""
    outer = partition.outer if type(partition) is ComposedLayout else partition
    if type(outer) is not Layout or outer.rank != 3:
        raise ValueError(f"k_block_tile: expected a thread's (V, MN, K) partition (rank 3), but got {partition}.")
    for name, v, m in (("kb", kb, 2), ("mn", mn, 1)):
        n = outer[m].size
        _check_int("k_block_tile", name, v, lambda v, n=n: 0 <= v < n, f"in [0, {n}) (the partition's {('MN', 'K')[m - 1]} "
                   f"blocks)")
    v, off = slice_and_offset((None, mn, kb), outer)
    if type(partition) is ComposedLayout:
        return ComposedLayout(partition.inner, partition.offset + off, v)
    return ComposedLayout(Swizzle(0, 4, 3), off, v) if off else v
