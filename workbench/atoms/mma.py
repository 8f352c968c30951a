"""MMA atoms as layouts: CuTe's ``MMA_Traits`` of the tensor-core instructions, named as CuTe C++ names them.

An atom is one instruction seen as layouts: ``thr_id`` maps the atom's logical thread to the
thread index (SM70's quad pair is not contiguous), ``tv_layout_A`` maps (thread, value) to the
column-major index of the element in the (M, K) tile, ``tv_layout_B`` into (N, K), ``tv_layout_C``
into (M, N).  The catalog is generated from CuTe's rules (an instruction family is a shape, its
type combinations and its register layouts) rather than typed out name by name.
"""

from __future__ import annotations

import difflib
import re

from .. import _element_types as et
from ..layout import Layout

__all__ = ["MMAAtom", "mma_atom", "mma_atom_names"]

# name prefix -> constructor of atoms defined in modules that build on this one (workbench.atoms.sm100 registers
# "SM100_" when the package is imported), so this module imports none of them
EXTENSIONS: dict = {}

# CuTe's type letters in instruction names (the element-type table's).  An atom holds TF32 values as Float32 bit
# patterns, so it records Float32 and keeps "TF32" in .type_codes.
TYPE_CODES = {**et.BY_CUTE_CODE, "TF32": et.Float32}


def _L(shape, stride):
    return Layout(shape, stride)


# ---- register layouts of mma.sync (CuTe's mma_traits_sm70/75/80/89.hpp) --------------------------
# (T32,V) -> column-major index in the tile; the 4x8 thread split is the quad/lane-group split.
_SM80_8x4 = _L(((4, 8), 1), ((8, 1), 0))
_SM80_8x8_ROW = _L(((4, 8), 2), ((16, 1), 8))
_SM80_8x16_ROW = _L(((4, 8), 4), ((32, 1), 8))
_SM80_16x8_ROW = _L(((4, 8), (2, 2)), ((32, 1), (16, 8)))
_SM70_QUADPAIR = _L((4, 2), (1, 16))
_SM70_8x4_ROW = _L((8, 4), (1, 8))
_SM70_8x4_COL = _L(((4, 2), 4), ((8, 4), 1))
_SM70_8x8_16B = _L((8, 8), (1, 8))
_SM70_8x8_32B = _L(((2, 2, 2), (2, 2, 2)), ((1, 16, 4), (8, 2, 32)))

# (arch, (M,N,K), A width in bits) -> (ALayout, BLayout, CLayout)
_SYNC_LAYOUTS = {
    ("SM75", (16, 8, 8), 16): (_SM80_16x8_ROW, _SM80_8x8_ROW, _SM80_16x8_ROW),
    ("SM75", (8, 8, 16), 8): (_SM80_8x16_ROW, _SM80_8x16_ROW, _SM80_8x8_ROW),
    ("SM80", (16, 8, 8), 16): (_SM80_16x8_ROW, _SM80_8x8_ROW, _SM80_16x8_ROW),
    ("SM80", (16, 8, 16), 16): (_L(((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128))),
                                _L(((4, 8), (2, 2)), ((16, 1), (8, 64))), _SM80_16x8_ROW),
    ("SM80", (16, 8, 4), 32): (_L(((4, 8), 2), ((16, 1), 8)), _SM80_8x4, _SM80_16x8_ROW),
    ("SM80", (16, 8, 8), 32): (_L(((4, 8), (2, 2)), ((16, 1), (8, 64))), _L(((4, 8), 2), ((8, 1), 32)),
                               _SM80_16x8_ROW),
    ("SM80", (8, 8, 4), 64): (_SM80_8x4, _SM80_8x4, _SM80_8x8_ROW),
    ("SM80", (8, 8, 16), 8): (_SM80_8x16_ROW, _SM80_8x16_ROW, _SM80_8x8_ROW),
    ("SM80", (16, 8, 16), 8): (_L(((4, 8), (4, 2)), ((64, 1), (16, 8))), _SM80_8x16_ROW, _SM80_16x8_ROW),
    ("SM80", (16, 8, 32), 8): (_L(((4, 8), (4, 2, 2)), ((64, 1), (16, 8, 256))),
                               _L(((4, 8), (4, 2)), ((32, 1), (8, 128))), _SM80_16x8_ROW),
}
_SYNC_LAYOUTS[("SM89", (16, 8, 32), 8)] = _SYNC_LAYOUTS[("SM80", (16, 8, 32), 8)]

_INT8_COMBOS = [("S32", a, b, "S32") for a in ("S8", "U8") for b in ("S8", "U8")]
_FP8_PAIRS = [(a, b) for a in ("E4M3", "E5M2") for b in ("E4M3", "E5M2")]

