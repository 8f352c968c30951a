"""The GMMA shared-memory layout atoms (CuTe's ``GMMA::Layout_{K,MN}_{INTER,SW32,SW64,SW128}_Atom<T>``).

CuTe defines them in bits (``Swizzle<B,4,3> o (8, 128*2^B):(128*2^B, 1)`` K-major) and applies the
swizzle to the byte address of a shared-memory pointer: CuTe C++ prints the 16-bit SW128 atom as
``Sw<3,4,3> o smem_ptr[16b](unset) o (_8,_64):(_64,_1)``.  Here they are functions of the element
offset: ``.inner`` is the swizzle with its base moved down by log2(bytes per element) (``S<3,3,3>``), so
``atom(c) == sw(layout(c) * bytes) / bytes`` exactly as CuTe computes it, and the atom keeps the element
width (``ptr_bits``) so it prints as CuTe writes it; ``.alignment`` is the base alignment the swizzle
needs (SW128: 1024 bytes).
"""

from __future__ import annotations

import difflib

from .. import _element_types as et
from ..layout import ComposedLayout, Layout, Swizzle

__all__ = ["gmma_smem_atom", "GMMA_SMEM_ATOMS"]

# name -> swizzle bits B (INTER: no swizzle); the atom spans 8 rows of 16*2^B bytes
_KINDS = {"INTER": 0, "SW32": 1, "SW64": 2, "SW128": 3}
GMMA_SMEM_ATOMS = tuple(f"Layout_{major}_{kind}_Atom" for major in ("K", "MN") for kind in _KINDS)


def gmma_smem_atom(name: str, element_type) -> ComposedLayout:
    """``gmma_smem_atom("Layout_K_SW128_Atom", wb.Float16)`` -> ``Sw<3,4,3> o smem_ptr[16b](unset) o (8,64):(64,1)``
    (CuTe C++'s spelling), the element-offset function ``S<3,3,3> o 0 o (8,64):(64,1)`` (its ``.inner`` is
    ``S<3,3,3>``)."""
    if name not in GMMA_SMEM_ATOMS:
        close = difflib.get_close_matches(str(name), GMMA_SMEM_ATOMS, n=3)
        raise ValueError(f"gmma_smem_atom: unknown atom {name!r}{' (close: ' + ', '.join(close) + ')' if close else ''}; "
                         f"accepted: {', '.join(GMMA_SMEM_ATOMS)}.")
    if not isinstance(element_type, et.ElementType):
        raise TypeError(f"gmma_smem_atom: expected an element type, but got {type(element_type).__name__}.")
    bits = element_type.bits
    if bits not in (8, 16, 32, 64):
        raise ValueError(f"gmma_smem_atom({name}): expected an element type of 8, 16, 32 or 64 bits, but got "
                         f"{element_type} ({bits} bits).")
    b = _KINDS[name.split("_")[2]]
    row = (128 << b) // bits          # elements in one 16*2^B-byte row
    base = 4 - (bits // 8).bit_length() + 1  # log2(16 bytes / element bytes)
    layout = Layout((8, row), (row, 1)) if name.startswith("Layout_K_") else Layout((row, 8), (1, row))
    return ComposedLayout(Swizzle(b, base, 3), 0, layout, ptr_bits=bits)
