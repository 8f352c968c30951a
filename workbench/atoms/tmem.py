"""Blackwell tensor memory (TMEM) on the host: the allocator, TMEM tensors, the UMMA accumulator fragments
(CuTe's ``UMMA::tmem_frg``), the tcgen05 ld/st/cp copy atoms (CuTe's ``Copy_Traits<SM100_TMEM_LOAD_*>``,
``SM100_TMEM_STORE_*``, ``SM100_UTCCP_*``) and ``make_tmem_copy`` (cute/atom/copy_traits_sm100.hpp).

TMEM is 128 lanes (CuTe: data paths, DP) x 512 columns of 32 bits per SM.  CuTe addresses it as
``lane << 16 | column`` and lays tensors out in units of the value type T: a lane step is ``TMEM::DP<T>``
(65536 for 32-bit T, 131072 for 16-bit T: the sub-word index sits in the low bits), a column step is
32 / bits(T) units.  The copy atoms' ``val_id_bits`` is CuTe's ``ValID`` (bit index -> TMEM bit address,
``TMEM::DP_b`` = 2^21 a lane).  Warp w of a warpgroup may only reach lanes 32*(w%4) .. 32*(w%4)+31
(``tcgen05 ld/st``); :func:`make_tmem_copy` checks every thread of the tiled copy against that.
"""

from __future__ import annotations

import difflib
import re

from .. import _element_types as et
from ..layout import (
    Layout,
    coalesce,
    compact_col_major,
    composition,
    filter_,
    filter_zeros,
    left_inverse,
    make_layout,
    product_each,
    slice_and_offset,
    tiled_product,
)
from .copy import EXTENSIONS, CopyAtom, upcast
from .tiled import TiledCopy

__all__ = ["TMEM_LANES", "TMEM_COLUMNS", "MAX_CAPACITY_BITS", "DP_b", "tmem_dp", "TmemAllocator", "TmemTensor",
           "tmem_frg", "tmem_sf_frg", "SF_ALLOC_MODES", "TmemCopyAtom", "tmem_copy_atom", "tmem_copy_atom_names", "make_tmem_copy", "make_utccp_copy",
           "TmemTiledCopy",
           "tmem_address", "tmem_lane", "tmem_column"]

TMEM_LANES = 128
TMEM_COLUMNS = 512
MAX_CAPACITY_BITS = 128 * 512 * 32     # CuTe's TMEM::MAX_CAPACITY_BITS
DP_b = 1 << 21                          # CuTe's TMEM::DP_b: a lane in bit addressing


def tmem_dp(bits: int) -> int:
    """CuTe's ``TMEM::DP<T>``: the lane stride in units of a ``bits``-wide T (65536 << log2(32 / bits))."""
    if bits not in (1, 2, 4, 6, 8, 16, 32):
        raise ValueError(f"tmem_dp: TMEM holds values of at most 32 bits (8, 16, 32, sub-byte); got {bits} bits.")
    shift = {1: 5, 2: 4, 4: 3, 6: 2, 8: 2, 16: 1, 32: 0}[bits]
    return 65536 << shift


def tmem_address(lane: int, column: int) -> int:
    """CuTe's 32-bit TMEM address: ``lane << 16 | column``."""
    if not 0 <= lane < TMEM_LANES or not 0 <= column < TMEM_COLUMNS:
        raise ValueError(f"tmem_address: expected a lane in [0, 128) and a column in [0, 512), but got lane {lane}, "
                         f"column {column}.")
    return (lane << 16) | column


def tmem_lane(address: int) -> int:
    return (address >> 16) & 0xFFFF


def tmem_column(address: int) -> int:
    return address & 0xFFFF


# ---- allocation ---------------------------------------------------------------------------------------------

