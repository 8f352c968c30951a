"""Swizzles and composed (swizzled) layouts: ``S<B,M,S> o offset o layout``.

``Swizzle(b, m, s)(x) = x ^ ((x & yyy) >> s)`` with ``yyy = ((1<<b)-1) << (m + max(0,s))``:
the b bits above bit m+s are xor-ed into the b bits above bit m (a negative s shifts the
other way).  It is a bijection on [0, 2**(b+m+|s|)) and on every aligned block of that size.
``ComposedLayout(sw, offset, layout)(c) == sw(offset + layout(c))``; printed as CuTe does,
``S<3,4,3> o 0 o (8,64):(64,1)``.
"""

from __future__ import annotations

import numpy as np

from . import inttuple as it
from .layout import INT64_MAX, Layout, check_int64_span, offset_span, offsets_at
from .slicing import offset_of, slice_
from .values import value_of

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
        """composition(swizzle, B) == ComposedLayout(swizzle, 0, B)."""
        if type(B) is int:
            B = Layout(B)
        if type(B) is not Layout:
            raise TypeError(f"composition: expected a Layout after {self}, but got {type(B).__name__}.")
        return ComposedLayout(self, 0, B)


def make_swizzle(bits, base, shift) -> Swizzle:
    return Swizzle(bits, base, shift)


class ComposedLayout:
    """``inner o offset o outer``: ``CL(c) == inner(offset + outer(c))`` (CuTe DSL's
    make_composed_layout(inner, offset, outer)); the domain, shape and rank are outer's."""

    __slots__ = ("inner", "offset", "outer", "_offsets")
    _is_composed = True

    def __init__(self, inner, offset, outer):
        if type(inner) is not Swizzle and type(inner) is not Layout:
            raise TypeError(f"ComposedLayout: expected a Swizzle or Layout as the inner function, but got {type(inner).__name__}.")
        if type(outer) is not Layout:
            raise TypeError(f"ComposedLayout: expected a Layout as the outer layout, but got {type(outer).__name__}.")
        self.inner, self.offset, self.outer = inner, offset, outer
        self._offsets = None

    # -- identity ------------------------------------------------------------------------
    def __str__(self) -> str:
        return f"{self.inner} o {self.offset} o {self.outer}"

    __repr__ = __str__

    def __eq__(self, other) -> bool:
        return (type(other) is ComposedLayout and self.inner == other.inner and self.offset == other.offset
                and self.outer == other.outer)

    def __hash__(self) -> int:
        return hash((self.inner, self.offset, self.outer))

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
        return ComposedLayout(self.inner, self.offset, self.outer[i])

    # -- evaluation ------------------------------------------------------------------------
    def __call__(self, *crd):
        c = crd[0] if len(crd) == 1 else tuple(crd)
        if it.has_none(c):
            return self._slice(c)
        base = self.offset + self.outer(c)
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

        return ComposedLayout(self.inner, self.offset, composition(self.outer, B))

    def _apply(self, fn):
        return ComposedLayout(self.inner, self.offset, fn(self.outer))

    def _slice(self, crd):
        """The sliced composed layout keeps the swizzle; the slice's offset moves inside it."""
        from .inttuple import fill_none as _fill

        sub = slice_(self.outer, crd)
        return ComposedLayout(self.inner, self.offset + offset_of(self.outer, _fill(crd)), sub)

    def _slice_and_offset(self, crd):
        """(sliced, offset): the sliced composed layout keeps the swizzle and takes the slice's offset inside it,
        except a part that is a multiple of the swizzle's period (a stage of a shared-memory ring): a swizzle
        never moves the bits above its period, so ``sw(x + k*period) == sw(x) + k*period`` and that part is
        returned as the offset outside (in a kernel, the swizzle of the rest is then the same at every stage)."""
        from .inttuple import fill_none as _fill
        from .values import divisibility_of

        sub = slice_(self.outer, crd)
        off = offset_of(self.outer, _fill(crd))
        if type(self.inner) is Swizzle and type(off) is not int and divisibility_of(off) % self.inner.size == 0:
            return ComposedLayout(self.inner, self.offset, sub), off
        return ComposedLayout(self.inner, self.offset + off, sub), 0


def make_composed_layout(inner, offset, outer) -> ComposedLayout:
    """CuTe DSL's make_composed_layout: ``R(c) = inner(offset + outer(c))``."""
    return ComposedLayout(inner, offset, outer)