# (arch, (M,N,K), accepted D/A/B/C combinations, may carry _SATURATE)
_SYNC_FAMILIES = [
    ("SM75", (16, 8, 8), [("F32", "F16", "F16", "F32")], False),
    ("SM75", (8, 8, 16), [("S32", "S8", "S8", "S32")], False),
    ("SM80", (16, 8, 8), [("F16", "F16", "F16", "F16"), ("F32", "F16", "F16", "F32"),
                          ("F32", "BF16", "BF16", "F32"), ("F32", "TF32", "TF32", "F32")], False),
    ("SM80", (16, 8, 16), [("F16", "F16", "F16", "F16"), ("F32", "F16", "F16", "F32"),
                           ("F32", "BF16", "BF16", "F32")] + _INT8_COMBOS, True),
    ("SM80", (16, 8, 4), [("F32", "TF32", "TF32", "F32")], False),
    ("SM80", (8, 8, 4), [("F64", "F64", "F64", "F64")], False),
    ("SM80", (8, 8, 16), _INT8_COMBOS, True),
    ("SM80", (16, 8, 32), _INT8_COMBOS, True),
    ("SM89", (16, 8, 32), [(d, a, b, d) for d in ("F32", "F16") for a, b in _FP8_PAIRS], False),
]

# ---- GMMA (wgmma, SM90): one warpgroup of 128 threads --------------------------------------------
_GMMA_N_ALL = tuple(range(8, 257, 8))
_GMMA_N_INT8 = (8, 24) + tuple(range(16, 257, 16))
# (A type family) -> (K, accepted D/A/B, the N CuTe defines, register-A layout, takes MN-major smem)
_GMMA_FAMILIES = {
    "16bit": (16, [("F16", "F16", "F16"), ("F32", "F16", "F16"), ("F32", "BF16", "BF16")], _GMMA_N_ALL, True),
    "tf32": (8, [("F32", "TF32", "TF32")], _GMMA_N_ALL, False),
    "fp8": (32, [(d, a, b) for d in ("F16", "F32") for a, b in _FP8_PAIRS], _GMMA_N_ALL, False),
    "int8": (32, [("S32", a, b) for a in ("S8", "U8") for b in ("S8", "U8")], _GMMA_N_INT8, False),
}
# register source layouts of A for the RS variants, by A width (CuTe's ALayout_64x8/16/32)
_GMMA_A_REG = {
    32: _L(((4, 8, 4), (2, 2)), ((64, 1, 16), (8, 256))),
    16: _L(((4, 8, 4), (2, 2, 2)), ((128, 1, 16), (64, 8, 512))),
    8: _L(((4, 8, 4), (4, 2, 2)), ((256, 1, 16), (64, 8, 1024))),
}


def _gmma_smem(mn, k):
    """CuTe's GMMA::ABLayout<MN,K>: every thread of the warpgroup sees the whole tile (a descriptor)."""
    return _L((128, (mn, k)), (0, (1, mn)))


def _gmma_c(n):
    return _L(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512)))


class MMAAtom:
    """One MMA instruction as layouts (CuTe's ``MMA_Atom<MMA_Traits<Op>>``)."""

    __slots__ = ("name", "shape_mnk", "thr_id", "tv_layout_A", "tv_layout_B", "tv_layout_C",
                 "d_type", "a_type", "b_type", "c_type", "type_codes", "major_a", "major_b", "a_source")

    def __init__(self, name, shape_mnk, thr_id, a, b, c, types, codes, major_a="K", major_b="K", a_source="rmem"):
        self.name = name
        self.shape_mnk = tuple(shape_mnk)
        self.thr_id = thr_id
        self.tv_layout_A, self.tv_layout_B, self.tv_layout_C = a, b, c
        self.d_type, self.a_type, self.b_type, self.c_type = types
        self.type_codes = codes
        self.major_a, self.major_b = major_a, major_b
        self.a_source = a_source  # 'rmem' (registers) or 'smem' (a GMMA descriptor)

    @property
    def instruction(self) -> str:
        """The instruction one call of the atom issues: 'fma' (UniversalFMA, scalar), 'mma.sync.m8n8k4' (SM70
        quad pairs), 'mma.sync' (SM75/SM80/SM89, a warp), 'wgmma' (SM90 GMMA, a warpgroup).  Kernels lower an atom
        by this, never by its name."""
        if self.name == "UniversalFMA":
            return "fma"
        return {"SM70": "mma.sync.m8n8k4", "SM90": "wgmma"}.get(self.name[:4], "mma.sync")

    @property
    def arch(self) -> int:
        """The compute capability the atom's instruction needs (0 for UniversalFMA)."""
        return int(self.name[2:4]) if self.name.startswith("SM") else 0

    @property
    def num_threads(self) -> int:
        return self.thr_id.size

    @property
    def size(self) -> int:
        return self.thr_id.size

    def __repr__(self) -> str:
        m, n, k = self.shape_mnk
        extra = f", major_a={self.major_a!r}, major_b={self.major_b!r}" if self.name.startswith("SM90") else ""
        return f"mma_atom({self.name!r}{extra})  # {m}x{n}x{k}, {self.num_threads} threads"

    def __eq__(self, other):
        return type(other) is MMAAtom and (self.name, self.major_a, self.major_b) == (
            other.name, other.major_a, other.major_b)

    def __hash__(self):
        return hash((MMAAtom, self.name, self.major_a, self.major_b))