class TmemAllocator:
    """CuTe's ``TMEM::Allocator1Sm`` (``cta_group=1``) / ``Allocator2Sm`` (``cta_group=2``: one warp of each of
    the two CTAs allocates the same columns) as a host model of one SM's 512 columns.

    ``allocate(num_columns)`` takes a power of two in 32..512 and returns CuTe's address (lane 0, the first
    column); ``free(address, num_columns)`` returns them; ``release_allocation_lock()`` (tcgen05 relinquish_alloc_permit)
    forbids further allocations by this CTA.  The model places an allocation at the lowest free column that is a
    multiple of its size; the hardware's placement is its own, so read the address, never assume it."""

    ColumnsPerAllocationSlice = 32
    Sm100TmemCapacityColumns = 512

    def __init__(self, cta_group: int = 1):
        if cta_group not in (1, 2):
            raise ValueError(f"TmemAllocator: expected cta_group 1 (Allocator1Sm) or 2 (Allocator2Sm), but got {cta_group!r}.")
        self.cta_group = cta_group
        self.allocations: dict[int, int] = {}   # first column -> columns
        self.relinquished = False

    @staticmethod
    def _check_columns(n, what):
        if type(n) is not int or n < 32 or n > 512 or n & (n - 1):
            raise ValueError(f"{what}: num_columns must be a power of 2 with 32 <= num_columns <= 512 (CuTe's "
                             f"Allocator precondition), but got {n!r}.")

    @property
    def columns_in_use(self) -> int:
        return sum(self.allocations.values())

    def allocate(self, num_columns: int) -> int:
        self._check_columns(num_columns, "TmemAllocator.allocate")
        if self.relinquished:
            raise RuntimeError("TmemAllocator.allocate: this CTA relinquished its allocation permit "
                               "(release_allocation_lock); no further tcgen05 alloc may be issued.")
        for start in range(0, TMEM_COLUMNS, num_columns):
            if all(s + n <= start or start + num_columns <= s for s, n in self.allocations.items()):
                self.allocations[start] = num_columns
                return tmem_address(0, start)
        raise RuntimeError(f"TmemAllocator.allocate({num_columns}): only {TMEM_COLUMNS - self.columns_in_use} of 512 "
                           f"columns are free ({sorted(self.allocations.items())} (column, size) taken); on the device "
                           "tcgen05 alloc would block until another CTA frees columns.")

    def free(self, address: int, num_columns: int) -> None:
        self._check_columns(num_columns, "TmemAllocator.free")
        col, lane = tmem_column(address), tmem_lane(address)
        if lane or self.allocations.get(col) != num_columns:
            raise ValueError(f"TmemAllocator.free(0x{address:08x}, {num_columns}): no allocation of {num_columns} "
                             f"columns starts there; allocations: {sorted(self.allocations.items())}.")
        del self.allocations[col]

    def release_allocation_lock(self) -> None:
        self.relinquished = True

    def __repr__(self):
        return (f"TmemAllocator(cta_group={self.cta_group}, allocations={sorted(self.allocations.items())}"
                f"{', relinquished' if self.relinquished else ''})")


# ---- TMEM tensors -------------------------------------------------------------------------------------------

