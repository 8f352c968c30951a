"""Element types (CuTe DSL's numeric types): ``wb.Float32``, ``wb.BFloat16``, ``wb.Float8E4M3FN``...

An element type knows its name, bit width, lane count, the CUDA C++ type that holds it, and
the numpy dtype that matches it bit for bit when there is one; for the types kernels handle, what the kernel DSL
needs of it (:data:`KERNEL_FACTS`: its spelling in generated code, the numpy dtype the CPU executor keeps its bits
in, its PTX type, its TMA data-type code, how a scalar parameter packs it).  This is the one table of those facts.
The DLPack codes live in ``workbench.dlpack.dtypes``: this module knows nothing of DLPack.
"""

from __future__ import annotations

__all__ = ["ElementType", "vector_type", "ALL_SCALAR_TYPES", "by_name"]


class ElementType:
    """One element type.  Compared by identity: each type exists once (see :func:`vector_type`)."""

    __slots__ = ("name", "width", "kind", "lanes", "ctype", "numpy", "short", "scalar", "natural_align",
                 "kernel_ctype", "storage", "ptx", "tma_code", "pack")

    def __init__(self, name, width, kind, ctype, numpy=None, short=None, lanes=1, scalar=None):
        self.name = name
        self.width = width          # bits of one lane (CuTe DSL's .width)
        self.kind = kind            # 'int' 'uint' 'float' 'bfloat' 'complex' 'bool' or a float8/6/4 format name
        self.ctype = ctype          # CUDA C++ spelling
        self.numpy = numpy          # numpy dtype string or None
        self.short = short or name  # MLIR-style short name: f32, bf16, i1 ...
        self.lanes = lanes
        self.scalar = scalar or self
        self.natural_align = max(1, width * lanes // 8)  # bytes; sub-byte types: 1
        # the kernel DSL's facts (KERNEL_FACTS), None where kernels do not handle the type
        self.kernel_ctype = self.storage = self.ptx = self.tma_code = self.pack = None

    @property
    def bits(self) -> int:
        """Bits of one whole element (all lanes)."""
        return self.width * self.lanes

    def storage_count(self, n: int) -> int:
        """Entries of its storage (KERNEL_FACTS) that hold n elements: n, or for a packed 4-bit type (two values a
        byte) the bytes, rounded up."""
        return -(-n * self.bits // 8) if self.bits < 8 else n

    @property
    def is_float(self) -> bool:
        return self.kind not in ("int", "uint", "bool", "complex")

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def signed(self) -> bool:
        return self.kind != "uint" and self.kind != "bool"

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self):
        return (by_name, (self.name,))


_REGISTRY: dict[str, ElementType] = {}


def _t(*args, **kw) -> ElementType:
    t = ElementType(*args, **kw)
    _REGISTRY[t.name] = t
    return t


Boolean = _t("Boolean", 8, "bool", "bool", "bool", "i1")
Int8 = _t("Int8", 8, "int", "int8_t", "int8", "i8")
Int16 = _t("Int16", 16, "int", "int16_t", "int16", "i16")
Int32 = _t("Int32", 32, "int", "int32_t", "int32", "i32")
Int64 = _t("Int64", 64, "int", "int64_t", "int64", "i64")
Uint8 = _t("Uint8", 8, "uint", "uint8_t", "uint8", "ui8")
Uint16 = _t("Uint16", 16, "uint", "uint16_t", "uint16", "ui16")
Uint32 = _t("Uint32", 32, "uint", "uint32_t", "uint32", "ui32")
Uint64 = _t("Uint64", 64, "uint", "uint64_t", "uint64", "ui64")
Float16 = _t("Float16", 16, "float", "__half", "float16", "f16")
Float32 = _t("Float32", 32, "float", "float", "float32", "f32")
Float64 = _t("Float64", 64, "float", "double", "float64", "f64")
BFloat16 = _t("BFloat16", 16, "bfloat", "__nv_bfloat16", None, "bf16")
# tf32 (CuTe DSL's TFloat32): a Float32 whose low 13 mantissa bits the tensor cores ignore; held as a float
TFloat32 = _t("TFloat32", 32, "tfloat32", "float", None, "tf32")
Float8E3M4 = _t("Float8E3M4", 8, "e3m4", "uint8_t", None, "f8E3M4")
Float8E4M3 = _t("Float8E4M3", 8, "e4m3", "uint8_t", None, "f8E4M3")
Float8E4M3B11FNUZ = _t("Float8E4M3B11FNUZ", 8, "e4m3b11fnuz", "uint8_t", None, "f8E4M3B11FNUZ")
Float8E4M3FN = _t("Float8E4M3FN", 8, "e4m3fn", "__nv_fp8_e4m3", None, "f8E4M3FN")
Float8E4M3FNUZ = _t("Float8E4M3FNUZ", 8, "e4m3fnuz", "uint8_t", None, "f8E4M3FNUZ")
Float8E5M2 = _t("Float8E5M2", 8, "e5m2", "__nv_fp8_e5m2", None, "f8E5M2")
Float8E5M2FNUZ = _t("Float8E5M2FNUZ", 8, "e5m2fnuz", "uint8_t", None, "f8E5M2FNUZ")
Float8E8M0FNU = _t("Float8E8M0FNU", 8, "e8m0fnu", "__nv_fp8_e8m0", None, "f8E8M0FNU")
Float6E2M3FN = _t("Float6E2M3FN", 6, "e2m3fn", "__nv_fp6_e2m3", None, "f6E2M3FN")
Float6E3M2FN = _t("Float6E3M2FN", 6, "e3m2fn", "__nv_fp6_e3m2", None, "f6E3M2FN")
Float4E2M1FN = _t("Float4E2M1FN", 4, "e2m1fn", "__nv_fp4_e2m1", None, "f4E2M1FN")
Complex32 = _t("Complex32", 32, "complex", "cuda::std::complex<__half>", None, "complex<f16>")
Complex64 = _t("Complex64", 64, "complex", "cuda::std::complex<float>", "complex64", "complex<f32>")
Complex128 = _t("Complex128", 128, "complex", "cuda::std::complex<double>", "complex128", "complex<f64>")

ALL_SCALAR_TYPES = tuple(_REGISTRY.values())

# What the kernel DSL needs of each type it handles, one row a type:
#   kernel_ctype  its spelling in generated CUDA C++ (16-bit floats: 2-byte structs with __half's ABI; fp8: its bits)
#   storage       the numpy dtype the CPU executor holds its bits in (bfloat16 and fp8 as unsigned integers)
#   ptx           its PTX type in tensor-core instructions (None: no tensor core takes it)
#   tma_code      cuTensorMapEncodeTiled's CUtensorMapDataType (TMA moves bits: fp8 as bytes; None: not movable)
#   pack          struct code of a scalar kernel parameter in its 8-byte slot (None: not a scalar parameter)
# Float4E2M1FN (kind::mxf4 / mxf4nvf4 operands) is held packed, two values a byte, the even-indexed value in the low
# nibble (CuTe's subbyte layout, NVIDIA's __nv_fp4x2_e2m1); memory of it is bytes (storage_count), moved whole by
# TMA as Uint8 and read by tcgen05.mma: no thread reads or writes one 4-bit element (the byte it shares would race).
KERNEL_FACTS = {
    Boolean: ("bool", "bool", None, None, "?7x"),
    Int8: ("signed char", "int8", "s8", 0, "b7x"),
    Int16: ("short", "int16", None, 1, "h6x"),
    Int32: ("int", "int32", "s32", 3, "i4x"),
    Int64: ("long long", "int64", None, 5, "q"),
    Uint8: ("unsigned char", "uint8", "u8", 0, "B7x"),
    Uint16: ("unsigned short", "uint16", None, 1, "H6x"),
    Uint32: ("unsigned int", "uint32", None, 2, "I4x"),
    Uint64: ("unsigned long long", "uint64", None, 4, "Q"),
    Float16: ("_wb_f16", "float16", "f16", 6, None),
    Float32: ("float", "float32", "f32", 7, "f4x"),
    Float64: ("double", "float64", "f64", 8, "d"),
    BFloat16: ("_wb_bf16", "uint16", "bf16", 9, None),
    TFloat32: ("float", "float32", "tf32", 7, None),
    Float8E4M3FN: ("unsigned char", "uint8", "e4m3", 0, None),
    Float8E5M2: ("unsigned char", "uint8", "e5m2", 0, None),
    Float4E2M1FN: ("unsigned char", "uint8", "e2m1", None, None),
}
for _et, (_c, _s, _p, _m, _k) in KERNEL_FACTS.items():
    _et.kernel_ctype, _et.storage, _et.ptx, _et.tma_code, _et.pack = _c, _s, _p, _m, _k
KERNEL_TYPES = tuple(KERNEL_FACTS)
# CuTe's type letters in instruction names (SM80_16x8x8_F32TF32TF32F32_TN): the type each letter means in the
# instruction (TF32: tf32, where the atoms hold its values as Float32 bit patterns)
BY_CUTE_CODE = {"F16": Float16, "BF16": BFloat16, "TF32": TFloat32, "F32": Float32, "F64": Float64, "S8": Int8,
                "U8": Uint8, "S32": Int32, "E4M3": Float8E4M3FN, "E5M2": Float8E5M2}
__all__ += [t.name for t in ALL_SCALAR_TYPES]  # wb.Float32, wb.BFloat16, ... (names as CuTe DSL spells them)

# CUDA's built-in vector type spellings (int2, float4, __half2 ...)
_CUDA_VECTOR_BASE = {
    "Int8": "char", "Uint8": "uchar", "Int16": "short", "Uint16": "ushort", "Int32": "int",
    "Uint32": "uint", "Int64": "longlong", "Uint64": "ulonglong", "Float32": "float", "Float64": "double",
}
_CUDA_VECTOR_SPECIAL = {("Float16", 2): "__half2", ("BFloat16", 2): "__nv_bfloat162",
                        ("Float8E4M3FN", 2): "__nv_fp8x2_e4m3", ("Float8E4M3FN", 4): "__nv_fp8x4_e4m3",
                        ("Float8E5M2", 2): "__nv_fp8x2_e5m2", ("Float8E5M2", 4): "__nv_fp8x4_e5m2"}


def vector_type(scalar: ElementType, lanes: int) -> ElementType:
    """The vector of ``lanes`` elements of ``scalar``: vector_type(Float32, 4).ctype == 'float4'."""
    if type(scalar) is not ElementType:
        raise TypeError(f"Expected an element type such as wb.Float32, but got {type(scalar).__name__}.")
    if type(lanes) is not int or lanes < 1:
        raise ValueError(f"Expected a positive lane count, but got {lanes!r}.")
    if scalar.lanes != 1:
        raise ValueError(f"Expected a scalar element type, but got the vector type {scalar.name}.")
    if lanes == 1:
        return scalar
    name = f"{scalar.name}x{lanes}"
    t = _REGISTRY.get(name)
    if t is None:
        base = _CUDA_VECTOR_BASE.get(scalar.name)
        ctype = _CUDA_VECTOR_SPECIAL.get((scalar.name, lanes)) or (f"{base}{lanes}" if base and lanes <= 4 else None)
        t = _t(name, scalar.width, scalar.kind, ctype, None, f"vector<{lanes}x{scalar.short}>", lanes, scalar)
    return t


def by_name(name: str) -> ElementType:
    """Look an element type up by its name ('Float32', 'Float16x2')."""
    t = _REGISTRY.get(name)
    if t is None:
        base, _, lanes = name.rpartition("x")
        if base in _REGISTRY and lanes.isdigit():
            return vector_type(_REGISTRY[base], int(lanes))
        raise ValueError(f"Expected an element type name such as 'Float32', but got {name!r}.")
    return t
