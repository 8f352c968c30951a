"""Swizzles and composed (swizzled) layouts: ``S<B,M,S> o offset o layout``.

``Swizzle(b, m, s)(x) = x ^ ((x & yyy) >> s)`` with ``yyy = ((1<<b)-1) << (m + max(0,s))``:
the b bits above bit m+s are xor-ed into the b bits above bit m (a negative s shifts the
other way).  It is a bijection on [0, 2**(b+m+|s|)) and on every aligned block of that size.
``ComposedLayout(sw, offset, layout)(c) == sw(offset + layout(c))``; printed as CuTe does,
``S<3,4,3> o 0 o (8,64):(64,1)``.

CuTe C++ also composes a swizzle with a shared-memory pointer flag, ``Sw<3,4,3> o smem_ptr[16b](unset) o
(_8,_64):(_64,_1)`` (``GMMA::Layout_K_SW128_Atom<half_t>``): there the swizzle acts on the pointer's *byte*
address.  Such a layout is kept here as the same function of the element offset (the swizzle's base moved down
by log2 of the element's bytes: ``S<3,3,3>`` for 16-bit elements) with ``ptr_bits`` recording the element width,
so that it prints as CuTe wrote it and :attr:`ComposedLayout.cute_swizzle` / :attr:`ComposedLayout.alignment`
give CuTe's byte-unit swizzle and the alignment the base pointer needs (SW128: 1024 bytes).
"""

from __future__ import annotations

import numpy as np

from . import inttuple as it
from .layout import INT64_MAX, Layout, check_int64_span, offset_span, offsets_at
from .slicing import offset_of, slice_
from .values import Symbolic, value_of

__all__ = ["Swizzle", "ComposedLayout", "make_swizzle", "make_composed_layout"]


class Swizzle:
    """CuTe's ``Swizzle<BBits, MBase, SShift>`` as a function on integers (and numpy arrays)."""

    __slots__ = ("bits", "base", "shift", "yyy_mask", "zzz_mask")

    def __init__(self, bits: int, base: int, shift: int):
        for name, v in (("bits", bits), ("base", base), ("shift", shift)):
            if type(v) is not int:
                raise TypeError(f"Swizzle: expected a static int for {name}, but got {type(v).__name__} ({v!r}).")
        if bits < 0 or base < 0:
            raise ValueError(f"Swizzle: expected bits >= 0 and base >= 0, but got bits={bits}, base={base}.")
        if abs(shift) < bits:
            raise ValueError(f"Swizzle: expected |shift| >= bits so the two bit fields do not overlap, but got bits={bits}, shift={shift}.")
        self.bits, self.base, self.shift = bits, base, shift
        mask = (1 << bits) - 1
        self.yyy_mask = mask << (base + max(0, shift))
        self.zzz_mask = mask << (base - min(0, shift))

    def __call__(self, x):
        """x ^ shiftr(x & yyy_mask, shift); works on ints and integer numpy arrays."""
        y = x & self.yyy_mask
        return x ^ (y >> self.shift if self.shift >= 0 else y << -self.shift)

    @property
    def size(self) -> int:
        """The period of the swizzle: 2**(bits + base + |shift|)."""
        return 1 << (self.bits + self.base + abs(self.shift))

    cosize = size

    def __str__(self) -> str:
        return f"S<{self.bits},{self.base},{self.shift}>"

    def __repr__(self) -> str:
        return f"Swizzle({self.bits},{self.base},{self.shift})"

    def __eq__(self, other) -> bool:
        return type(other) is Swizzle and (self.bits, self.base, self.shift) == (other.bits, other.base, other.shift)

    def __hash__(self) -> int:
        return hash((Swizzle, self.bits, self.base, self.shift))

    def _compose(self, B):
        """composition(swizzle, B) == ComposedLayout(swizzle, 0, B); B itself for a swizzle of 0 bits (the
        identity), as CuTe C++ returns it."""
        if type(B) is int:
            B = Layout(B)
        if getattr(B, "_is_f2", False):   # swizzle o F2 layout: an F2 layout, checked element by element
            return B._compose_right(self)
        if type(B) is not Layout:
            raise TypeError(f"composition: expected a Layout after {self}, but got {type(B).__name__}.")
        return B if self.bits == 0 else ComposedLayout(self, 0, B)


def make_swizzle(bits, base, shift) -> Swizzle:
    return Swizzle(bits, base, shift)


