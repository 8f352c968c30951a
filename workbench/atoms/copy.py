"""Copy atoms as layouts: CuTe's ``Copy_Traits`` (in bits) recast to a value type (``Copy_Atom``).

``layout_src_tv_bits`` maps (source thread, source value) to the bit of the copied block,
``layout_dst_tv_bits`` the same for the destination, ``layout_ref_tv_bits`` is the reference
the tiled copy partitions by.  ``layout_src_tv`` etc. are the same in elements of the value
type (CuTe's ``recast_layout<uint1_t, ValType>``, an upcast of every stride by the width).
``kind`` tells the bank-conflict model which shared-memory instruction the atom issues.
"""

from __future__ import annotations

import difflib

from .. import _element_types as et
from ..layout import Layout

__all__ = ["CopyAtom", "copy_atom", "copy_atom_names", "upcast"]


def _ceil_div(a, b):
    return -(-a // b)


def upcast(layout: Layout, n: int, what: str = "upcast") -> Layout:
    """CuTe's ``upcast<N>(layout)``: a layout over units of 1 now over units of N.

    Stride-0 modes stay; a stride d becomes ceil(|d|/N) (sign kept) and its shape shrinks by
    ceil(N/|d|).  CuTe's divisibility condition (d % N == 0 or N % d == 0) is checked.
    Candidate for the core: ``workbench.layout.upcast`` (with ``downcast``/``recast_layout``).
    """
    def leaf(s, d):
        if d == 0:
            return s, 0
        if abs(d) % n and n % abs(d):
            raise ValueError(f"{what}: stride {d} and width {n} do not divide one another (CuTe's divisibility condition).")
        return _ceil_div(s, _ceil_div(n, abs(d))), (1 if d > 0 else -1) * _ceil_div(abs(d), n)

    def go(s, d):
        if type(s) is tuple:
            pairs = [go(a, b) for a, b in zip(s, d)]
            return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        return leaf(s, d)

    return Layout(*go(layout.shape, layout.stride))


# name prefix -> constructor of atoms defined in modules that build on this one (workbench.atoms.tmem registers
# "SM100_" when the package is imported), so this module imports none of them
EXTENSIONS: dict = {}


def _L(shape, stride):
    return Layout(shape, stride)


# SM75 ldmatrix: (thread, value) -> bit of the 8x8 b16 matrices; _N: a thread holds 32 bits of a
# row, _T: the transposed load, a thread holds two 16-bit values of a column.
_LDSM_SRC = {1: _L(((8, 4), 128), ((128, 0), 1)), 2: _L(((16, 2), 128), ((128, 0), 1)), 4: _L((32, 128), (128, 1))}
_LDSM_N_DST = {1: _L((32, 32), (32, 1)), 2: _L((32, (32, 2)), (32, (1, 1024))), 4: _L((32, (32, 4)), (32, (1, 1024)))}
_LDSM_T_DST = {1: _L(((4, 8), (16, 2)), ((256, 16), (1, 128))),
               2: _L(((4, 8), (16, 2, 2)), ((256, 16), (1, 128, 1024))),
               4: _L(((4, 8), (16, 2, 4)), ((256, 16), (1, 128, 1024)))}


def _catalog():
    cat = {}
    # name -> (thr_id, src_bits, dst_bits, ref_bits, kind, matrices)
    for x in (1, 2, 4):
        cat[f"SM75_U32x{x}_LDSM_N"] = (_L(32, 1), _LDSM_SRC[x], _LDSM_N_DST[x], _LDSM_N_DST[x], "ldsm", x)
        cat[f"SM75_U16x{2 * x}_LDSM_T"] = (_L(32, 1), _LDSM_SRC[x], _LDSM_T_DST[x], _LDSM_T_DST[x], "ldsm", x)
        cat[f"SM90_U32x{x}_STSM_N"] = (_L(32, 1), _LDSM_N_DST[x], _LDSM_SRC[x], _LDSM_N_DST[x], "stsm", x)
        cat[f"SM90_U16x{2 * x}_STSM_T"] = (_L(32, 1), _LDSM_T_DST[x], _LDSM_SRC[x], _LDSM_T_DST[x], "stsm", x)
    for bits in (8, 16, 32, 64, 128):
        one = _L((1, bits), (0, 1))
        cat[f"UniversalCopy_U{bits}"] = (_L(1, 0), one, one, one, "universal", bits)
    for bits in (32, 64, 128):
        one = _L((1, bits), (0, 1))
        cat[f"SM80_CP_ASYNC_CACHEALWAYS_U{bits}"] = (_L(1, 0), one, one, one, "cp_async", bits)
    one = _L((1, 128), (0, 1))
    cat["SM80_CP_ASYNC_CACHEGLOBAL_U128"] = (_L(1, 0), one, one, one, "cp_async", 128)
    return cat


_CATALOG = _catalog()


def copy_atom_names() -> list[str]:
    """Every name :func:`copy_atom` accepts (``UniversalCopy`` and ``SM80_CP_ASYNC_CACHEALWAYS`` also
    take ``num_bits=``)."""
    return ["UniversalCopy", "SM80_CP_ASYNC_CACHEALWAYS", "SM80_CP_ASYNC_CACHEGLOBAL", *_CATALOG]


class CopyAtom:
    """One copy instruction as layouts over a value type (CuTe's ``Copy_Atom<Copy_Traits<Op>, T>``)."""

    __slots__ = ("name", "value_type", "thr_id", "layout_src_tv_bits", "layout_dst_tv_bits", "layout_ref_tv_bits",
                 "layout_src_tv", "layout_dst_tv", "layout_ref_tv", "kind", "num_bits", "matrices")

    def __init__(self, name, value_type, thr_id, src_bits, dst_bits, ref_bits, kind, extra):
        self.name, self.value_type, self.thr_id, self.kind = name, value_type, thr_id, kind
        self.layout_src_tv_bits, self.layout_dst_tv_bits, self.layout_ref_tv_bits = src_bits, dst_bits, ref_bits
        self.matrices = extra if kind in ("ldsm", "stsm") else None
        self.num_bits = extra if kind in ("universal", "cp_async") else 32 * extra
        w = value_type.bits
        what = f"copy_atom({name!r}, {value_type})"
        misfit = _misfit(thr_id, (src_bits, dst_bits, ref_bits), w)
        if misfit:
            raise ValueError(f"{what}: a {w}-bit value does not fit this instruction ({misfit}). "
                             f"Accepted value types: {_accepted_widths(name)}.")
        self.layout_src_tv = upcast(src_bits, w, what)
        self.layout_dst_tv = upcast(dst_bits, w, what)
        self.layout_ref_tv = upcast(ref_bits, w, what)

    @property
    def num_threads(self) -> int:
        return self.thr_id.size

    @property
    def num_val_src(self) -> int:
        return self.layout_src_tv[1].size

    @property
    def num_val_dst(self) -> int:
        return self.layout_dst_tv[1].size

    def __repr__(self) -> str:
        return f"copy_atom({self.name!r}, {self.value_type})"


def _leaves(shape, stride):
    if type(shape) is tuple:
        for s, d in zip(shape, stride):
            yield from _leaves(s, d)
    else:
        yield shape, stride


def _misfit(thr_id, bit_layouts, w):
    """Why a ``w``-bit value type does not fit an atom with these (src, dst, ref) bit layouts, or None.

    The one rule behind both ``copy_atom`` and the accepted-widths listing: the recast must be exact
    (CuTe's ``recast_layout`` rounds a 32-bit value in a 16-bit copy to one value and accepts it,
    a copy of half a value; we refuse that) and must keep the atom's thread count.
    """
    for side, bits in zip(("source", "destination", "reference"), bit_layouts):
        for s, d in _leaves(bits[1].shape, bits[1].stride):
            if abs(d) == 1 and s % w:
                return f"the {side} layout {bits} moves runs of {s} contiguous bits, which {w}-bit values do not tile"
        try:
            lay = upcast(bits, w, f"the {side} layout {bits}")
        except ValueError as e:
            return str(e).rstrip(".")
        if lay[0].size != thr_id.size:
            return f"the {side} layout {lay} would give {lay[0].size} threads, the atom has {thr_id.size}"
    return None


# widths of the element types there are (wb.Float4E2M1FN ... wb.Complex128)
_WIDTHS = sorted({t.bits for t in et.ALL_SCALAR_TYPES})


def _accepted_widths(name):
    thr, src, dst, ref, kind, extra = _CATALOG[name]
    ok = [w for w in _WIDTHS if _misfit(thr, (src, dst, ref), w) is None]
    return "element types of " + "/".join(map(str, ok)) + " bits"


def copy_atom(name: str, value_type, num_bits: int | None = None) -> CopyAtom:
    """The copy atom CuTe C++ calls ``Copy_Atom<name, value_type>``, e.g.
    ``copy_atom("SM75_U32x4_LDSM_N", wb.Float16)``; Blackwell's TMEM atoms too:
    ``copy_atom("SM100_TMEM_LOAD_32dp32b8x", wb.Float32)`` (``SM100_TMEM_LOAD/STORE_*``, ``SM100_UTCCP_*``).

    ``UniversalCopy`` (CuTe's ``UniversalCopy<uintN_t>``) and the cp.async ops take ``num_bits``
    (default: the value type's width for UniversalCopy, 128 for cp.async), or spell it in the
    name: ``UniversalCopy_U128``, ``SM80_CP_ASYNC_CACHEALWAYS_U64``.
    """
    if not isinstance(name, str):
        raise TypeError(f"copy_atom: expected the atom's name as a str, but got {type(name).__name__}.")
    if name.startswith("SM100_") and "SM100_" in EXTENSIONS and num_bits is None:
        return EXTENSIONS["SM100_"](name, value_type)
    if not isinstance(value_type, et.ElementType):
        raise TypeError(f"copy_atom({name!r}): expected an element type (wb.Float16, ...) as value type, "
                        f"but got {type(value_type).__name__}.")
    if name in ("UniversalCopy", "SM80_CP_ASYNC_CACHEALWAYS", "SM80_CP_ASYNC_CACHEGLOBAL"):
        bits = num_bits if num_bits is not None else (value_type.bits if name == "UniversalCopy" else 128)
        name = f"{name}_U{bits}"
        if name not in _CATALOG:
            raise ValueError(f"copy_atom: num_bits={bits} is not offered by this copy; accepted: "
                             f"{', '.join(n for n in _CATALOG if n.startswith(name.rsplit('_U', 1)[0]))}.")
    elif num_bits is not None:
        raise ValueError(f"copy_atom({name!r}): num_bits is fixed by this atom's name; got num_bits={num_bits}.")
    if name not in _CATALOG:
        close = difflib.get_close_matches(name, list(_CATALOG), n=6, cutoff=0.5)
        hint = f" Close names: {', '.join(close)}." if close else ""
        raise ValueError(f"copy_atom: unknown copy atom {name!r}.{hint} Accepted: {', '.join(copy_atom_names())}.")
    return CopyAtom(name, value_type, *_CATALOG[name])