class TmemTensor:
    """A tensor in tensor memory: ``value_type``, ``layout`` (coordinate -> offset in units of the value type,
    CuTe's tmem_ptr<T> arithmetic: a lane is ``tmem_dp(bits)`` units) and ``base`` (CuTe's 32-bit address of
    its origin, 0 until allocated)."""

    __slots__ = ("value_type", "layout", "base", "offset")

    def __init__(self, value_type, layout: Layout, base: int = 0, offset: int = 0):
        self.value_type, self.layout, self.base, self.offset = value_type, layout, base, offset

    @property
    def shape(self):
        return self.layout.shape

    @property
    def memspace(self) -> str:
        return "tmem"

    @property
    def dp(self) -> int:
        return tmem_dp(self.value_type.bits)

    def __getitem__(self, crd):
        sub, off = slice_and_offset(self.layout, crd) if crd is not None else (self.layout, 0)
        if not isinstance(sub, Layout):   # a full coordinate: a one-element tensor
            sub, off = Layout(1, 0), off
        return TmemTensor(self.value_type, sub, self.base, self.offset + off)

    def with_base(self, address: int) -> TmemTensor:
        """The same tensor at an allocated address (``TmemAllocator.allocate``)."""
        return TmemTensor(self.value_type, self.layout, address, self.offset)

    def filter_zeros(self) -> TmemTensor:
        """CuTe's ``filter_zeros(tensor)``: the same data with every stride-0 mode's extent set to 1 (a scale-factor
        fragment's VecSize mode, before ``make_utccp_copy``)."""
        return TmemTensor(self.value_type, filter_zeros(self.layout), self.base, self.offset)

    def lane_column(self, crd) -> tuple:
        """(lane, 32-bit column, sub-word index) of the element at ``crd`` (an index or a coordinate)."""
        off = self.offset + self.layout(crd)
        dp = self.dp
        per = dp // 65536      # values per 32-bit column
        lane, col = divmod(off, dp)
        return tmem_lane(self.base) + lane, tmem_column(self.base) + col // per, col % per

    def address(self, crd) -> int:
        """CuTe's 32-bit address of the 32-bit column holding the element at ``crd`` (lane << 16 | column)."""
        lane, col, _ = self.lane_column(crd)
        return (lane << 16) | col

    def lanes(self) -> list:
        """The TMEM lanes the tensor touches, sorted."""
        return sorted({self.lane_column(i)[0] for i in range(self.layout.size)})

    def columns(self) -> list:
        """The 32-bit columns the tensor touches (relative to its base), sorted."""
        return sorted({self.lane_column(i)[1] - tmem_column(self.base) for i in range(self.layout.size)})

    def __repr__(self):
        return f"tmem_[{self.value_type.bits}b](0x{self.base:08x}+{self.offset}) o {self.layout}"


def _shape_tuple(shape, what):
    if type(shape) is not tuple or len(shape) < 1 or type(shape[0]) is not tuple or len(shape[0]) != 2:
        raise ValueError(f"{what}: Expected post-partitioned shape ((M_MMA,N_MMA),...) (CuTe's static_assert), but got "
                         f"{shape!r}; use atom.partition_shape_C((M, N)).")


def _size(s):
    if type(s) is tuple:
        p = 1
        for x in s:
            p *= _size(x)
        return p
    return s