def _universal_fma(types):
    one = _L((1, 1), (0, 0))
    return MMAAtom("UniversalFMA", (1, 1, 1), _L(1, 0), one, one, one, types, None)


def mma_atom_names(include_gmma: bool = True) -> list[str]:
    """Every name :func:`mma_atom` accepts (GMMA names for every N CuTe defines)."""
    names = ["UniversalFMA"]
    for arch, (m, n, k), combos, sat in _SYNC_FAMILIES:
        for combo in combos:
            base = f"{arch}_{m}x{n}x{k}_{''.join(combo)}_TN"
            names.append(base)
            if sat and combo[1] in ("S8", "U8"):
                names.append(base + "_SATURATE")
    for suffix in ("TN", "NT", "NN", "TT"):
        names += [f"SM70_8x8x4_F16F16F16F16_{suffix}", f"SM70_8x8x4_F32F16F16F32_{suffix}"]
    if include_gmma:
        for fam, (k, combos, ns, mn_major) in _GMMA_FAMILIES.items():
            for combo in combos:
                for n in ns:
                    for src in ("SS", "RS"):
                        base = f"SM90_64x{n}x{k}_{''.join(combo)}_{src}"
                        if mn_major:
                            names.append(base)
                        else:
                            names.append(base + "_TN")
                            if fam == "int8":
                                names.append(base + "_TN_SATURATE")
    return names


_SYNC_RE = re.compile(r"^(SM75|SM80|SM89)_(\d+)x(\d+)x(\d+)_((?:[A-Z]+\d*)+?)_TN(_SATURATE)?$")
_GMMA_RE = re.compile(r"^SM90_64x(\d+)x(\d+)_([A-Z0-9]+?)_(SS|RS)(_TN)?(_SATURATE)?$")
_SM70_RE = re.compile(r"^SM70_8x8x4_(F16F16F16F16|F32F16F16F32)_(TN|NT|NN|TT)$")
_CODE_RE = re.compile(r"BF16|TF32|F16|F32|F64|S8|U8|S32|E4M3|E5M2")


def _split_codes(s):
    codes = _CODE_RE.findall(s)
    return tuple(codes) if "".join(codes) == s else None


def _unknown(name):
    close = difflib.get_close_matches(name, mma_atom_names(), n=6, cutoff=0.6)
    hint = f" Close names: {', '.join(close)}." if close else ""
    return ValueError(
        f"mma_atom: unknown MMA atom {name!r}.{hint} Accepted: UniversalFMA, SM70_8x8x4_*, SM75_16x8x8/8x8x16, "
        f"SM80_16x8x8/16x8x16/16x8x4/8x8x4/8x8x16/16x8x32, SM89_16x8x32 (fp8), SM90_64xNxK GMMA "
        f"(see workbench.atoms.mma_atom_names()).")


def _check_types(atom, types):
    """A typed atom takes only its own value types: all four (D, A, B, C), or one when all four are equal."""
    own = (atom.d_type, atom.a_type, atom.b_type, atom.c_type)
    if tuple(types) == own or (len(types) == 1 and all(t is types[0] for t in own)):
        return atom
    codes = f" (CuTe's {'/'.join(atom.type_codes)})" if atom.type_codes else ""
    raise TypeError(f"mma_atom({atom.name!r}): the value types are fixed by the atom's name: expected (D, A, B, C) = "
                    f"({', '.join(map(str, own))}){codes}, but got {tuple(types)!r}. "
                    f"Only UniversalFMA takes any types.")


