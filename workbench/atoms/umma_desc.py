"""UMMA (tcgen05.mma) descriptors: CuTe's ``UMMA::SmemDescriptor``, ``UMMA::InstrDescriptor`` and
``UMMA::InstrDescriptorBlockScaled`` (cute/arch/mma_sm100_desc.hpp) as objects with their bits, the UMMA
shared-memory layout atoms (``UMMA::Layout_*_Atom``) and ``make_umma_desc`` (cute/atom/mma_traits_sm100.hpp).

Every field sits where CuTe's bit-field unions put it; ``encode()`` gives the word, ``decode(word)`` reads one.
"""

from __future__ import annotations

import difflib

from .. import _element_types as et
from ..layout import ComposedLayout, Layout, Swizzle
from .copy import upcast
from .smem import GMMA_SMEM_ATOMS, gmma_smem_atom

__all__ = ["UmmaSmemDescriptor", "UmmaInstrDescriptor", "UmmaInstrDescriptorBlockScaled", "make_umma_desc",
           "umma_smem_atom", "UMMA_SMEM_ATOMS", "LAYOUT_TYPES", "umma_format"]

# UMMA::LayoutType (3 bits at 61..63 of the smem descriptor)
LAYOUT_TYPES = {"SWIZZLE_NONE": 0, "SWIZZLE_128B_BASE32B": 1, "SWIZZLE_128B": 2, "SWIZZLE_64B": 4, "SWIZZLE_32B": 6}
_LAYOUT_NAME = {v: k for k, v in LAYOUT_TYPES.items()}

UMMA_SMEM_ATOMS = GMMA_SMEM_ATOMS + ("Layout_MN_SW128_32B_Atom",)


def _field(word, lo, n):
    return (word >> lo) & ((1 << n) - 1)


class _Bits:
    """A word of named bit fields: ``_FIELDS`` = (name, first bit, width), CuTe's member names without '_'."""

    _FIELDS: tuple = ()
    _WIDTH = 64

    def __init__(self, **fields):
        names = {f for f, _, _ in self._FIELDS}
        for k in fields:
            if k not in names:
                raise ValueError(f"{type(self).__name__}: unknown field {k!r}; fields: {', '.join(sorted(names))}.")
        for name, _, n in self._FIELDS:
            v = int(fields.get(name, 0))
            if not 0 <= v < (1 << n):
                raise ValueError(f"{type(self).__name__}: field {name} takes {n} bits (0..{(1 << n) - 1}), but got {v}.")
            object.__setattr__(self, name, v)

    def __setattr__(self, k, v):
        raise AttributeError(f"{type(self).__name__} is immutable; build a new one with .replace({k}=...).")

    def encode(self) -> int:
        """The descriptor word (CuTe's union read as an unsigned integer)."""
        w = 0
        for name, lo, _ in self._FIELDS:
            w |= getattr(self, name) << lo
        return w

    def __int__(self):
        return self.encode()

    @classmethod
    def decode(cls, word: int):
        """The fields of a descriptor word."""
        if not 0 <= int(word) < (1 << cls._WIDTH):
            raise ValueError(f"{cls.__name__}.decode: expected a {cls._WIDTH}-bit word, but got {word!r}.")
        return cls(**{name: _field(int(word), lo, n) for name, lo, n in cls._FIELDS})

    def fields(self) -> dict:
        """Every field by CuTe's name (without the trailing '_')."""
        return {name: getattr(self, name) for name, _, _ in self._FIELDS}

    def replace(self, **fields):
        return type(self)(**{**self.fields(), **fields})

    def __eq__(self, other):
        return type(other) is type(self) and other.encode() == self.encode()

    def __hash__(self):
        return hash((type(self), self.encode()))

    def __repr__(self):
        inner = ", ".join(f"{k}={v}" for k, v in self.fields().items())
        return f"{type(self).__name__}(0x{self.encode():0{self._WIDTH // 4}x}: {inner})"


class UmmaSmemDescriptor(_Bits):
    """CuTe's ``UMMA::SmemDescriptor`` (64 bits): start_address [0,14), leading_byte_offset [16,30),
    stride_byte_offset [32,46) (all three in 16-byte units), version [46,48) (1 on Blackwell), base_offset [49,52),
    lbo_mode [52,53), layout_type [61,64) (``LAYOUT_TYPES``)."""

    _FIELDS = (("start_address", 0, 14), ("leading_byte_offset", 16, 14), ("stride_byte_offset", 32, 14),
               ("version", 46, 2), ("base_offset", 49, 3), ("lbo_mode", 52, 1), ("layout_type", 61, 3))

    @property
    def layout_type_name(self) -> str:
        """CuTe's name of the layout type (``UMMA::to_string(LayoutType)``), e.g. 'SWIZZLE_128B'."""
        return _LAYOUT_NAME.get(self.layout_type, f"INVALID({self.layout_type})")

    @property
    def start_bytes(self) -> int:
        return self.start_address << 4

    @property
    def lbo_bytes(self) -> int:
        return self.leading_byte_offset << 4

    @property
    def sbo_bytes(self) -> int:
        return self.stride_byte_offset << 4