def tmem_frg(value_type, shape, n_sm: int = 1, alloc: str = "Interleaved", storage_bits: int = 32) -> TmemTensor:
    """CuTe's ``UMMA::tmem_frg<ValueType, StorageType, N_SM, TmemAllocMode>::make(shape)``: ``shape`` is
    ((M_MMA, N_MMA), MMA_M, MMA_N, ...); ``alloc`` 'Interleaved', 'NonInterleaved' or 'Duplicated'.  Refused
    with CuTe's reason where CuTe's static_asserts refuse (more than 128x512x32 bits, an M the data-path
    layout has no atom for, an allocation mode the SM count does not take)."""
    if not isinstance(value_type, et.ElementType):
        raise TypeError(f"tmem_frg: expected an element type, but got {type(value_type).__name__}.")
    what = f"tmem_frg<{value_type}, {storage_bits}b, {n_sm}SM, {alloc}>"
    _shape_tuple(shape, what)
    if value_type.bits > storage_bits:
        raise ValueError(f"{what}: TMEM MMA allocations require StorageType big enough for ValueType.")
    if _size(shape) * storage_bits > MAX_CAPACITY_BITS:
        raise ValueError(f"{what}{shape}: Requesting more TMEM than is available. ({_size(shape)} values of "
                         f"{storage_bits} bits > 128 lanes x 512 columns x 32 bits; CuTe's static_assert)")
    m_mma, n_mma = _size(shape[0][0]), _size(shape[0][1])
    rest = tuple(shape[1:])
    restride = Layout((128, 16384), (tmem_dp(value_type.bits), storage_bits // value_type.bits))
    rest_layout = make_layout(rest) if rest else Layout(1, 0)
    if n_sm == 1:
        if alloc not in ("Interleaved", "NonInterleaved"):
            raise ValueError(f"{what}: UMMA_1SM only accepts Interleaved or NonInterleaved")
        if m_mma == 64:
            atom = Layout(((16, 4), n_mma), ((1, 32), 128))
            ts = 1 if alloc == "Interleaved" else 2
            rest_layout = Layout(rest, compact_col_major(rest, ts)) if rest else Layout(1, 0)
        elif m_mma == 128:
            atom = Layout((128, n_mma), (1, 128))
        else:
            raise ValueError(f"{what}: UMMA_1SM M-mode size should be 64 or 128. (got M_MMA = {m_mma})")
    elif n_sm == 2:
        if alloc not in ("Interleaved", "Duplicated"):
            raise ValueError(f"{what}: UMMA_2SM only accepts Interleaved or Duplicated")
        if m_mma == 32:
            if alloc != "Interleaved":
                raise ValueError(f"{what}: Only TmemAllocMode::Interleaved is supported for UMMA_2SM M_MMA=32")
            atom = Layout((32, (n_mma // 4, 4)), (1, (128, 32)))
        elif m_mma == 64 and alloc == "Interleaved":
            atom = Layout((64, (n_mma // 2, 2)), (1, (128, 64)))
        elif m_mma in (64, 128):
            atom = Layout((128, n_mma), (1, 128))
        else:
            raise ValueError(f"{what}: UMMA_2SM M-mode size should be 32 or 64 or 128. (got M_MMA = {m_mma})")
    else:
        raise ValueError(f"{what}: UMMA expects N_SM == 1 or N_SM == 2")
    logical = tiled_product(atom, rest_layout)
    return TmemTensor(value_type, composition(restride, logical))


def _rank(s):
    return len(s) if type(s) is tuple else 1


SF_ALLOC_MODES = ("ScaleFactorDuplicated4by1", "ScaleFactorDuplicated2by2")


def tmem_sf_frg(value_type, sf_vec_size: int, n_sm: int, is_sfa: bool, shape,
                alloc: str = "ScaleFactorDuplicated4by1") -> TmemTensor:
    """CuTe's ``UMMA::tmem_sf_frg<ValueType, SFVecSize, N_SM, Is_SFA, TmemAlloc>::make(shape)``: the scale factors
    of a block-scaled UMMA in tensor memory (a block-scaled atom's ``FrgTypeSFA`` / ``FrgTypeSFB``).

    ``shape`` is the MMA-SF partitioned shape ((MMA_MN, (VecSize, NSF)), num_MMA_MN, num_MMA_K, ...), as CUTLASS's
    ``Sm1xxBlockScaledConfig::deduce_smem_layoutSFA/SFB`` makes it (the atoms' ``smem_layout_SFA/SFB``).  One
    scale factor is one byte: four share a 32-bit column (CuTe's column address step is one value here, not a
    column), the VecSize mode has stride 0 (one factor scales VecSize values along K), and every factor is
    replicated in the four 32-lane sub-partitions (the 4x1 data path; the 2x2 path of SFB for a 2-SM M=128 atom
    replicates twice in each CTA's two halves), so the fragment's first mode is four times MMA_MN."""
    if not isinstance(value_type, et.ElementType):
        raise TypeError(f"tmem_sf_frg: expected an element type, but got {type(value_type).__name__}.")
    what = f"tmem_sf_frg<{value_type}, {sf_vec_size}, {n_sm}SM, {'SFA' if is_sfa else 'SFB'}, {alloc}>"
    if alloc not in SF_ALLOC_MODES:
        raise ValueError(f"{what}: expected alloc in {SF_ALLOC_MODES}, but got {alloc!r}.")
    if type(shape) is not tuple or len(shape) < 1 or type(shape[0]) is not tuple or len(shape[0]) != 2:
        raise ValueError(f"{what}: Expected post-partitioned shape ((M_MMA,N_MMA),...). (CuTe's static_assert), but got "
                         f"{shape!r}.")
    if len(shape) < 3:
        raise ValueError(f"{what}: Expected an MMA partitioned tensor (CuTe's static_assert: rank >= 3, "
                         f"((MMA), num_MMA_MN, num_MMA_K, ...)), but got {shape!r}.")
    if _rank(shape[0][1]) != 2:
        raise ValueError(f"{what}: Expected an MMA-SF partitioned tensor (CuTe's static_assert: the K mode is "
                         f"(VecSize, NSF)), but got {shape!r}.")
    mn, vs, nsf = _size(shape[0][0]), _size(shape[0][1][0]), _size(shape[0][1][1])
    restride = Layout((128, 16384), (tmem_dp(value_type.bits), 1))
    if is_sfa or alloc == "ScaleFactorDuplicated4by1":
        if mn % 32:
            raise ValueError(f"{what}: MMA_MN = {mn} is not a multiple of the 32 lanes of a sub-partition (CuTe's "
                             "Int<MMA_MN/32> would drop the remainder).")
        atom = Layout((((32, mn // 32), 4), (vs, nsf)), (((1, 512), 32), (0, 128)))
    else:
        if n_sm != 2:
            raise ValueError(f"{what}: Should be 2x2 Datapath (CuTe's static_assert: N_SM == 2).")
        if mn % 64:
            raise ValueError(f"{what}: MMA_MN = {mn} is not a multiple of 64 (two halves of 32 lanes; CuTe's "
                             "Int<MMA_MN/2/32> would drop the remainder).")
        atom = Layout((((32, mn // 64), 2, 2), (vs, nsf)), (((1, 512), 64, 32), (0, 128)))
    logical = tiled_product(atom, make_layout(tuple(shape[1:])))
    return TmemTensor(value_type, composition(restride, logical))


# ---- copy atoms ---------------------------------------------------------------------------------------------

# tcgen05 ld/st shapes -> (lanes, ValID bits per lane for x1, DstLayout (thread, value) -> bit for repeat r)
def _ld_dst(shape, r):
    if shape == "16dp256b":
        return Layout(((4, 8), (64, 2, r)), ((64, 256 * r), (1, 2048 * r, 256)))
    if shape == "16dp128b":
        return Layout(((4, 8), (32, 2, r)), ((32, 128 * r), (1, 1024 * r, 128)))
    if shape == "16dp64b":
        return Layout(((2, 2, 8), (32, r)), ((512 * r, 32, 64 * r), (1, 64)))
    if shape == "16dp32b":
        return Layout(((16, 2), 32 * r), ((64 * r, 32 * r), 1))
    return Layout((32, 32 * r), (32 * r, 1))   # 32dp32b


_LD_SHAPES = {"16dp256b": (16, 256, (1, 2, 4, 8, 16, 32)), "16dp128b": (16, 128, (1, 2, 4, 8, 16, 32, 64)),
              "16dp64b": (16, 64, (1, 2, 4, 8, 16, 32, 64, 128)), "16dp32b": (16, 64, (1, 2, 4, 8, 16, 32, 64, 128)),
              "32dp32b": (32, 32, (1, 2, 4, 8, 16, 32, 64, 128))}
_TMEM_RE = re.compile(r"^SM100_TMEM_(LOAD|STORE)_(16dp256b|16dp128b|16dp64b|16dp32b|32dp32b)(\d+)x(_16b)?$")


def _tmem_traits(name):
    m = _TMEM_RE.match(name)
    if not m:
        return None
    op, shape, r, pack = m.group(1), m.group(2), int(m.group(3)), bool(m.group(4))
    dps, bits, reps = _LD_SHAPES[shape]
    if r not in reps:
        return None
    w = bits * r
    val_id = Layout(((16, w // 16), dps), ((1, 32), DP_b)) if pack else Layout((w, dps), (1, DP_b))
    tmem_side = Layout((32, 32 * w * dps // 32), (0, 1))
    reg_side = _ld_dst(shape, r)
    src, dst = (tmem_side, reg_side) if op == "LOAD" else (reg_side, tmem_side)
    return Layout(32, 1), val_id, src, dst, tmem_side, ("tcgen05_ld" if op == "LOAD" else "tcgen05_st"), \
        (shape, dps, r, pack)


def _utccp():
    one = lambda b: Layout((1, b), (0, 1))            # noqa: E731
    two = lambda b: Layout((2, b), (0, 1))            # noqa: E731
    vid = {
        "128dp256bit": Layout((128, 256), (DP_b, 1)),
        "128dp128bit": Layout((128, 128), (DP_b, 1)),
        "4dp256bit": Layout((128, 256), (DP_b, 1)),
        "4x32dp128bit": Layout((32, 128, 4), (DP_b, 1, DP_b * 32)),
        "2x64dp128bitlw0213": Layout((64, 128, 2), (DP_b, 1, DP_b * 64)),
        "2x64dp128bitlw0123": Layout((32, 128, 2, 2), (DP_b, 1, DP_b * 64, DP_b * 32)),
    }
    cat = {}
    for shape, v in vid.items():
        for cta in (1, 2):
            t = cta
            if shape == "128dp256bit":
                s = d = one(32768) if cta == 1 else two(32768)
            elif shape == "128dp128bit":
                s = d = one(16384) if cta == 1 else two(16384)
            elif shape == "4dp256bit":
                s = d = Layout((t, (4, 256)), (0, (32, 128)))
            elif shape == "4x32dp128bit":
                s, d = Layout((t, (32, 128, 4)), (0, (1, 32, 0))), Layout((t, 16384), (0, 1))
            elif shape == "2x64dp128bitlw0213":
                s, d = Layout((t, (64, 128, 2)), (0, (1, 64, 0))), Layout((t, 16384), (0, 1))
            else:
                s, d = Layout((t, (32, 128, 2, 2)), (0, (1, 32, 4096, 0))), Layout((t, 16384), (0, 1))
            thr = Layout(1, 0) if cta == 1 else Layout(2, 1)
            cat[f"SM100_UTCCP_{shape}_{cta}cta"] = (thr, v, s, d, d, "tcgen05_cp", (shape, cta))
    return cat


_UTCCP = _utccp()


def tmem_copy_atom_names() -> list:
    """Every SM100 TMEM copy atom name: 148 SM100_TMEM_LOAD/STORE_* and 12 SM100_UTCCP_*."""
    names = []
    for op in ("LOAD", "STORE"):
        for shape, (_, _, reps) in _LD_SHAPES.items():
            for r in reps:
                names += [f"SM100_TMEM_{op}_{shape}{r}x", f"SM100_TMEM_{op}_{shape}{r}x_16b"]
    return names + list(_UTCCP)


class TmemCopyAtom(CopyAtom):
    """A tcgen05 ld / st / cp copy atom over a value type (CuTe's ``Copy_Atom<SM100_TMEM_...,
    T>``): the CopyAtom layouts plus ``val_id_bits`` (CuTe's ``ValID``: bit index -> TMEM bit address)."""

    __slots__ = ("val_id_bits", "_instruction", "shape_info")

    @property
    def instruction(self) -> str:
        """'tcgen05_ld', 'tcgen05_st' or 'tcgen05_cp'."""
        return self._instruction

    @property
    def arch(self) -> int:
        return 100

    @property
    def dp(self) -> int:
        """Lanes one warp's instruction covers (16 or 32; UTCCP: 128)."""
        return self.shape_info[1] if self._instruction != "tcgen05_cp" else 128

    @property
    def repeat(self) -> int:
        return self.shape_info[2] if self._instruction != "tcgen05_cp" else 1

    @property
    def pack_16b(self) -> bool:
        """The ``_16b`` variants: ``.pack::16b`` (ld) / ``.unpack::16b`` (st), two 16-bit values per register."""
        return self._instruction != "tcgen05_cp" and self.shape_info[3]

    @property
    def val_id(self) -> Layout:
        """``ValID`` recast to the value type: value index -> TMEM offset in units of T (CuTe's
        ``coalesce(upcast<bits(T)>(ValID))``, what make_tmem_copy lays out)."""
        return coalesce(upcast(self.val_id_bits, self.value_type.bits, f"{self.name} ValID"))


def tmem_copy_atom(name: str, value_type) -> TmemCopyAtom:
    """The copy atom CuTe C++ calls ``Copy_Atom<name, value_type>`` for an SM100 TMEM op (``wb.copy_atom``
    dispatches SM100_TMEM_* and SM100_UTCCP_* names here)."""
    traits = _tmem_traits(name) if name.startswith("SM100_TMEM_") else _UTCCP.get(name)
    if traits is None:
        close = difflib.get_close_matches(str(name), tmem_copy_atom_names(), n=6, cutoff=0.6)
        raise ValueError(f"copy_atom: unknown SM100 copy atom {name!r}.{' Close names: ' + ', '.join(close) + '.' if close else ''}"
                         " Accepted: SM100_TMEM_{LOAD,STORE}_{16dp256b{1..32}x, 16dp128b{1..64}x, 16dp64b{1..128}x, "
                         "16dp32b{1..128}x, 32dp32b{1..128}x}[_16b] (powers of two) and SM100_UTCCP_* "
                         "(workbench.atoms.tmem_copy_atom_names()).")
    if not isinstance(value_type, et.ElementType):
        raise TypeError(f"copy_atom({name!r}): expected an element type, but got {type(value_type).__name__}.")
    thr, val_id, src, dst, ref, instr, info = traits
    if name.startswith("SM100_TMEM_") and value_type.bits > 32:
        raise ValueError(f"copy_atom({name!r}, {value_type}): TMEM holds 32-bit columns; a {value_type.bits}-bit value "
                         "does not fit (accepted: element types of 4/8/16/32 bits).")
    atom = TmemCopyAtom(name, value_type, thr, src, dst, ref, "tmem", 0)
    atom.val_id_bits, atom._instruction, atom.shape_info = val_id, instr, info
    atom.num_bits = src.size // thr.size if thr.size else src.size
    return atom


EXTENSIONS["SM100_"] = tmem_copy_atom


# ---- tiled TMEM copies --------------------------------------------------------------------------------------

class TmemTiledCopy(TiledCopy):
    """CuTe's TiledCopy of ``make_tmem_copy``: its tiler is a tuple of layouts (one per mode of the TMEM tensor,
    CuTe's by-mode tiler), ``layout_src_tv_tiled`` / ``layout_dst_tv_tiled`` its get_layoutS_TV / get_layoutD_TV."""

    def _tv(self, trg):
        shapes = tuple(t.shape if isinstance(t, Layout) else t for t in self.tiler_mn)
        ref = make_layout((shapes, 1))
        full = self._tile2thrfrg(ref, self._ref2(trg))
        return Layout((full[0].shape, full[1].shape), (full[0].stride, full[1].stride))

    def __repr__(self):
        return f"make_tmem_copy({self.atom}, ...)  # layout_tv={self.layout_tv}, tiler={self.tiler_mn}"


def _flat_modes(shape):
    return list(shape) if type(shape) is tuple else [shape]


def make_tmem_copy(atom: TmemCopyAtom, tmem: TmemTensor) -> TmemTiledCopy:
    """CuTe's ``make_tmem_copy(Copy_Atom<Op, T>, tmem_tensor)``: four warps, warp w on lanes 32*w.., each
    doing the atom, co-tiled over the TMEM tensor (``make_cotiled_copy``).  Refused with CuTe's reason where the
    atom's TMEM footprint is not in the tensor ("The memory pointed to by AtomTVLayout does not exist in the
    DataLayout.", e.g. a 32dp copy of an M=64 accumulator) or the widths differ; a copy where a thread would
    reach a lane outside its warp's 32-lane sub-partition is refused naming the thread and the lane."""
    if not isinstance(atom, TmemCopyAtom) or atom.instruction == "tcgen05_cp":
        raise TypeError(f"make_tmem_copy: expected a tcgen05 ld/st copy atom (wb.copy_atom('SM100_TMEM_LOAD_...', T)), "
                        f"but got {atom!r}.")
    if not isinstance(tmem, TmemTensor):
        raise TypeError(f"make_tmem_copy: Expected TMEM tensor (CuTe's static_assert); got {type(tmem).__name__}.")
    dp = tmem_dp(tmem.value_type.bits)
    tc, tv_data = _cotiled_copy(atom, Layout((32, 4), (0, 32 * dp)), tmem, "make_tmem_copy")
    _check_warp_lanes(tc, tv_data, tmem)
    return tc


def make_utccp_copy(atom: TmemCopyAtom, tmem: TmemTensor) -> TmemTiledCopy:
    """CuTe's ``make_utccp_copy(CopyOp, tmem_tensor)`` (cute/atom/copy_traits_sm100.hpp): a tcgen05.cp (smem ->
    TMEM) atom co-tiled over a TMEM tensor, one issuing thread (or one per CTA of a pair, ``_2cta``) for the whole
    copy, as CUTLASS's block-scaled GEMMs copy their scale factors (``SM100_UTCCP_4x32dp128bit_{1,2}cta`` over the
    scale-factor fragment with its zero strides filtered, ``wb.filter_zeros``).  Refused with CuTe's reason where
    the atom's TMEM footprint is not in the tensor."""
    if not isinstance(atom, TmemCopyAtom) or atom.instruction != "tcgen05_cp":
        raise TypeError(f"make_utccp_copy: expected a UTCCP (smem -> TMEM) copy atom (wb.copy_atom('SM100_UTCCP_...', T)), but got "
                        f"{atom!r}.")
    if not isinstance(tmem, TmemTensor):
        raise TypeError(f"make_utccp_copy: Expected TMEM tensor. (CuTe's static_assert); got {type(tmem).__name__}.")
    tc, _ = _cotiled_copy(atom, Layout(atom.thr_id.size, 0), tmem, "make_utccp_copy")
    return tc


def _cotiled_copy(atom, atom_t, tmem, who):
    """CuTe's ``make_cotiled_copy(Copy_Atom, (atom_t, ValID in units of T), tmem.layout())``."""
    if atom.value_type.bits != tmem.value_type.bits:
        raise ValueError(f"{who}: Expected a CopyAtom with the same type-width as the Tensor (atom over "
                         f"{atom.value_type}, tensor of {tmem.value_type}).")
    data = tmem.layout
    if not data.is_static:
        raise ValueError(f"{who}: expected a static TMEM layout, but got {data}.")
    atom_v = atom.val_id
    atom_tv = Layout((atom_t.shape, atom_v.shape), (atom_t.stride, atom_v.stride))
    inv = left_inverse(data)
    inv_data = Layout((inv.shape, 1), (inv.stride, 0))
    tv_data = composition(inv_data, atom_tv)
    # CuTe: coalesce(composition((data, 1:0), layout<1>(tv_data))) == coalesce(layout<1>(atom_tv))
    data_ext = Layout((data.shape, 1), (data.stride, 0))
    v_back = coalesce(composition(data_ext, tv_data[1]))
    if v_back.size != atom_v.size or list(v_back.offsets()) != list(atom_v.offsets()):
        raise ValueError(f"{who}({atom.name}, {tmem}): The memory pointed to by AtomTVLayout does not exist in "
                         f"the DataLayout. (CuTe's static_assert: the atom reads TMEM offsets {atom_v} per thread, which "
                         f"the tensor does not hold; e.g. a 32dp atom needs 32 lanes of each warp's sub-partition)")
    flat = tuple(product_each(data.shape)) if type(data.shape) is tuple else (data.size,)
    tiler = []
    for i in range(len(flat)):
        proj = Layout(flat, tuple(1 if j == i else 0 for j in range(len(flat))))
        tiler.append(filter_(composition(proj, tv_data)))
    tile2data = composition(make_layout(flat), tuple(tiler))
    layout_tv = composition(left_inverse(tile2data), tv_data)
    return TmemTiledCopy(atom, layout_tv, tuple(tiler)), tv_data


def _check_warp_lanes(tc, tv_data, tmem):
    """Every thread t of the tiled copy touches only lanes 32*((t // 32) % 4) .. +31 of the tensor."""
    import numpy as np
    nt = tv_data[0].size
    offs = np.asarray(composition(tmem.layout, tv_data).offsets()) + tmem.offset
    lanes = tmem_lane(tmem.base) + offs // tmem.dp
    threads = np.arange(offs.size) % nt
    bad = np.nonzero(lanes // 32 != (threads // 32) % 4)[0]
    if bad.size:
        t, lane = int(threads[bad[0]]), int(lanes[bad[0]])
        warp = (t // 32) % 4
        raise ValueError(f"make_tmem_copy({tc.atom.name}): thread {t} (warp {t // 32}, lanes {32 * warp}.."
                         f"{32 * warp + 31} of its sub-partition) would reach TMEM lane {lane}; tcgen05 ld/st "
                         "let warp w of a warpgroup touch only lanes 32*(w%4)..32*(w%4)+31.")