def mma_atom(name: str, *types, major_a: str = "K", major_b: str = "K", **template_args) -> MMAAtom:
    """The MMA atom CuTe C++ calls ``name``, e.g. ``mma_atom("SM80_16x8x16_F32F16F16F32_TN")``.

    ``UniversalFMA`` takes its value types ``(D, A, B, C)`` or one type for all (default Float32);
    a tensor-core atom's types are fixed by its name, and passing others raises ``TypeError``.
    GMMA atoms (``SM90_64xNxK_...``) take ``major_a``/``major_b`` ('K' or 'MN', CuTe's
    ``GMMA::Major``); only 16-bit SS atoms accept MN-major operands, RS atoms an MN-major B.
    SM100 UMMA atoms take CuTe's template arguments as keywords: ``mma_atom("SM100_MMA_F16BF16_SS",
    a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32, m=128, n=256, a_major="K", b_major="K")``.
    """
    if not isinstance(name, str):
        raise TypeError(f"mma_atom: expected the atom's name as a str, but got {type(name).__name__}.")
    if name.startswith("SM100_") and "SM100_" in EXTENSIONS:
        if types or (major_a, major_b) != ("K", "K"):
            raise TypeError(f"mma_atom({name!r}): SM100 atoms take CuTe's template arguments as keywords (a_type=, "
                            "b_type=, c_type=, m=, n=, a_major=, b_major=, a_neg=, b_neg=, c_sat=).")
        return EXTENSIONS["SM100_"](name, **template_args)
    if template_args:
        raise TypeError(f"mma_atom({name!r}): unexpected keyword arguments {sorted(template_args)}; only SM100 atoms "
                        "take template arguments as keywords.")
    for what, v in (("major_a", major_a), ("major_b", major_b)):
        if v not in ("K", "MN"):
            raise ValueError(f"mma_atom: expected {what} to be 'K' or 'MN', but got {v!r}.")
    if name == "UniversalFMA":
        if len(types) == 1:
            types = types * 4
        if not types:
            types = (et.Float32,) * 4
        if len(types) != 4 or not all(isinstance(t, et.ElementType) for t in types):
            raise TypeError(f"mma_atom('UniversalFMA'): expected one element type or four (D, A, B, C), but got {types!r}.")
        return _universal_fma(types)
    if types:
        return _check_types(mma_atom(name, major_a=major_a, major_b=major_b), types)
    if (major_a, major_b) != ("K", "K") and not name.startswith("SM90"):
        raise ValueError(f"mma_atom({name!r}): only SM90 GMMA atoms take major_a/major_b; this atom's operands are "
                         f"fixed by its name (got major_a={major_a!r}, major_b={major_b!r}).")

    m = _SM70_RE.match(name)
    if m:
        codes = _split_codes(m.group(1))
        a_l, b_l = m.group(2)
        a = _SM70_8x4_ROW if a_l == "T" else _SM70_8x4_COL
        b = _SM70_8x4_ROW if b_l == "N" else _SM70_8x4_COL
        c = _SM70_8x8_16B if codes[0] == "F16" else _SM70_8x8_32B
        return MMAAtom(name, (8, 8, 4), _SM70_QUADPAIR, a, b, c, tuple(TYPE_CODES[x] for x in codes), codes)

    m = _SYNC_RE.match(name)
    if m:
        arch, mm, nn, kk = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
        codes = _split_codes(m.group(5))
        for farch, mnk, combos, sat in _SYNC_FAMILIES:
            if farch == arch and mnk == (mm, nn, kk) and codes in combos and (not m.group(6) or sat):
                types = tuple(TYPE_CODES[x] for x in codes)
                a, b, c = _SYNC_LAYOUTS[(arch, mnk, types[1].width)]
                return MMAAtom(name, mnk, _L(32, 1), a, b, c, types, codes)
        raise _unknown(name)

    m = _GMMA_RE.match(name)
    if m:
        n, k, src, tn, sat = int(m.group(1)), int(m.group(2)), m.group(4), m.group(5), m.group(6)
        codes = _split_codes(m.group(3))
        for fam, (fk, combos, ns, mn_major) in _GMMA_FAMILIES.items():
            if codes in combos and fk == k and n in ns and bool(tn) != mn_major and (not sat or fam == "int8"):
                break
        else:
            raise _unknown(name)
        if not mn_major and (major_a, major_b) != ("K", "K"):
            raise ValueError(f"mma_atom({name!r}): {codes[1]} GMMA takes K-major operands only (the _TN in its name); "
                             f"got major_a={major_a!r}, major_b={major_b!r}.")
        if src == "RS" and major_a != "K":
            raise ValueError(f"mma_atom({name!r}): an RS GMMA reads A from registers, which are K-major; got major_a={major_a!r}.")
        d, a_c, b_c = codes
        types = (TYPE_CODES[d], TYPE_CODES[a_c], TYPE_CODES[b_c], TYPE_CODES[d])
        a = _gmma_smem(64, k) if src == "SS" else _GMMA_A_REG[types[1].width]
        return MMAAtom(name, (64, n, k), _L(128, 1), a, _gmma_smem(n, k), _gmma_c(n), types, codes + (d,),
                       major_a, major_b, "smem" if src == "SS" else "rmem")
    raise _unknown(name)