class UmmaInstrDescriptor(_Bits):
    """CuTe's ``UMMA::InstrDescriptor`` (32 bits, the upper half of tcgen05.mma's idesc): sparse_id2 [0,2),
    sparse_flag [2], saturate [3], c_format [4,6), a_format [7,10), b_format [10,13), a_negate [13], b_negate [14],
    a_major [15], b_major [16], n_dim [17,23) (N >> 3), m_dim [24,29) (M >> 4), max_shift [30,32)."""

    _WIDTH = 32
    _FIELDS = (("sparse_id2", 0, 2), ("sparse_flag", 2, 1), ("saturate", 3, 1), ("c_format", 4, 2),
               ("a_format", 7, 3), ("b_format", 10, 3), ("a_negate", 13, 1), ("b_negate", 14, 1), ("a_major", 15, 1),
               ("b_major", 16, 1), ("n_dim", 17, 6), ("m_dim", 24, 5), ("max_shift", 30, 2))

    def runtime(self) -> int:
        """CuTe's ``make_runtime_instr_desc``: the 64-bit operand, the descriptor in the upper 32 bits."""
        return self.encode() << 32


class UmmaInstrDescriptorBlockScaled(_Bits):
    """CuTe's ``UMMA::InstrDescriptorBlockScaled`` (32 bits): sparse_id2 [0,2), sparse_flag [2], b_sf_id [4,6),
    a_format [7,10), b_format [10,13), a_negate [13], b_negate [14], a_major [15], b_major [16], n_dim [17,23),
    scale_format [23] (0 = UE4M3, 1 = UE8M0), m_dim [24,29), a_sf_id [29,31), k_size [31]."""

    _WIDTH = 32
    _FIELDS = (("sparse_id2", 0, 2), ("sparse_flag", 2, 1), ("b_sf_id", 4, 2), ("a_format", 7, 3), ("b_format", 10, 3),
               ("a_negate", 13, 1), ("b_negate", 14, 1), ("a_major", 15, 1), ("b_major", 16, 1), ("n_dim", 17, 6),
               ("scale_format", 23, 1), ("m_dim", 24, 5), ("a_sf_id", 29, 2), ("k_size", 31, 1))

    def runtime(self, tmem_sfa_addr: int = 0, tmem_sfb_addr: int = 0) -> int:
        """CuTe's ``make_runtime_instr_desc_block_scaled``: the scale-factor ids from the top 2 bits of the scale
        factors' TMEM addresses, the descriptor in the upper 32 bits."""
        for what, a in (("tmem_sfa_addr", tmem_sfa_addr), ("tmem_sfb_addr", tmem_sfb_addr)):
            if type(a) is not int or not 0 <= a < (1 << 32):
                raise ValueError(f"UmmaInstrDescriptorBlockScaled.runtime: expected {what} as a 32-bit TMEM address "
                                 f"(lane << 16 | column, the byte of the column in bits 30..31), but got {a!r}.")
        d = self.replace(a_sf_id=(tmem_sfa_addr & 0xC0000000) >> 30, b_sf_id=(tmem_sfb_addr & 0xC0000000) >> 30)
        return d.encode() << 32


# ---- UMMA formats (to_UMMAFormat, to_CFormat, to_ScaleFormat) ------------------------------------------------

_F16F32 = {"Float16": 0, "BFloat16": 1, "TFloat32": 2}
_S8 = {"Uint8": 0, "Int8": 1}
_MXF8F6F4 = {"Float8E4M3FN": 0, "Float8E5M2": 1, "Float6E2M3FN": 3, "Float6E3M2FN": 4, "Float4E2M1FN": 5}
_C_FORMAT = {"Float16": 0, "Float32": 1, "Int32": 2}
_SCALE_FORMAT = {"Float8E4M3FN": 0, "Float8E8M0FNU": 1}   # CuTe's float_ue4m3_t / float_ue8m0_t


