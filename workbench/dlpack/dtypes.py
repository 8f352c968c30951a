"""DLPack (code, bits, lanes) <-> workbench element types, both ways, no guessing."""

from __future__ import annotations

from .. import _element_types as et
from .abi import DLDataTypeCode as C

__all__ = ["element_type_of", "dldtype_of", "SCALAR_TABLE"]

# (code, bits) -> scalar element type; lanes > 1 map to et.vector_type.
SCALAR_TABLE = {
    (C.kDLBool, 8): et.Boolean,
    (C.kDLInt, 8): et.Int8, (C.kDLInt, 16): et.Int16, (C.kDLInt, 32): et.Int32, (C.kDLInt, 64): et.Int64,
    (C.kDLUInt, 8): et.Uint8, (C.kDLUInt, 16): et.Uint16, (C.kDLUInt, 32): et.Uint32, (C.kDLUInt, 64): et.Uint64,
    (C.kDLFloat, 16): et.Float16, (C.kDLFloat, 32): et.Float32, (C.kDLFloat, 64): et.Float64,
    (C.kDLBfloat, 16): et.BFloat16,
    (C.kDLComplex, 32): et.Complex32, (C.kDLComplex, 64): et.Complex64, (C.kDLComplex, 128): et.Complex128,
    (C.kDLFloat8_e3m4, 8): et.Float8E3M4,
    (C.kDLFloat8_e4m3, 8): et.Float8E4M3,
    (C.kDLFloat8_e4m3b11fnuz, 8): et.Float8E4M3B11FNUZ,
    (C.kDLFloat8_e4m3fn, 8): et.Float8E4M3FN,
    (C.kDLFloat8_e4m3fnuz, 8): et.Float8E4M3FNUZ,
    (C.kDLFloat8_e5m2, 8): et.Float8E5M2,
    (C.kDLFloat8_e5m2fnuz, 8): et.Float8E5M2FNUZ,
    (C.kDLFloat8_e8m0fnu, 8): et.Float8E8M0FNU,
    (C.kDLFloat6_e2m3fn, 6): et.Float6E2M3FN,
    (C.kDLFloat6_e3m2fn, 6): et.Float6E3M2FN,
    (C.kDLFloat4_e2m1fn, 4): et.Float4E2M1FN,
}
_REVERSE = {t: (int(code), bits) for (code, bits), t in SCALAR_TABLE.items()}
_CACHE: dict[tuple[int, int, int], et.ElementType] = {}


PACKED: dict[int, et.ElementType] = {int(c) | b << 8 | 1 << 16: t for (c, b), t in SCALAR_TABLE.items()}


def element_type_of_packed(packed: int) -> et.ElementType:
    """element_type_of for ``code | bits << 8 | lanes << 16`` (what the C importer returns)."""
    t = PACKED.get(packed)
    if t is None:
        t = element_type_of(packed & 0xFF, (packed >> 8) & 0xFF, packed >> 16)
        PACKED[packed] = t
    return t


def element_type_of(code: int, bits: int, lanes: int = 1) -> et.ElementType:
    """The element type of a DLDataType; an unknown combination is a BufferError naming it."""
    key = (code, bits, lanes)
    t = _CACHE.get(key)
    if t is not None:
        return t
    scalar = SCALAR_TABLE.get((code, bits))
    if scalar is None:
        try:
            name = C(code).name
        except ValueError:
            name = f"unknown code {code}"
        raise BufferError(
            f"Expected a DLPack dtype the workbench knows (code, bits) such as (kDLFloat, 32), "
            f"but got ({name}, {bits}) with {lanes} lane(s)."
        )
    if lanes < 1:
        raise BufferError(f"Expected DLDataType.lanes >= 1, but got {lanes}.")
    t = et.vector_type(scalar, lanes)
    _CACHE[key] = t
    return t


def dldtype_of(t: et.ElementType) -> tuple[int, int, int]:
    """(code, bits, lanes) of an element type."""
    if type(t) is not et.ElementType:
        raise TypeError(f"Expected an element type such as wb.Float32, but got {type(t).__name__}.")
    code, bits = _REVERSE[t.scalar]
    return code, bits, t.lanes