class ComposedLayout:
    """``inner o offset o outer``: ``CL(c) == inner(offset + outer(c))`` (CuTe DSL's
    make_composed_layout(inner, offset, outer)); the domain, shape and rank are outer's."""

    __slots__ = ("inner", "offset", "outer", "ptr_bits", "_offsets")
    _is_composed = True

    def __init__(self, inner, offset, outer, ptr_bits=None):
        if type(inner) is not Swizzle and type(inner) is not Layout:
            raise TypeError(f"ComposedLayout: expected a Swizzle or Layout as the inner function, but got {type(inner).__name__}.")
        if type(outer) is not Layout:
            raise TypeError(f"ComposedLayout: expected a Layout as the outer layout, but got {type(outer).__name__}.")
        if ptr_bits is not None:
            byte_swizzle_of(inner, ptr_bits)  # checks that CuTe's byte-unit spelling exists
            if offset != 0:
                raise ValueError(f"ComposedLayout: a swizzle over an smem pointer (ptr_bits={ptr_bits}) has no offset "
                                 f"(CuTe prints smem_ptr[{ptr_bits}b](unset) in its place), but got offset {offset}.")
        self.inner, self.offset, self.outer, self.ptr_bits = inner, offset, outer, ptr_bits
        self._offsets = None

    # -- identity ------------------------------------------------------------------------
    def __str__(self) -> str:
        if self.ptr_bits is not None:  # CuTe C++'s spelling: the swizzle in bytes, over the pointer
            return f"Sw{str(self.cute_swizzle)[1:]} o smem_ptr[{self.ptr_bits}b](unset) o {self.outer}"
        return f"{self.inner} o {self.offset} o {self.outer}"

    __repr__ = __str__

    def __eq__(self, other) -> bool:
        return (type(other) is ComposedLayout and self.inner == other.inner and self.offset == other.offset
                and self.outer == other.outer and self.ptr_bits == other.ptr_bits)

    def __hash__(self) -> int:
        return hash((self.inner, self.offset, self.outer, self.ptr_bits))

    @property
    def cute_swizzle(self):
        """The swizzle as CuTe C++ writes it: in bytes of the pointer's address when ``ptr_bits`` is set
        (``Sw<3,4,3>`` for the 16-bit SW128 atom whose element-unit swizzle, ``.inner``, is ``S<3,3,3>``), else
        ``.inner`` itself."""
        return self.inner if self.ptr_bits is None else byte_swizzle_of(self.inner, self.ptr_bits)

    @property
    def alignment(self):
        """Bytes the base pointer must be aligned to for this function to be the one CuTe applies (the swizzle
        reads absolute address bits up to 2**(B+M+|S|) bytes); None without ``ptr_bits`` (the element width is
        unknown: the swizzle's period in elements is ``inner.size``)."""
        if self.ptr_bits is None or type(self.inner) is not Swizzle:
            return None
        sw = self.cute_swizzle
        return max(sw.size if sw.bits else 1, -(-self.ptr_bits // 8))

    # -- structure (the outer layout's) ----------------------------------------------------
    @property
    def layout(self) -> Layout:
        """The outer (shape:stride) layout, before the offset and the swizzle."""
        return self.outer

    shape = property(lambda self: self.outer.shape)
    stride = property(lambda self: self.outer.stride)
    rank = property(lambda self: self.outer.rank)
    depth = property(lambda self: self.outer.depth)
    size = property(lambda self: self.outer.size)
    is_static = property(lambda self: self.outer.is_static)

    @property
    def cosize(self) -> int:
        """One past the largest offset the composed function reaches over its domain."""
        offs = self.offsets()
        return int(offs.max()) + 1 if offs.size else 0

    def __getitem__(self, i) -> ComposedLayout:
        return ComposedLayout(self.inner, self.offset, self.outer[i], self.ptr_bits)

    # -- evaluation ------------------------------------------------------------------------
    def __call__(self, *crd):
        c = crd[0] if len(crd) == 1 else tuple(crd)
        if it.has_none(c):
            return self._slice(c)
        base = self.offset + self.outer(c)
        if isinstance(base, Symbolic) and base.value is not None:
            base = base.value   # a run-time offset (a slice at a dynamic coordinate) with its value: answer an int
        if type(self.inner) is Layout and type(base) is int and base < 0:
            # an inner layout's domain is the indices >= 0 (Python's and C++'s division disagree below 0)
            raise ValueError(f"{self} at {c}: expected offset + outer(c) >= 0 to index the inner layout "
                             f"{self.inner}, but got {base}.")
        return self.inner(base)

    def offsets(self) -> np.ndarray:
        """All offsets 0..size-1, vectorized: inner(offset + outer.offsets())."""
        if self._offsets is None:
            out = self.inner_at(self.outer.offsets(), f"offsets() of {self}")
            out.setflags(write=False)
            self._offsets = out
        return self._offsets

    def inner_at(self, outer_offsets, what) -> np.ndarray:
        """``inner(offset + o)`` for an int64 array of outer offsets ``o``, as ``__call__`` computes each: a
        swizzle bit by bit, an inner layout by crd2idx (an index past its size extends its last mode, as in
        CuTe).  Refuses (ValueError, ``what`` naming the caller) what int64 cannot hold and negative indices
        into an inner layout."""
        span = offset_span(self.outer)
        if span is None or not outer_offsets.size:
            return np.zeros(outer_offsets.shape, dtype=np.int64)
        off = int(self.offset)
        check_int64_span(what, span[0] + off, span[1] + off)
        base = outer_offsets + off
        inner = self.inner
        if type(inner) is Swizzle:
            top = max(inner.yyy_mask, inner.zzz_mask)
            if top > INT64_MAX:  # a bit shifted up past bit 62 would wrap silently in int64
                raise ValueError(f"{what}: expected a swizzle whose bit fields lie within int64 (bits 0..62), but "
                                 f"{inner} uses bit {top.bit_length() - 1}.")
            return np.asarray(inner(base), dtype=np.int64)
        return offsets_at(base, it.flatten(value_of(inner.shape)), it.flatten(value_of(inner.stride)),
                          f"{what}, inner layout {inner} at offset + outer(c)")

    # -- algebra hooks ---------------------------------------------------------------------
    def _compose(self, B):
        """composition(inner o off o outer, B) == inner o off o composition(outer, B)."""
        from .algebra import composition

        if getattr(B, "_is_f2", False):   # (inner o off o outer) o F2 layout: an F2 layout, checked element by element
            return B._compose_right(self)
        return ComposedLayout(self.inner, self.offset, composition(self.outer, B), self.ptr_bits)

    def _apply(self, fn):
        return ComposedLayout(self.inner, self.offset, fn(self.outer), self.ptr_bits)

    def _slice(self, crd):
        """The sliced composed layout keeps the swizzle; the slice's offset moves inside it."""
        from .inttuple import fill_none as _fill

        return self._moved(slice_(self.outer, crd), offset_of(self.outer, _fill(crd)))

    def _moved(self, sub, off):
        """inner o (offset + off) o sub; an smem pointer's width (ptr_bits) stays only while there is no offset
        (CuTe's smem_ptr flag has none)."""
        if self.ptr_bits is not None and (type(off) is not int or off != 0):
            return ComposedLayout(self.inner, self.offset + off, sub)
        return ComposedLayout(self.inner, self.offset + off, sub, self.ptr_bits)

    def _slice_and_offset(self, crd):
        """(sliced, offset): the sliced composed layout keeps the swizzle and takes the slice's offset inside it,
        except a dynamic part that is a multiple of the swizzle's period (a stage of a shared-memory ring): a
        swizzle never moves the bits above its period, so ``sw(x + k*period) == sw(x) + k*period`` and that part
        is returned as the offset outside (in a kernel, the swizzle of the rest is then the same at every stage)."""
        from .inttuple import fill_none as _fill
        from .values import divisibility_of

        sub = slice_(self.outer, crd)
        off = offset_of(self.outer, _fill(crd))
        if type(self.inner) is Swizzle and type(off) is not int and divisibility_of(off) % self.inner.size == 0:
            return ComposedLayout(self.inner, self.offset, sub, self.ptr_bits), off
        return self._moved(sub, off), 0


def _log2(n):
    return n.bit_length() - 1 if n > 0 and n & (n - 1) == 0 else None


def byte_swizzle_of(sw, bits) -> Swizzle:
    """CuTe's byte-address swizzle equal to the element-offset swizzle ``sw`` over ``bits``-bit elements:
    the base moves up by log2(bits / 8) (down for sub-byte elements)."""
    if type(sw) is not Swizzle:
        raise TypeError(f"ComposedLayout: an smem pointer width (ptr_bits) goes with a Swizzle, but got {type(sw).__name__}.")
    lb = _log2(bits) if type(bits) is int else None
    if lb is None:
        raise ValueError(f"ComposedLayout: expected ptr_bits to be a power of two (the element width in bits), but got {bits!r}.")
    return Swizzle(sw.bits, sw.base + lb - 3, sw.shift) if sw.base + lb - 3 >= 0 else _no_bytes(sw, bits)


def _no_bytes(sw, bits):
    raise ValueError(f"ComposedLayout: the element swizzle {sw} over {bits}-bit elements has no byte-address spelling "
                     f"(its base would be {sw.base + _log2(bits) - 3} < 0).")


def element_swizzle_of(sw, bits) -> Swizzle:
    """The element-offset swizzle equal to CuTe's byte-address swizzle ``sw`` over ``bits``-bit elements
    (``Sw<3,4,3>`` over 16-bit elements is ``S<3,3,3>``); ValueError where there is none (the swizzle would
    move part of an element: its base M is below log2 of the element's bytes)."""
    lb = _log2(bits) if type(bits) is int else None
    if lb is None:
        raise ValueError(f"Expected an smem pointer width that is a power of two (bits), but got {bits!r}.")
    base = sw.base - lb + 3
    if base < 0:
        raise ValueError(f"Expected a byte swizzle whose base M >= log2({bits // 8 or 1} bytes) = {lb - 3} for "
                         f"{bits}-bit elements (it must move whole elements), but got {sw}'s M = {sw.base}.")
    return Swizzle(sw.bits, base, sw.shift)



def make_composed_layout(inner, offset, outer) -> ComposedLayout:
    """CuTe DSL's make_composed_layout: ``R(c) = inner(offset + outer(c))``."""
    return ComposedLayout(inner, offset, outer)