def umma_format(t, kind: str | None = None) -> int:
    """CuTe's ``UMMA::to_UMMAFormat<T>()`` as the 3-bit code (``kind`` 'mxf4' gives MXF4Format: E2M1 = 1)."""
    if kind == "mxf4" and t.name == "Float4E2M1FN":
        return 1
    for table in (_F16F32, _S8, _MXF8F6F4):
        if t.name in table:
            return table[t.name]
    raise TypeError(f"umma_format: {t} is no UMMA operand type (CuTe: 'Unknown type for UMMAFormat').")


def c_format(t) -> int:
    if t.name not in _C_FORMAT:
        raise TypeError(f"c_format: {t} is no UMMA accumulator type (CuTe: 'Unknown type for CFormat'); "
                        "accepted: Float16, Float32, Int32.")
    return _C_FORMAT[t.name]


def scale_format(t) -> int:
    if t.name not in _SCALE_FORMAT:
        raise TypeError(f"scale_format: {t} is no UMMA scale-factor type (CuTe: 'Unknown type for ScaleFormat'); "
                        "accepted: Float8E4M3FN (ue4m3), Float8E8M0FNU (ue8m0).")
    return _SCALE_FORMAT[t.name]


# ---- shared-memory atoms and descriptors --------------------------------------------------------------------

