"""Tensors and pointers, CuTe DSL style: ``from_dlpack``, ``make_ptr``, ``make_tensor`` and
dynamic marking (``mark_layout_dynamic``, ``mark_compact_shape_dynamic``).

A :class:`Tensor` is a zero-copy view: it keeps the producer's memory alive and exports itself
back through DLPack.  Its layout starts fully static (as CuTe DSL's ``from_dlpack``); marking
turns modes into dynamic ``?`` values that still carry their runtime values.

Where CuTe DSL 4.8 returns a wrong answer we raise instead (each is tested):
``mark_compact_shape_dynamic`` on a non-compact tensor, ``divisibility <= 0``, a data pointer
that ``assumed_align`` does not divide, complex dtypes, ``.layout``.
"""

from __future__ import annotations

import functools
import operator
import threading
from math import gcd

from . import _element_types as et
from ._memory import check_bare_span
from .dlpack import _native
from .dlpack.abi import (
    DLPACK_FLAG_BITMASK_IS_COPIED,
    DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
    DLPACK_FLAG_BITMASK_READ_ONLY,
    DLDeviceType,
)
from .dlpack.dtypes import PACKED as _PACKED
from .dlpack.dtypes import dldtype_of, element_type_of_packed
from .dlpack.importer import dlpack_fields
from .layout import Dyn, Layout, is_compact, make_layout, make_ordered_layout, offset_span
from .layout.inttuple import compact_row_major, flatten, format_inttuple
from .layout.values import has_values, signature, value_of

__all__ = ["Tensor", "Pointer", "AddressSpace", "from_dlpack", "make_ptr", "make_tensor"]

_CPU, _CUDA, _CUDA_HOST, _CUDA_MANAGED = 1, 2, 3, 13
_MEMSPACE = {_CPU: "generic", _CUDA_HOST: "generic", _CUDA: "gmem", _CUDA_MANAGED: "gmem"}
_INT32_MAX = 2**31 - 1
# Marks and the layout cached from them change together.  Every store of marks is one C call that stores the
# marks and the order and drops the cached layout as one step (TensorBase._set_marks, and mark_layout_dynamic's
# common call, which is C altogether); a layout is cached only if the marks it was built from are still the
# tensor's (TensorBase._set_layout_if), so a .layout read racing a mark can never cache a layout of the old marks,
# and reads take no lock.  The Python marking paths still hold this lock (re-entrant), so that two of them do not
# interleave; a C mark landing inside one makes its final compare-and-set fail, and it recomputes.
_MARK_LOCK = threading.RLock()


def _marking(method):
    @functools.wraps(method)
    def locked(self, *args, **kw):
        with _MARK_LOCK:
            return method(self, *args, **kw)
    return locked


class AddressSpace:
    """CuTe's address spaces, as the strings the workbench uses."""

    generic = "generic"
    gmem = "gmem"
    smem = "smem"
    rmem = "rmem"


_ADDRESS_SPACES = ("generic", "gmem", "smem", "rmem")


def _check_align(align, what):
    if type(align) is not int:
        raise TypeError(f"Expected assumed_align to be an int number of bytes, but got {type(align).__name__}.")
    if align <= 0 or align & (align - 1):
        raise ValueError(f"Expected assumed_align to be a positive power of two, but got {align}.")


# --------------------------------------------------------------------------------------------
class Pointer(_native.PointerBase):
    """A typed address: ``wb.make_ptr(wb.Float16, addr, 'gmem', assumed_align=32)``."""

    __slots__ = ()  # the fields live in the C base, so that make_ptr is one C call

    def __init__(self, element_type, address, memspace="generic", assumed_align=None, *, read_only=False):
        if type(element_type) is not et.ElementType:
            raise TypeError(f"Expected an element type such as wb.Float16, but got {element_type!r}.")
        if type(address) is not int:
            address = _as_address(address)
        if not 0 <= address < _ADDRESS_END:
            raise ValueError(f"Expected an address in [0, 2**64), but got {address:#x}.")
        if memspace not in _ADDRESS_SPACES:
            raise ValueError(f"Expected memspace in {_ADDRESS_SPACES}, but got {memspace!r}.")
        if assumed_align is None:
            assumed_align = element_type.natural_align
        else:
            _check_align(assumed_align, "make_ptr")
        if address % assumed_align:
            raise ValueError(
                f"Expected an address aligned to assumed_align={assumed_align} bytes, but got {address:#x} "
                f"(aligned to {address & -address} bytes)."
            )
        _native.init_pointer(self, element_type, address, memspace, assumed_align, bool(read_only))

    def __str__(self) -> str:
        return f"Ptr<{self.address:#018x}@{self.memspace}>"

    def __repr__(self) -> str:
        ro = ", read-only" if self.read_only else ""
        return f"Ptr<{self.address:#018x}@{self.memspace}, {self.element_type.name}, align={self.assumed_align}{ro}>"

    def __int__(self) -> int:
        return self.address

    def toint(self) -> int:
        return self.address

    @property
    def dtype(self):
        return self.element_type

    def __add__(self, n: int) -> Pointer:
        """Pointer arithmetic in elements, as in C++; the alignment becomes what is still provable."""
        if type(n) is not int:
            raise TypeError(f"Expected an int element offset, but got {type(n).__name__}.")
        bits = n * self.element_type.bits
        if bits % 8:
            raise ValueError(f"Expected an offset of whole bytes, but {n} x {self.element_type.name} is {bits} bits.")
        nbytes = bits // 8
        addr = self.address + nbytes
        align = self.assumed_align if nbytes % self.assumed_align == 0 else (addr & -addr or self.assumed_align)
        return Pointer(self.element_type, addr, self.memspace, min(align, self.assumed_align), read_only=self.read_only)