def umma_smem_atom(name: str, element_type) -> ComposedLayout:
    """CuTe's ``UMMA::Layout_*_Atom<T>``: the eight GMMA atoms (``UMMA::Layout_K_SW128_Atom`` is
    ``GMMA::Layout_K_SW128_Atom``) and ``Layout_MN_SW128_32B_Atom`` (``Sw<2,5,2>`` on byte addresses over
    (1024 bits, 4) MN-major), as element-offset functions like :func:`gmma_smem_atom`."""
    if name in GMMA_SMEM_ATOMS:
        return gmma_smem_atom(name, element_type)
    if name != "Layout_MN_SW128_32B_Atom":
        close = difflib.get_close_matches(str(name), UMMA_SMEM_ATOMS, n=3)
        raise ValueError(f"umma_smem_atom: unknown atom {name!r}{' (close: ' + ', '.join(close) + ')' if close else ''}; "
                         f"accepted: {', '.join(UMMA_SMEM_ATOMS)}.")
    if not isinstance(element_type, et.ElementType):
        raise TypeError(f"umma_smem_atom: expected an element type, but got {type(element_type).__name__}.")
    bits = element_type.bits
    if bits not in (8, 16, 32, 64):
        raise ValueError(f"umma_smem_atom({name}): expected an element type of 8, 16, 32 or 64 bits, but got "
                         f"{element_type} ({bits} bits).")
    row = 1024 // bits
    base = 5 - ((bits // 8).bit_length() - 1)    # 32-byte units in elements
    return ComposedLayout(Swizzle(2, base, 2), 0, Layout((row, 4), (1, row)), ptr_bits=bits)


def _byte_swizzle(layout, bits):
    """(B, M, S) of the swizzle on byte addresses, the element offset and the unswizzled element layout."""
    if type(layout) is Layout:
        return (0, 4, 3), 0, layout
    if type(layout) is not ComposedLayout or type(layout.inner) is not Swizzle:
        raise TypeError(f"make_umma_desc: expected a shared-memory layout (a Layout, or a swizzle composed with one), "
                        f"but got {layout!r}.")
    sw = layout.inner
    shift = (bits // 8).bit_length() - 1
    if sw.bits == 0:
        return (0, 4, 3), layout.offset, layout.outer
    return (sw.bits, sw.base + shift, sw.shift), layout.offset, layout.outer


def _layout_type(b, m, s):
    if m == 4:
        if s != 3:
            raise ValueError("make_umma_desc: Expected S = 3 when M == 4. Unsupported layout swizzle (CuTe's static_assert).")
        if not 0 <= b <= 3:
            raise ValueError("make_umma_desc: Expected B = 0,1,2, or 3 when M == 4. Unsupported layout swizzle.")
        return ("SWIZZLE_NONE", "SWIZZLE_32B", "SWIZZLE_64B", "SWIZZLE_128B")[b]
    if m == 5:
        if b != 2 or s != 2:
            raise ValueError("make_umma_desc: Expected B = 2 and S = 2 when M == 5. Unsupported layout swizzle "
                             "(CuTe's static_assert).")
        return "SWIZZLE_128B_BASE32B"
    raise ValueError("make_umma_desc: Only 16B and 32B Atoms are supported for UMMA. Unsupported layout swizzle "
                     f"(the swizzle's base on byte addresses is {m}; CuTe's static_assert).")


def make_umma_desc(layout, element_type, major: str, address: int = 0) -> UmmaSmemDescriptor:
    """CuTe's ``UMMA::make_umma_desc<Major>(tensor)`` for a shared tensor of ``element_type`` at byte
    ``address`` laid out by ``layout`` (an (MN, K) layout in elements, a swizzle composed with one as
    ``wb.tile_to_shape(umma_smem_atom(...), shape)`` builds it).  version = 1, lbo_mode = 0, base_offset = 0 as
    CuTe sets them; LBO/SBO read from the layout recast to 16-byte units exactly as CuTe reads them, and a layout
    that is not canonical is refused with CuTe's reason."""
    if major not in ("K", "MN"):
        raise ValueError(f"make_umma_desc: expected major 'K' or 'MN', but got {major!r}.")
    if not isinstance(element_type, et.ElementType):
        raise TypeError(f"make_umma_desc: expected an element type, but got {type(element_type).__name__}.")
    bits = element_type.bits
    if bits not in (8, 16, 32, 64):
        raise ValueError(f"make_umma_desc: expected an element type of 8, 16, 32 or 64 bits in shared memory, but got "
                         f"{element_type} ({bits} bits; sub-byte operands are unpacked to 8 bits in shared memory).")
    (b, m, s), off, outer = _byte_swizzle(layout, bits)
    lt = _layout_type(b, m, s)
    rank = outer.rank if type(outer.shape) is tuple else 1
    if rank != 2:
        raise ValueError(f"make_umma_desc: UMMA Descriptors can only be constructed on rank-2 tensors; got {outer}.")
    if not outer.is_static:
        raise ValueError(f"make_umma_desc: expected a static layout, but got {outer}.")
    u = upcast(outer, 128 // bits, "make_umma_desc (recast to uint128_t)")
    MN, K = u[0].size, u[1].size

    def st(i, j):   # stride of u128 coordinate (i, j) from (0, 0), as CuTe reads a mode's stride
        return u((i, j)) - u((0, 0))

    sw_mn = {"SWIZZLE_NONE": 1, "SWIZZLE_32B": 2, "SWIZZLE_64B": 4, "SWIZZLE_128B": 8, "SWIZZLE_128B_BASE32B": 8}[lt]
    if major == "MN":
        sw_k = 4 if lt == "SWIZZLE_128B_BASE32B" else 8
        s00 = st(1, 0) if sw_mn > 1 else 0
        s01 = st(sw_mn, 0) if MN > sw_mn else 0
        s10 = st(0, 1) if sw_k > 1 else 0
        s11 = st(0, sw_k) if K > sw_k else 0
        if lt != "SWIZZLE_NONE" and s00 != 1:
            raise ValueError(f"make_umma_desc: Not a canonical UMMA_MN Layout: Expected stride failure (stride<0,0> = "
                             f"{s00} in 16-byte units, expected 1) for {layout}.")
        if s10 != sw_mn:
            raise ValueError(f"make_umma_desc: Not a canonical UMMA_MN Layout: Expected stride failure (stride<1,0> = "
                             f"{s10} in 16-byte units, expected {sw_mn}) for {layout}.")
        sbo, lbo = (s01, s11) if lt == "SWIZZLE_NONE" else (s11, s01)
    else:
        if lt == "SWIZZLE_128B_BASE32B":
            raise ValueError("make_umma_desc: SWIZZLE_128B_BASE32B is invalid for Major-K (CuTe's static_assert).")
        if MN % 8:
            raise ValueError(f"make_umma_desc: Not a canonical UMMA_K Layout: Expected MN-size multiple of 8 (got {MN} "
                             f"for {layout}).")
        s00, s01 = st(1, 0), (st(8, 0) if MN > 8 else 0)
        s10 = st(0, 1) if K > 1 else 0
        if s00 != sw_mn:
            raise ValueError(f"make_umma_desc: Not a canonical UMMA_K Layout: Expected stride failure (stride<0,0> = "
                             f"{s00} in 16-byte units, expected {sw_mn}) for {layout}.")
        if lt != "SWIZZLE_NONE" and s10 != 1:
            raise ValueError(f"make_umma_desc: Not a canonical UMMA_K Layout: Expected stride failure (stride<1,0> = "
                             f"{s10} in 16-byte units, expected 1) for {layout}.")
        sbo, lbo = s01, s10
    start = (int(address) + off * bits // 8) >> 4
    return UmmaSmemDescriptor(start_address=start & 0x3FFF, leading_byte_offset=lbo & 0x3FFF,
                              stride_byte_offset=sbo & 0x3FFF, version=1, base_offset=0, lbo_mode=0,
                              layout_type=LAYOUT_TYPES[lt])