_ADDRESS_END = 1 << 64


def _as_address(x) -> int:
    # Integers only (numpy integers too, through __index__): int() would turn 4.7 into 4 and "16" into 16.
    if type(x) is bool:
        raise TypeError("Expected an integer address, but got bool.")
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"Expected an integer address (int or numpy integer), but got {type(x).__name__} "
                        f"({x!r}).") from None


_native.set_pointer_types(Pointer, et.ElementType, frozenset(_ADDRESS_SPACES))

# CuTe DSL's make_ptr(dtype, value, mem_space='generic', assumed_align=None): the usual call is
# built in C; anything else reaches Pointer(...), whose checks raise (CuTe DSL checks nothing).
make_ptr = _native.make_ptr


# --------------------------------------------------------------------------------------------
class Tensor(_native.TensorBase):
    """A zero-copy tensor view with a CuTe layout.  See the module docstring."""

    # The state lives in the C base: _f is the importer's raw field tuple (owner, version, flags,
    # data, device_type, device_id, ndim, code, bits, lanes, shape, strides, byte_offset,
    # packed_dtype), kept whole so that from_dlpack is one allocation; the rest derives from it.
    __slots__ = ()

    # -- identity / printing ----------------------------------------------------------------
    def __str__(self) -> str:
        return f"Tensor<{self._data:#018x}@{self.memspace} o {self.layout}>"

    __repr__ = __str__

    # -- CuTe DSL attributes -----------------------------------------------------------------
    @property
    def shape(self):
        return self._f[10]

    @property
    def stride(self):
        return self._stride

    @property
    def element_type(self) -> et.ElementType:
        return self._etype

    dtype = element_type

    @property
    def memspace(self) -> str:
        return _MEMSPACE.get(self._f[4], "generic")

    @property
    def device(self) -> tuple:
        """(DLDeviceType, device_id) of the memory."""
        return (self._f[4], self._f[5])

    @property
    def data_ptr(self) -> int:
        return self._data

    @property
    def iterator(self) -> Pointer:
        """A pointer to the first element; it carries read-only-ness (kernels refuse to write it) but no
        extent: a tensor made over it is bounded like any bare address (host_buffers on the CPU executor)."""
        return Pointer(self._etype, self._data, self.memspace, self._align, read_only=self.read_only)

    @property
    def assumed_align(self) -> int:
        return self._align

    @property
    def read_only(self) -> bool:
        return bool(self._f[2] & DLPACK_FLAG_BITMASK_READ_ONLY)

    @property
    def is_copied(self) -> bool:
        return bool(self._f[2] & DLPACK_FLAG_BITMASK_IS_COPIED)

    @property
    def subbyte_padded(self) -> bool:
        """True when each fp4/fp6 element sits in its own byte (IS_SUBBYTE_TYPE_PADDED)."""
        return bool(self._f[2] & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED)

    @property
    def dlpack_version(self):
        """(major, minor) of the capsule or exchange API it came through; None if legacy."""
        return self._f[1]

    @property
    def ndim(self) -> int:
        return len(self._f[10])

    @property
    def stride_order(self):
        """The stride order mark_compact_shape_dynamic uses (outermost mode first): the one
        given or deduced by the last call, else CuTe DSL's deduction; None when ambiguous."""
        if self._order is not None:
            return self._order
        return _deduce_stride_order(self._f[10], self._stride)

    @property
    def leading_dim(self):
        """The first mode with stride 1 and extent > 1, or None (CuTe DSL's attribute)."""
        if self._marks is not None and self._marks[0] == "layout" and self._marks[1] is not None:
            return self._marks[1]
        for i, (s, d) in enumerate(zip(self._f[10], self._stride)):
            if d == 1 and s > 1:
                return i
        return None

    @property
    def dynamic_shapes_mask(self) -> tuple:
        m = self._marks
        if m is None:
            return (0,) * len(self._f[10])
        if m[0] == "layout":
            return (1,) * len(self._f[10])
        return tuple(int(type(s) is Dyn) for s in flatten(self.layout.shape))

    @property
    def dynamic_strides_mask(self) -> tuple:
        m = self._marks
        if m is None:
            return (0,) * len(self._f[10])
        if m[0] == "layout":
            return tuple(int(i != m[1] and d > 0) for i, d in enumerate(self._stride))
        return tuple(int(type(d) is Dyn) for d in flatten(self.layout.stride))

    @property
    def layout(self) -> Layout:
        """The layout with its static and dynamic modes (CuTe DSL raises here)."""
        lay = self._layout
        return lay if lay is not None else self._build_layout()

    def _build_layout(self) -> Layout:
        # no lock: the layout of the marks read here is cached only if they are still the marks when it is stored
        m = self._marks
        lay = _layout_of_marks(self, m)
        self._set_layout_if(m, lay)
        return lay

    def _with_layout(self, layout: Layout, offset) -> Tensor:
        """This tensor's memory seen through a derived layout, ``offset`` elements in: what the
        layout algebra (local_tile, local_partition, divides) returns for a tensor."""
        return _view(self, layout, offset)

    def kernel_signature(self) -> tuple:
        """(shape markers, stride markers, flat shape values, flat stride values): what a compiled
        kernel depends on, a marker being the static value or ``('?', width, divisibility)``.
        Computed from the marks without building the Layout: kernel dispatch calls it per launch."""
        m = self._marks
        if m is None:  # from_dlpack, static: the markers are the values
            return (self._f[10], self._stride, self._f[10], self._stride)
        if m[0] == "layout":
            shape, stride, ld = self._f[10], self._stride, m[1]
            n = len(shape)
            ssig = (_DYN32,) * n if not n or max(shape) <= _INT32_MAX else \
                tuple(_DYN32 if s <= _INT32_MAX else _DYN64 for s in shape)
            dyn = _DYN64 if len(m) == 2 else ("?", 64, m[2])   # strides known divisible (mark_stride_divisibility)
            if not n or min(stride) > 0:
                dsig = [dyn] * n
                if ld is not None:
                    dsig[ld] = stride[ld]
                dsig = tuple(dsig)
            else:
                dsig = tuple(d if (i == ld or d <= 0) else dyn for i, d in enumerate(stride))
            return (ssig, dsig, shape, stride)
        lay = self.layout
        return (signature(lay.shape), signature(lay.stride), tuple(int(x) for x in flatten(lay.shape)),
                tuple(int(x) for x in flatten(lay.stride)))

    # -- dynamic marking -------------------------------------------------------------------
    # mark_layout_dynamic(leading_dim=None) is TensorBase's (C): all shapes dynamic; strides dynamic except the
    # leading dimension's (1) and zero or negative strides, which stay static; marks in place and returns self (as
    # CuTe DSL).  Its common call is served in C; every other call comes here, the one place of its rules and messages.
    @_marking
    def _mark_layout_dynamic_slow(self, leading_dim=None) -> Tensor:
        if self._marks is not None and self._marks[0] == "given":   # (its shape may be an int or nested)
            raise ValueError(f"Expected a tensor from from_dlpack for mark_layout_dynamic, but got one made by make_tensor with layout {self.layout}: give make_tensor the dynamic layout instead.")
        shape, stride = self._f[10], self._stride
        n = len(shape)
        if leading_dim is None:
            count = stride.count(1)
            if count == 1:
                leading_dim = stride.index(1)
            elif count > 1:
                ones = [i for i in range(n) if stride[i] == 1]
                big = [i for i in ones if shape[i] > 1]
                if len(big) == 1:
                    leading_dim = big[0]
                elif big:
                    raise ValueError(
                        "Can't deduce the leading dimension from layout (multiple dimensions have stride 1 and "
                        f"size > 1: modes {big} of {self._static_str()}), please specify leading_dim explicitly."
                    )
                else:
                    raise ValueError(
                        "Can't deduce the leading dimension from layout (multiple dimensions have stride 1 but "
                        f"none has size > 1: {self._static_str()}), please specify leading_dim explicitly."
                    )
        else:
            if type(leading_dim) is not int:
                raise TypeError(f"Expected leading_dim to be an int or None, but got {type(leading_dim).__name__}.")
            if not -n <= leading_dim < n:
                raise ValueError(f"Expected leading_dim in range [{-n}, {n}), but got {leading_dim}.")
            leading_dim %= n
            if stride[leading_dim] != 1:
                raise ValueError(f"Expected strides[leading_dim] == 1, but got {stride[leading_dim]}.")
        self._set_marks(("layout", leading_dim), None)
        return self

    @_marking
    def mark_compact_shape_dynamic(self, mode, stride_order=None, divisibility=1) -> Tensor:
        """Make shape ``mode`` dynamic (with ``divisibility``) in a compact tensor and recompute
        the strides that depend on it, innermost first along ``stride_order`` (outermost to
        innermost, as ``torch.Tensor.dim_order()``); modes of extent 1 get stride 0.
        Raises for a tensor that is not compact (CuTe DSL returns a wrong layout)."""
        while True:
            marks, order = self._marks, self._order
            new = self._compact_marks(marks, order, mode, stride_order, divisibility)
            if self._set_marks(new[0], new[1], marks):   # else a C mark_layout_dynamic landed meanwhile: again
                return self

    def _compact_marks(self, marks, order, mode, stride_order, divisibility):
        """mark_compact_shape_dynamic's new (marks, order) from the current ones (read once by the caller)."""
        if marks is not None and marks[0] == "given":   # (its shape may be an int or nested)
            raise ValueError(f"Expected a tensor from from_dlpack for mark_compact_shape_dynamic, but got one made by make_tensor with layout {self.layout}: give make_tensor the dynamic layout instead.")
        shape, stride = self._f[10], self._stride
        n = len(shape)
        if type(mode) is not int:
            raise TypeError(f"Expected mode to be an int, but got {type(mode).__name__}.")
        if not 0 <= mode < n:
            raise ValueError(f"Expected mode value to be in range [0, {n}), but got {mode}.")
        if type(divisibility) is not int:
            raise TypeError(f"Expected divisibility to be an int, but got {type(divisibility).__name__}.")
        if divisibility <= 0:
            raise ValueError(f"Expected divisibility >= 1, but got {divisibility}.")
        if stride_order is not None:
            try:
                stride_order = tuple(int(i) for i in stride_order)
            except TypeError:
                raise TypeError(f"Expected stride_order to be a sequence of ints, but got {type(stride_order).__name__}.") from None
            if len(stride_order) != n:
                raise ValueError(f"Expected stride_order to have {n} elements, but got {len(stride_order)}.")
            for i in range(n):
                if i not in stride_order:
                    raise ValueError(
                        f"Expected stride_order to contain all the dimensions of the tensor, but it doesn't contain {i}."
                    )
            if order is not None and stride_order != order:
                raise ValueError("The stride_order is not consistent with the last stride_order.")
            deduced = order or _deduce_stride_order(shape, stride)
            if deduced is not None and stride_order != deduced:
                # as CuTe DSL: an order that contradicts the tensor's own is refused, even where an
                # extent-1 mode would let both describe the same memory
                raise ValueError(
                    f"The stride_order is not consistent with the deduced stride_order: expected {deduced} for "
                    f"{self._static_str()}, but got {stride_order}.")
        else:
            stride_order = order or _deduce_stride_order(shape, stride)
            if stride_order is None:
                if not is_compact(Layout(tuple(shape), tuple(stride))):
                    raise ValueError(
                        f"Expected a compact tensor for mark_compact_shape_dynamic, but got {self._static_str()}, "
                        "which is compact in no stride order; use mark_layout_dynamic for strided, broadcast or "
                        "negative-stride tensors."
                    )
                raise ValueError(
                    f"The layout could not be deduced, please specify the stride_order explicitly: in "
                    f"{self._static_str()} {_ambiguity(shape, stride)}, so more than one order describes it.")
        if shape[mode] % divisibility:
            raise ValueError(
                f"The shape({shape[mode]}) of mode({mode}) is not divisible by the divisibility({divisibility})."
            )
        bad = _first_non_compact(shape, stride, stride_order)
        if bad is not None and is_compact(Layout(tuple(shape), tuple(stride))):
            i, want = bad
            raise ValueError(
                f"The stride_order is not consistent with the layout: {stride_order} contradicts the strides of "
                f"{self._static_str()}, along it strides[{i}] "
                f"would be {want}, but it is {stride[i]}. The tensor is compact in another order: pass that order, "
                "or none to let it be deduced.")
        if bad is not None:
            i, want = bad
            raise ValueError(
                f"Expected a compact tensor for mark_compact_shape_dynamic (stride_order {stride_order}), but got "
                f"{self._static_str()}: strides[{i}] is {stride[i]} where a compact layout has {want}. "
                "The stride_order is not consistent with the layout; use mark_layout_dynamic for strided, "
                "broadcast or negative-stride tensors."
            )
        # Start from the current marks so that calls chain, as CuTe DSL's do: after mark_layout_dynamic every
        # extent stays dynamic (the strides derived from them become dynamic too, carrying what divisibility
        # the extents prove); after another compact mark, its extents.
        if marks is not None and marks[0] == "compact":
            lshape = list(marks[1])
        elif marks is not None and marks[0] == "layout":
            lshape = list(flatten(_layout_of_marks(self, marks).shape))
        else:
            lshape = list(shape)
        s = shape[mode]
        lshape[mode] = Dyn(s, 64 if s > _INT32_MAX else 32, divisibility)
        # a stride that depends on a ? extent is itself a 64-bit ? (as CuTe DSL)
        lstride = tuple(Dyn(d.value, 64, d.divisibility) if type(d) is Dyn else d
                        for d in _compact_strides(lshape, stride_order))
        return ("compact", tuple(lshape), lstride), stride_order

    def _static_str(self) -> str:
        return f"{format_inttuple(self._f[10])}:{format_inttuple(self._stride)}"

    # -- DLPack export ---------------------------------------------------------------------
    def __dlpack_device__(self) -> tuple:
        return self.device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export zero copy, under the export rule (see :func:`_refuse_unsafe_export`): a versioned
        capsule when the consumer allows (1, x), else legacy; negative strides and read-only tensors are
        refused to every consumer of ``__dlpack__`` (``.numpy()`` and ``wb.from_dlpack`` take them)."""
        shape, stride = self._export_dims(dl_device, copy)
        _refuse_unsafe_export(self, stride)
        self._check_bare_export("a DLPack export")
        return self._capsule(max_version, shape, stride)

    def __wb_dlpack__(self, *, max_version=None, keeps_bounds=False):
        """The workbench's own consumers (``wb.from_dlpack``, the mdspan views, ``.numpy()``) honour
        READ_ONLY and negative strides, so they are served without the export rule's refusals.
        ``keeps_bounds``: the consumer (wb.from_dlpack) keeps a bare address bare, so that the CPU
        executor still bounds it; any other consumer reads the whole layout, which must exist."""
        shape, stride = self._export_dims(None, None)
        if not keeps_bounds:
            self._check_bare_export("a view")
        return self._capsule(max_version, shape, stride, private=True)

    def _check_bare_export(self, what: str) -> None:
        """A tensor over a bare address owns nothing: the memory its layout spans must exist before
        numpy, torch or an mdspan view reads it (see workbench._memory)."""
        if self._f[0] is not None:
            return
        span = offset_span(self.layout)
        if span is None:
            return
        bits = self._etype.bits
        lo, hi = self._data + span[0] * bits // 8, self._data + -(-(span[1] + 1) * bits // 8)
        check_bare_span(lo, hi, self.memspace == "gmem", f"{what} of {self}")

    def _export_dims(self, dl_device, copy):
        if dl_device is not None and tuple(dl_device) != self.device:
            raise BufferError(f"Expected dl_device {self.device} (the tensor's own), but got {tuple(dl_device)}.")
        if copy:
            raise BufferError("Expected copy=None or False: the workbench exports zero-copy views only.")
        if self._marks is None:
            return flatten(self._f[10]), flatten(self._stride)
        return value_of(flatten(self.layout.shape)), value_of(flatten(self.layout.stride))

    def _capsule(self, max_version, shape, stride, private=False):
        """private: a capsule only workbench consumers accept (named wb_dltensor_versioned)."""
        versioned = private or (max_version is not None and max_version[0] >= 1)
        if self.read_only and not versioned:
            raise BufferError(
                "Expected a consumer that accepts versioned DLPack (max_version >= (1, 0)): this tensor is "
                "read-only and a legacy capsule cannot say so."
            )
        code, bits, lanes = dldtype_of(self._etype)
        dev = self.device
        return _native.export(self, versioned, self._f[2] & (DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED),
                              self._data, dev[0], dev[1], code, bits, lanes, shape, stride, 0, private)

    def numpy(self):
        """A zero-copy numpy view of host memory (read-only tensors give arrays whose writeable flag
        cannot be set: their base is a capsule marked READ_ONLY, not a writable buffer)."""
        import numpy as np

        if self.memspace != "generic":
            raise BufferError(f"Expected host memory for .numpy(), but the tensor is in {self.memspace}.")
        if self._etype.numpy is None:
            raise TypeError(f"Expected an element type numpy can hold, but got {self._etype.name}.")
        return np.from_dlpack(_TrustedExport(self))


class _TrustedExport:
    """Hands a tensor to numpy, which honours READ_ONLY and negative strides (numpy >= 2.1)."""

    __slots__ = ("t",)

    def __init__(self, t):
        self.t = t

    def __dlpack_device__(self):
        return self.t.device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        shape, stride = self.t._export_dims(dl_device, copy)
        self.t._check_bare_export("a numpy view")
        return self.t._capsule(max_version, shape, stride)


def mark_stride_divisibility(t: Tensor, nbytes: int) -> Tensor:
    """After ``mark_layout_dynamic``: record that every dynamic stride of t is a multiple of ``nbytes`` bytes, when it
    is (else leave the marks as they are).  The kernel DSL calls it for tensors passed straight into a kernel, so that
    their specialization knows 16-byte rows (Triton specializes integer arguments on divisibility by 16 the same
    way); the C launcher applies the same rule to framework tensors on its fast path.  Returns t."""
    while True:
        m = t._marks
        if m is None or m[0] != "layout":
            raise ValueError(f"Expected a tensor marked with mark_layout_dynamic, but got marks {m!r}.")
        q = nbytes // t.element_type.natural_align
        if not (q > 1 and nbytes % t.element_type.natural_align == 0 and
                all(d % q == 0 for i, d in enumerate(t._stride) if i != m[1] and d > 0)):
            return t
        if t._set_marks(("layout", m[1], q), None, m):   # else marked again meanwhile: decide on the new marks
            return t


def _layout_of_marks(t, m) -> Layout:
    """The layout tensor t has under marks m (its cached .layout is this for its current marks)."""
    if m is None:
        return Layout(t._f[10], t._stride)
    if m[0] == "layout":
        ld = m[1]
        shp = tuple(Dyn(s, 64 if s > _INT32_MAX else 32) for s in t._f[10])
        div = 1 if len(m) == 2 else m[2]
        std = tuple(d if (i == ld or d <= 0) else Dyn(d, 64, div) for i, d in enumerate(t._stride))
        return Layout(shp, std)
    return Layout(m[1], m[2])


_DYN32 = ("?", 32, 1)
_DYN64 = ("?", 64, 1)


def _refuse_unsafe_export(t, stride):
    """The export rule.  ``__dlpack__`` cannot know its consumer (``torch.from_dlpack(t.__dlpack__())``
    or ``torch.asarray`` hide the caller), so it refuses to every consumer what a consumer we know of
    mishandles, rather than guessing who is asking:

    - negative strides: torch 2.13 aborts the process on such a capsule (DLPack allows them);
    - read-only tensors: torch 2.13 ignores DLPACK_FLAG_BITMASK_READ_ONLY and hands out a writable
      tensor over read-only memory.

    Consumers that honour both are served through other doors: ``t.numpy()`` (numpy honours both),
    ``wb.from_dlpack`` and the mdspan views (``__wb_dlpack__``).  Everything else exports as DLPack says.
    """
    if stride and min(stride) < 0:
        raise BufferError(
            f"Expected non-negative strides for a DLPack export, but got {stride}: torch 2.13 aborts the "
            "process on them and __dlpack__ cannot tell its consumer. Use t.numpy() for a numpy view, or "
            "export a copy (torch.from_numpy(t.numpy().copy()))."
        )
    if t.read_only:
        raise BufferError(
            "Expected a writable tensor for a DLPack export, but got a read-only one: torch 2.13 ignores "
            "READ_ONLY and would hand out a writable tensor, and __dlpack__ cannot tell its consumer. Use "
            "t.numpy() for a read-only numpy view, or export a copy."
        )


def _deduce_stride_order(shape, stride):
    """CuTe DSL's deduction: modes by decreasing stride, and among equal strides the larger
    extent outside (an extent-1 mode nests inside its twin).  None (ambiguous) when several modes
    have stride 1, several have extent 1 (their strides are arbitrary), or two modes agree in both
    stride and extent."""
    if stride.count(1) > 1 or shape.count(1) > 1 or len(set(zip(stride, shape))) != len(stride):
        return None
    return tuple(sorted(range(len(stride)), key=lambda i: (-stride[i], -shape[i])))


def _ambiguity(shape, stride) -> str:
    """Why _deduce_stride_order found no single order, in words."""
    if stride.count(1) > 1:
        return f"modes {[i for i, d in enumerate(stride) if d == 1]} all have stride 1"
    if shape.count(1) > 1:
        return f"modes {[i for i, e in enumerate(shape) if e == 1]} all have extent 1 (their strides are arbitrary)"
    return "two modes have the same stride and extent"


def _compact_strides(shape, order):
    """The strides of ``shape`` made compact along ``order`` (outermost mode first, as torch's
    dim_order): the core's make_ordered_layout, with extent-1 modes at stride 0 (their stride is
    arbitrary; CuTe DSL writes 0)."""
    n = len(shape)
    rank = [0] * n
    for k, i in enumerate(order):
        rank[i] = n - 1 - k
    strides = make_ordered_layout(tuple(shape), tuple(rank)).stride
    return tuple(0 if type(e) is int and e == 1 else d for e, d in zip(shape, strides))


def _first_non_compact(shape, stride, order):
    """(mode, expected stride) of the first mode, innermost first, that breaks compactness along
    order, or None.  Modes of extent 1 may have any stride."""
    want = _compact_strides(shape, order)
    for i in reversed(order):
        if shape[i] != 1 and stride[i] != want[i]:
            return i, want[i]
    return None


# --------------------------------------------------------------------------------------------
_new = _native.TensorBase.__new__


def _from_dlpack_general(tensor, assumed_align, stream) -> Tensor:
    """from_dlpack's general path: any producer, an explicit stream, and every refusal's message.  The
    usual producers never come here (wb.from_dlpack is a C function, see _native.c); a producer type
    met here is learnt by the importer, so that the C path serves it from then on."""
    if assumed_align is not None:
        _check_align(assumed_align, "from_dlpack")
    return _from_fields(dlpack_fields(tensor, stream, keeps_bounds=True), assumed_align)


def _from_fields(f, assumed_align):
    """Validate decoded fields (the general path, with a precise message per rule) and build."""
    if type(f[0]) is _native.Owner and _owns_nothing(f[0].exported):
        # our own export of a tensor over a bare address: the re-import owns nothing either, so that it
        # stays bounded as the original was (host_buffers on the CPU executor)
        f = (None,) + tuple(f[1:])
    etype = _PACKED.get(f[13]) or element_type_of_packed(f[13])
    shape = f[10]
    strides = f[11]
    if strides is None or shape is None:
        strides = _null_strides(f)
    if f[4] not in _MEMSPACE:
        raise BufferError(
            f"Expected a tensor in CPU, CUDA, CUDA host or CUDA managed memory, but got device {_device_name(f[4])}."
        )
    if shape and min(shape) < 0:
        raise BufferError(f"Expected non-negative DLTensor.shape entries, but got {shape}.")
    if f[1] is None and etype.width < 8:
        # DLPack >= 1.0 says sub-byte elements are packed unless IS_SUBBYTE_TYPE_PADDED is set; a legacy
        # capsule has no flags, and jax exports fp4 that way while storing one value per byte.
        raise BufferError(
            f"Expected a versioned DLPack capsule for the sub-byte type {etype.name}, but got a legacy one: "
            "it cannot say whether elements are packed or padded (jax pads fp4 without saying so)."
        )
    data = f[3] + f[12]
    align = (etype.bits >> 3 or 1) if assumed_align is None else assumed_align
    if data % align or not f[3]:
        _check_data(f, data, align)
    t = _new(Tensor)
    t._f = f
    t._data = data
    t._etype = etype
    t._stride = strides
    t._align = align
    t._marks = t._order = t._layout = None
    return t


# wb.from_dlpack(tensor, assumed_align=None, *, stream=None), CuTe DSL's call: the usual producers
# (torch through the torch reader or its exchange API, numpy, cupy) are validated and built in C as one allocation; the
# rest comes back to _from_dlpack_general / _from_fields above.
_native.set_from_dlpack(Tensor, _from_dlpack_general, _from_fields)
from_dlpack = _native.from_dlpack


def _null_strides(f):
    ndim, version = f[6], f[1]
    if f[10] is None:
        raise BufferError(f"Expected DLTensor.shape for a tensor of rank {ndim}, but got NULL.")
    if ndim and version is not None and version >= (1, 2):
        raise BufferError(f"Expected DLTensor.strides (DLPack {version[0]}.{version[1]} forbids NULL), but got NULL.")
    return compact_row_major(f[10])  # pre-1.2 producers may send NULL for row-major


def _check_data(f, data, align):
    size = 1
    for s in f[10]:
        size *= s
    if not size:
        return  # an empty tensor may have any data pointer, NULL included
    if not f[3]:
        raise BufferError(f"Expected a data pointer for a tensor of {size} elements, but got NULL.")
    raise ValueError(
        f"Expected the data pointer to be aligned to assumed_align={align} bytes, but got {data:#x} "
        f"(aligned to {data & -data} bytes)."
    )


def _device_name(code: int) -> str:
    try:
        return DLDeviceType(code).name
    except ValueError:
        return f"unknown device type {code}"


def _check_inside(layout, src, offset=0) -> None:
    """A view made over a tensor must stay inside the memory that tensor spans (else a kernel or the
    CPU executor would read and write memory nobody owns)."""
    if not (has_values(layout.shape) and has_values(layout.stride)):
        raise ValueError(f"Expected a layout with known extents for a view of {src}, but got {layout}.")
    span, src_span = offset_span(layout), offset_span(src.layout)
    if span is not None:
        span = (span[0] + offset, span[1] + offset)
    if span is not None and (src_span is None or span[0] < src_span[0] or span[1] > src_span[1]):
        raise ValueError(
            f"Expected a layout inside the memory of {src} (offsets {src_span[0] if src_span else 0}.."
            f"{src_span[1] if src_span else -1}), but {layout}{f' at offset {offset}' if offset else ''} reaches "
            f"offsets {span[0]}..{span[1]}. A tile that runs past the tensor (a tiler that does not divide it) "
            "exists only inside kernels, where make_identity_tensor + elem_less predicate it."
        )


def make_tensor(iterator, layout) -> Tensor:
    """A tensor over a pointer (or another tensor's memory) with any layout, static or dynamic:
    ``wb.make_tensor(wb.make_ptr(wb.Float32, addr, 'gmem'), wb.make_layout((m, k), stride=(k, 1)))``."""
    if type(layout) is not Layout:
        layout = make_layout(layout)
    return _view(iterator, layout, 0)


def _owns_nothing(x) -> bool:
    """A tensor over a bare address (make_tensor over a pointer, or over such a tensor): nothing keeps
    its memory alive and nothing bounds it but what the caller declares."""
    return type(x) is Tensor and x._f[0] is None


def _view(iterator, layout, offset) -> Tensor:
    """make_tensor, ``offset`` elements past the iterator (what local_tile & co. return)."""
    if type(iterator) is Tensor:
        src = iterator
        _check_inside(layout, src, offset)
        owner, dev, etype, flags, align, data = src, src.device, src._etype, src._f[2], src._align, src._data
        if src._f[0] is None:
            owner = None  # a view of a bare address is one too: it keeps the bound make_tensor(ptr, L) gets
        version = src._f[1]
        if offset:
            if offset * etype.bits % 8:
                raise ValueError(f"Expected a view starting on a whole byte, but offset {offset} of {etype} is not.")
            data += offset * etype.bits // 8
            align = gcd(align, offset * etype.bits // 8)  # the largest power of two dividing both
    elif type(iterator) is Pointer:
        if offset:
            iterator = iterator + offset
        owner, etype, align, data, version = None, iterator.element_type, iterator.assumed_align, iterator.address, None
        flags = DLPACK_FLAG_BITMASK_READ_ONLY if iterator.read_only else 0
        dev = (_CUDA, 0) if iterator.memspace == "gmem" else (_CPU, 0)
    else:
        raise TypeError(f"Expected a wb.Pointer or wb.Tensor as the iterator, but got {type(iterator).__name__}.")
    if has_values(layout.shape) and has_values(layout.stride):
        shape, stride = value_of(layout.shape), value_of(layout.stride)
    else:  # symbolic modes: the layout is all there is
        shape, stride = layout.shape, layout.stride
    code, bits, lanes = dldtype_of(etype)
    t = _new(Tensor)
    t._f = (owner, version, flags, data, dev[0], dev[1], len(shape) if type(shape) is tuple else 1,
            code, bits, lanes, shape, stride, 0, code | bits << 8 | lanes << 16)
    t._data = data
    t._etype = etype
    t._stride = stride
    t._align = align
    t._order = None
    t._marks = ("given",)  # the layout is all there is: marking is for from_dlpack tensors
    t._layout = layout
    return t
