"""mdspan views that mirror CCCL 3.5: ``cuda::to_host_mdspan`` / ``to_device_mdspan`` /
``to_managed_mdspan`` (DLPack -> mdspan), ``cuda::to_dlpack_tensor`` (mdspan -> DLPack) and the
``cuda::host_mdspan`` / ``device_mdspan`` / ``managed_mdspan`` accessors, in Python.

``to_host_mdspan(dl, wb.Float32, 2, layout='right')`` runs the checks of CCCL's
``cuda/__mdspan/dlpack_to_mdspan.h`` as one linear list, in CCCL's order, and each failing check
raises ``ValueError`` whose message *starts with CCCL's exception text* and goes on with what was
expected and what was got.  What CCCL accepts we accept with the same extents, strides, offset and
data handle; ``tests/test_mdspan_cccl.py`` proves it against the real headers.

The checks, in order (``*`` marks a check CCCL does not make):

1. device type (kDLCPU / kDLCUDA / kDLCUDAManaged)
2. rank: ``ndim == rank``
3. dtype: (code, bits, lanes) equal to the element type's
4. data pointer non-null (*: an empty tensor may have data NULL, so that exports round-trip)
5. ``layout='stride_relaxed'`` only: byte_offset a multiple of the element size
6. alignment of the data pointer to the element size
7. *with cupy and a GPU: the pointer's real memory type (cudaPointerGetAttributes)
8. shape pointer non-null (rank > 0)
9. no negative shape
10. strides NULL: rejected for DLPack >= 1.2; for older producers row-major, rejected for
    layout_left of rank > 1
11. per mode: layout_right / layout_left compatible strides ("shape overflow" when the compact
    stride overflows int64), layout_stride strictly positive strides (*: not for an empty tensor,
    whose strides address nothing; see the improvements)
12. *the size and required_span_size() fit int64_t (index_type; CCCL asserts it only in debug
    builds, release builds wrap around and report e.g. required_span_size() == 0)
13. *layout_stride_relaxed: where the negative strides reach below the data pointer (numpy's
    ``a[:, ::-1]``), the view is rebased: ``data_handle()`` moves down and ``offset()`` up by
    the same number of elements, so each element keeps its address and every mapped offset is
    >= 0 (CCCL keeps the pointer and breaks its mapping's precondition, asserted in debug only);
    strides that reach below address 0 are refused

Improvements over CCCL, each tested in tests/test_mdspan.py:

- empty tensors round-trip: ``to_dlpack_tensor`` writes data NULL for an empty view (as CCCL),
  and the importers accept data NULL when the tensor has no elements (CCCL rejects it);
- an empty tensor's strides are not checked against the layout: they address nothing (its required
  span is 0), and producers write anything there (numpy 2 gives ``np.zeros((0, 3))`` strides (0, 0),
  which CCCL refuses for layout_right, layout_left and layout_stride).  The mapping keeps the given
  strides where the layout accepts them, else takes the layout's canonical ones: layout_right's /
  layout_left's for those extents, and for layout_stride the row-major strides with each extent 0
  counted as 1 (strictly positive, as layout_stride requires; torch's strides of an empty tensor);
  only a canonical stride beyond int64 is refused ("shape overflow");
- exporting a ``stride_relaxed`` view with an offset (negative strides) keeps the offset in
  ``byte_offset`` (CCCL writes byte_offset 0 and so points at the wrong elements);
- const element types (``wb.const(wb.Float32)``) work; views of READ_ONLY DLPack tensors are
  const views; writes through them raise TypeError (CCCL: ``const int`` does not compile); the
  const-ness survives ``to_dlpack_tensor(md).get()`` (the DLTensor's ``_wb_keepalive`` says so) and
  ``read_only=False`` cannot take it away;
- ``mapping().is_unique()`` tells the truth for layout_stride / stride_relaxed, e.g. False for
  (2,2):(1,1) (CCCL's layout_stride says True for any strides, stride_relaxed says False always),
  and ``is_exhaustive()`` is False for non-unique mappings ((3,3):(2,2): CCCL says True) and
  exact for stride_relaxed (CCCL: always False);
- with cupy and a GPU, device and managed views check the pointer's real memory type and device
  (CCCL release builds do not), and host views reject device pointers;
- element access checks bounds (IndexError) where CCCL has only debug assertions.

Not like CCCL, by design: CCCL 3.5's source defaults ``LayoutPolicy`` to layout_stride_relaxed
while its documentation says layout_stride; we follow the documentation (``layout='stride'``).
Element types that have no CUDA C++ type (Float8E4M3FNUZ, ...) are accepted by their DLPack
code.  CCCL's pre-1.2 strides-NULL branch does not compile (it names an undefined
``__is_layout_left``); we implement what its documentation says.

Host element access (``md[i, j]``, ``md[i, j] = v``, ``md.numpy()``) goes through a zero-copy
numpy view.  Element types without a numpy dtype (BFloat16, the fp8 formats, Complex32) are
read and written as their raw bit patterns (uint16 / uint8 / uint32); sub-byte types (fp6, fp4)
refuse element access.  Vector types (``vector_type(Float32, 4)``) access as a trailing lane axis.
"""

from __future__ import annotations

import ctypes
import math
import operator

import numpy as np

from . import _element_types as et
from ._tensor import _ADDRESS_END, _as_address
from .dlpack import _native
from .dlpack.abi import DLPACK_FLAG_BITMASK_READ_ONLY, DLDataTypeCode, DLDeviceType, DLTensor
from .dlpack.dtypes import dldtype_of
from .layout import Layout, offset_span, size, slice_and_offset
from .layout.inttuple import _crd2idx as crd2idx  # the core's walk: __call__ checks its indices
from .layout.inttuple import compact_col_major, compact_row_major

__all__ = [
    "Mdspan", "MdspanMapping", "DLPackTensorWrapper", "const", "full_extent",
    "to_host_mdspan", "to_device_mdspan", "to_managed_mdspan", "to_dlpack_tensor", "submdspan",
    "make_mdspan", "MDSPAN_LAYOUTS",
]

MDSPAN_LAYOUTS = ("right", "left", "stride", "stride_relaxed")
# The dlpack.h whose semantics we mirror (CCCL is built against it; 1.2 forbids strides NULL).
HEADER_DLPACK_VERSION = (1, 3)
_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)

_ACCESSORS = {
    "host": (DLDeviceType.kDLCPU, "kDLCPU", "host_mdspan"),
    "device": (DLDeviceType.kDLCUDA, "kDLCUDA", "device_mdspan"),
    "managed": (DLDeviceType.kDLCUDAManaged, "kDLCUDAManaged", "managed_mdspan"),
}


class const:  # noqa: N801 - spelled like the C++ qualifier it stands for
    """``wb.const(wb.Float32)`` is C++ ``const float``: a view of it cannot be written through."""

    __slots__ = ("type",)

    def __init__(self, element_type):
        if type(element_type) is const:
            element_type = element_type.type
        if type(element_type) is not et.ElementType:
            raise TypeError(f"Expected an element type such as wb.Float32, but got {type(element_type).__name__}.")
        self.type = element_type

    def __eq__(self, other):
        return type(other) is const and other.type is self.type

    def __hash__(self):
        return hash(("const", self.type.name))

    def __repr__(self):
        return f"const({self.type.name})"


class _FullExtent:
    """``wb.full_extent``: the whole mode, as ``cuda::std::full_extent`` in submdspan."""

    def __repr__(self):
        return "full_extent"


full_extent = _FullExtent()


# ----------------------------------------------------------------------------------------------
# Element types
# ----------------------------------------------------------------------------------------------

def _split_const(element_type):
    if type(element_type) is const:
        return element_type.type, True
    if type(element_type) is et.ElementType:
        return element_type, False
    raise TypeError(
        f"Expected an element type such as wb.Float32 or wb.const(wb.Float32), but got "
        f"{type(element_type).__name__} ({element_type!r})."
    )


def _check_lanes(t):
    # CCCL's __data_type_to_dlpack static_asserts "Unsupported vector type" for other lane counts.
    if t.lanes not in (1, 2, 4):
        raise TypeError(f"Expected a scalar or a vector type of 2 or 4 lanes (as CCCL), but got {t.name}.")


def _dtype_str(code, bits, lanes):
    try:
        name = DLDataTypeCode(code).name
    except ValueError:
        name = f"code {code}"
    return f"({name}, {bits}, {lanes})"


def _ctype_of(t, is_const):
    c = t.ctype or t.name
    return f"const {c}" if is_const else c


_RAW_BITS = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _numpy_scalar_dtype(t):
    """numpy dtype of one lane for host access; raw bit patterns where numpy has no such type."""
    scalar = t.scalar
    if scalar.numpy is not None:
        return np.dtype(scalar.numpy)
    raw = _RAW_BITS.get(scalar.width)
    if raw is None:
        raise TypeError(
            f"Expected an element type of 8, 16, 32 or 64 bits per lane for host element access, "
            f"but got {t.name} ({scalar.width} bits): sub-byte elements are not addressable one by one."
        )
    return np.dtype(raw)


# ----------------------------------------------------------------------------------------------
# The mapping
# ----------------------------------------------------------------------------------------------

# CCCL's layout_right / layout_left strides are the core's compact row- / column-major strides.
_COMPACT = {"right": compact_row_major, "left": compact_col_major}


_ENUMERATE_LIMIT = 1 << 22


def _is_unique(extents, strides):
    """Whether distinct indices map to distinct offsets; exact.

    Negating a stride re-indexes its mode, so only |stride| matters, and modes of extent 1 do
    not matter.  Decided by, in turn: a zero stride (not unique); sorted by |stride|, each
    stride beyond the reach of the smaller modes (unique, mixed radix); more elements than
    offsets in the span (not unique, pigeonhole); two modes (unique iff no d1*s1 == d2*s2 with
    0 < |d_k| < e_k, via the gcd); else enumerating the offsets (up to 2**22 elements; beyond
    that a ValueError says the question is too costly to answer exactly).
    """
    if any(e == 0 for e in extents):
        return True
    modes = sorted((abs(s), e) for e, s in zip(extents, strides) if e > 1)
    if any(s == 0 for s, _ in modes):
        return False
    reach = 0
    for s, e in modes:
        if s <= reach:
            break
        reach += s * (e - 1)
    else:
        return True
    size = 1
    for _, e in modes:
        size *= e
    if size > 1 + sum(s * (e - 1) for s, e in modes):
        return False
    if len(modes) == 2:
        (s1, e1), (s2, e2) = modes
        g = math.gcd(s1, s2)
        return not (s2 // g <= e1 - 1 and s1 // g <= e2 - 1)
    if size > _ENUMERATE_LIMIT:
        raise ValueError(
            f"Expected at most {_ENUMERATE_LIMIT} elements to decide is_unique() exactly for interleaved strides, "
            f"but got {size} (extents {tuple(extents)}, strides {tuple(strides)})."
        )
    offsets = np.zeros(1, dtype=np.int64)
    for s, e in modes:
        offsets = (offsets[:, None] + np.arange(e, dtype=np.int64) * s).ravel()
    return np.unique(offsets).size == offsets.size


class MdspanMapping:
    """The layout mapping of an mdspan: a core :class:`workbench.layout.Layout` (flat modes: the
    extents and strides) plus an offset, ``m(i0, i1, ...) = offset + layout((i0, i1, ...))``.

    ``layout`` is the policy, 'right', 'left', 'stride' or 'stride_relaxed'; only stride_relaxed has a
    nonzero offset and may have zero or negative strides.  ``required_span_size()`` and
    ``is_strided()`` are CCCL's formulas; ``is_unique()`` and ``is_exhaustive()`` are exact.
    """

    __slots__ = ("layout", "cute_layout", "_offset", "_unique")

    def __init__(self, layout, extents, strides, offset=0):
        self.layout = layout
        self.cute_layout = Layout(tuple(extents), tuple(strides))
        self._offset = offset
        self._unique = None

    def extents(self):
        return self.cute_layout.shape

    def strides(self):
        return self.cute_layout.stride

    def extent(self, r):
        return self.cute_layout.shape[r]

    def stride(self, r):
        return self.cute_layout.stride[r]

    def offset(self):
        return self._offset

    def rank(self):
        return len(self.cute_layout.shape)

    def size(self):
        return size(self.cute_layout)

    def required_span_size(self):
        """One past the largest offset the mapping produces (0 for an empty mapping), as CCCL: its formulas
        (size() for right/left, 1 + sum((e-1)*s) for stride, offset() + 1 + the positive strides' reach for
        stride_relaxed) are all offset() + 1 + the top of the core's offset_span."""
        span = offset_span(self.cute_layout)
        return 0 if span is None else self._offset + span[1] + 1

    def min_offset(self):
        """The smallest offset the mapping produces: offset() + the bottom of the core's offset_span
        (the negative strides' reach)."""
        span = offset_span(self.cute_layout)
        return self._offset + (span[0] if span is not None else 0)

    def is_unique(self):
        """True iff distinct indices give distinct offsets (exact, unlike CCCL: see module doc)."""
        if self._unique is None:
            self._unique = self.layout in ("right", "left") or _is_unique(self.extents(), self.strides())
        return self._unique

    def is_exhaustive(self):
        """True iff the offsets are exactly 0 .. required_span_size()-1 (CCCL's rules for empty mappings)."""
        if self.layout in ("right", "left"):
            return True
        ext, st = self.extents(), self.strides()
        if self.layout == "stride":
            if not ext:
                return True
            span = self.required_span_size()
            if span == 0:
                # CCCL's rule for empty layout_stride mappings, kept as is.
                if len(ext) == 1:
                    return st[0] == 1
                largest = max(range(len(st)), key=lambda r: (st[r], -r))
                return all(ext[r] != 0 or r == largest for r in range(len(ext)))
            return span == self.size() and self.is_unique()
        if self.size() == 0:
            return True
        return self.min_offset() == 0 and self.required_span_size() == self.size() and self.is_unique()

    def is_strided(self):
        return self.layout != "stride_relaxed" or self._offset == 0

    def __call__(self, *idx):
        if len(idx) == 1 and type(idx[0]) is tuple:
            idx = idx[0]
        ext = self.extents()
        if len(idx) != len(ext):
            raise IndexError(f"Expected {len(ext)} indices, but got {len(idx)}.")
        idx = tuple(operator.index(i) for i in idx)
        for r, (i, e) in enumerate(zip(idx, ext)):
            if not 0 <= i < e:
                raise IndexError(f"Expected index {r} in [0, {e}), but got {i}.")
        return self._offset + crd2idx(idx, ext, self.strides())

    def __eq__(self, other):
        return (type(other) is MdspanMapping and self.layout == other.layout and self.extents() == other.extents()
                and self.strides() == other.strides() and self._offset == other._offset)

    def __hash__(self):
        return hash((self.layout, self.extents(), self.strides(), self._offset))

    def __repr__(self):
        body = f"layout_{self.layout}::mapping(extents={self.extents()}, strides={self.strides()}"
        return body + (f", offset={self._offset})" if self.layout == "stride_relaxed" else ")")


# ----------------------------------------------------------------------------------------------
# The view
# ----------------------------------------------------------------------------------------------

class Mdspan:
    """A non-owning view: ``host_mdspan`` / ``device_mdspan`` / ``managed_mdspan`` of CCCL.

    Element ``md[i, j]`` lives at byte address ``data_handle() + mapping()(i, j) * itemsize``.
    Host and managed views read and write host memory; device views refuse (CCCL's device accessor
    cannot be read on the host: the access is a compile error in C++).  Slicing (``md[1, :]``,
    :func:`submdspan`) keeps the accessor.  The view keeps the producer of its memory alive.
    """

    def __init__(self, accessor, element_type, mapping, data_handle, *, device=None, owner=None):
        if accessor not in _ACCESSORS:
            raise ValueError(f"Expected accessor 'host', 'device' or 'managed', but got {accessor!r}.")
        self.element_type, self.is_const = _split_const(element_type)
        self.accessor = accessor
        self._mapping = mapping
        data = 0 if data_handle is None else data_handle
        if type(data) is not int:
            data = _as_address(data)  # integers only: int() would make 4.7 the address 4
        if not 0 <= data < _ADDRESS_END:
            raise ValueError(f"Expected a data handle in [0, 2**64), but got {data:#x}.")
        self._data = data
        self.device = device if device is not None else (int(_ACCESSORS[accessor][0]), 0)
        self._owner = owner
        self._array = None

    # C++ observers --------------------------------------------------------------------------
    def rank(self):
        return self._mapping.rank()

    def extent(self, r):
        return self._mapping.extent(r)

    def stride(self, r):
        return self._mapping.stride(r)

    def extents(self):
        return self._mapping.extents()

    def strides(self):
        return self._mapping.strides()

    def size(self):
        return self._mapping.size()

    def empty(self):
        return self.size() == 0

    def data_handle(self):
        """The data pointer (an int); for stride_relaxed the element at index 0 is ``offset()`` past it."""
        return self._data

    def mapping(self):
        return self._mapping

    def offset(self):
        return self._mapping.offset()

    def required_span_size(self):
        return self._mapping.required_span_size()

    def is_unique(self):
        return self._mapping.is_unique()

    def is_exhaustive(self):
        return self._mapping.is_exhaustive()

    def is_strided(self):
        return self._mapping.is_strided()

    @property
    def layout(self):
        return self._mapping.layout

    @property
    def read_only(self):
        return self.is_const

    @property
    def itemsize(self):
        """sizeof(element_type) in bytes."""
        return (self.element_type.bits + 7) // 8

    @property
    def is_host_accessible(self):
        return self.accessor != "device"

    @property
    def is_device_accessible(self):
        return self.accessor != "host"

    def __repr__(self):
        name = _ACCESSORS[self.accessor][2]
        t = _ctype_of(self.element_type, self.is_const)
        ext = ", ".join(str(e) for e in self.extents())
        st = ", ".join(str(s) for s in self.strides())
        extra = f", offset={self.offset()}" if self.layout == "stride_relaxed" else ""
        return (f"{name}<{t}, dims<{self.rank()}, int64_t>, layout_{self.layout}>"
                f"(0x{self._data:016x}, extents=({ext}), strides=({st}){extra})")

    # Element access -------------------------------------------------------------------------
    def _refuse_device(self, what):
        if self.accessor == "device":
            raise TypeError(
                f"Expected a host or managed view to {what} from host code, but got a device_mdspan: "
                f"host code must not touch device memory (CCCL's device accessor cannot be used on the host: the "
                f"access is a compile error in C++)."
            )

    def numpy(self):
        """A zero-copy numpy view of the elements (host and managed views); read-only for const views.

        Its shape is ``extents()`` (plus a lane axis for vector types) and its strides are
        ``strides() * itemsize`` bytes.  It keeps the producer of the memory alive; a const view's
        array sits on a read-only buffer, so its writeable flag cannot be set.
        """
        self._refuse_device("read elements")
        if self._array is None:
            self._array = self._make_array()
        return self._array

    def _make_array(self):
        t = self.element_type
        lane = _numpy_scalar_dtype(t)
        shape = self.extents() + ((t.lanes,) if t.lanes > 1 else ())
        if self.size() == 0:
            arr = np.empty(shape, dtype=lane)
        else:
            item = self.itemsize
            lo = self._mapping.min_offset()
            hi = self.required_span_size() - 1
            nbytes = (hi - lo + 1) * item
            raw = np.from_dlpack(_HostBytes(self._owner, self._data + lo * item, nbytes, self.is_const))
            strides = tuple(s * item for s in self.strides()) + ((lane.itemsize,) if t.lanes > 1 else ())
            arr = np.ndarray(shape, dtype=lane, buffer=raw, offset=(self.offset() - lo) * item, strides=strides)
        if self.is_const:
            arr.flags.writeable = False
        return arr

    def _index(self, key):
        if type(key) is not tuple:
            key = (key,)
        if len(key) != self.rank():
            raise IndexError(f"Expected {self.rank()} indices, but got {len(key)}.")
        out = []
        for r, i in enumerate(key):
            try:
                i = operator.index(i)
            except TypeError:
                raise TypeError(f"Expected integer indices, but got {type(i).__name__} at position {r}.") from None
            if not 0 <= i < self.extent(r):
                raise IndexError(f"Expected index {r} in [0, {self.extent(r)}), but got {i}.")
            out.append(i)
        return tuple(out)

    @staticmethod
    def _is_slicing(key):
        parts = key if type(key) is tuple else (key,)
        return any(type(p) is slice or p is full_extent or type(p) is list for p in parts)

    def __getitem__(self, key):
        """``md[i, j]``: the element (a Python scalar, a tuple of lanes for vector types).

        With a slice among the indices (``md[1, :]``) the result is a sub-view, as submdspan.
        """
        if self._is_slicing(key):
            return submdspan(self, *(key if type(key) is tuple else (key,)))
        idx = self._index(key)
        self._refuse_device("read elements")
        v = self.numpy()[idx]
        return tuple(v.tolist()) if self.element_type.lanes > 1 else v.item()

    def __setitem__(self, key, value):
        if self._is_slicing(key):
            raise TypeError("Expected integer indices for element assignment, but got a slice.")
        idx = self._index(key)
        self._refuse_device("write elements")
        if self.is_const:
            raise TypeError(
                f"Expected a view of a non-const element type to write through, but got "
                f"{_ctype_of(self.element_type, True)} (a const view, or a READ_ONLY DLPack tensor)."
            )
        self.numpy()[idx] = value


class _HostBytes:
    """``nbytes`` of host memory at ``address`` as a DLPack producer numpy consumes: the array's base is
    the capsule, which keeps ``owner`` (the memory's producer, not the mdspan: no cycle) alive and,
    when read-only, carries READ_ONLY so that numpy refuses to make the array writable."""

    __slots__ = ("owner", "address", "nbytes", "read_only")

    def __init__(self, owner, address, nbytes, read_only):
        self.owner, self.address, self.nbytes, self.read_only = owner, address, nbytes, read_only

    def __dlpack_device__(self):
        return (int(DLDeviceType.kDLCPU), 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        flags = DLPACK_FLAG_BITMASK_READ_ONLY if self.read_only else 0
        return _native.export(self.owner, True, flags, self.address, int(DLDeviceType.kDLCPU), 0,
                              int(DLDataTypeCode.kDLUInt), 8, 1, (self.nbytes,), (1,), 0)


# ----------------------------------------------------------------------------------------------
# Accepting DLPack input
# ----------------------------------------------------------------------------------------------

def _source(dl, dlpack_version, read_only):
    """(DLTensor, version, read_only, owner) of whatever the user passed.

    ``read_only=True`` adds const; ``read_only=False`` cannot remove the source's: a READ_ONLY
    DLPack tensor, a const view's ``to_dlpack_tensor`` wrapper or a DLTensor its ``get()`` handed out
    (and the ``dltensor`` of a read-only import) are refused, as C++ refuses ``const T*`` -> ``T*``.
    """
    version = None
    flags_read_only = False
    owner = dl
    if type(dl) is DLPackTensorWrapper:
        tensor, version = dl.get(), HEADER_DLPACK_VERSION
        flags_read_only = dl.read_only
    elif isinstance(dl, DLTensor):
        tensor, version = dl, HEADER_DLPACK_VERSION
        # A DLTensor has no flags field: one workbench hands out names its source in _wb_keepalive
        # (a DLPackTensorWrapper or an importer's Imported), whose read_only is the tensor's.
        flags_read_only = getattr(getattr(dl, "_wb_keepalive", None), "read_only", False) is True
    elif isinstance(dl, ctypes._Pointer) and dl._type_ is DLTensor:
        if not dl:
            raise ValueError("Expected a pointer to a DLTensor, but got a NULL pointer.")
        tensor, version = dl.contents, HEADER_DLPACK_VERSION
    else:
        imported = dl
        if not hasattr(dl, "dltensor"):
            if not (hasattr(dl, "__dlpack__") or type(dl).__name__ == "PyCapsule"):
                raise TypeError(
                    f"Expected a DLTensor, a pointer to one, or an object with __dlpack__, but got "
                    f"{type(dl).__name__}."
                )
            try:
                from .dlpack.importer import consume
            except ImportError as e:  # a partial install without workbench.dlpack.importer
                raise TypeError(
                    f"Expected a DLTensor: reading {type(dl).__name__} through __dlpack__ needs "
                    f"workbench.dlpack.importer, which is not available ({e})."
                ) from None
            imported = consume(dl)
        tensor = imported.dltensor
        version = imported.version or (0, 0)  # a legacy capsule: DLPack before 1.0
        flags_read_only = bool(getattr(imported, "read_only", False)
                               or getattr(imported, "flags", 0) & DLPACK_FLAG_BITMASK_READ_ONLY)
        owner = imported
    if dlpack_version is not None:
        version = tuple(dlpack_version)
    if read_only is not None:
        if type(read_only) is not bool:
            raise TypeError(f"Expected read_only True, False or None, but got {type(read_only).__name__}.")
        if flags_read_only and not read_only:
            raise ValueError(
                "Expected read_only=True or None for a read-only source (a request may add const, never remove it), "
                f"but got read_only=False for {type(dl).__name__}."
            )
        flags_read_only = read_only
    return tensor, version, flags_read_only, owner


# ----------------------------------------------------------------------------------------------
# Real memory type (GPU machines only)
# ----------------------------------------------------------------------------------------------

_CUDA = None  # None: not probed; False: no cupy or no GPU; else cupy.cuda.runtime
_MEMTYPE_NAMES = {0: "unregistered host memory", 1: "host (pinned) memory", 2: "device memory",
                  3: "managed memory"}


def _cuda_runtime():
    global _CUDA
    if _CUDA is None:
        try:
            from cupy.cuda import runtime
            _CUDA = runtime if runtime.getDeviceCount() > 0 else False
        except Exception:  # no cupy, no driver, no GPU: all mean "cannot check"
            _CUDA = False
    return _CUDA or None


def _pointer_attributes(ptr):
    """(cudaMemoryType, device ordinal) of ``ptr``, or None without cupy and a GPU."""
    rt = _cuda_runtime()
    if rt is None:
        return None
    try:
        a = rt.pointerGetAttributes(ptr)
    except Exception:  # an address CUDA has never heard of is host memory
        return 0, -1
    return int(a.type), int(a.device)


def _check_memory_type(kind, ptr, device_id, name):
    attrs = _pointer_attributes(ptr)
    if attrs is None:
        return
    mtype, dev = attrs
    got = _MEMTYPE_NAMES.get(mtype, f"memory type {mtype}")
    if kind == "host" and mtype == 2:
        raise ValueError(f"DLTensor data must be host-accessible memory for {name}, but "
                         f"cudaPointerGetAttributes reports {got} on device {dev}.")
    if kind == "device":
        if mtype not in (2, 3):
            raise ValueError(f"DLTensor data must be device memory for {name}, but "
                             f"cudaPointerGetAttributes reports {got}.")
        if mtype == 2 and dev != device_id:
            raise ValueError(f"DLTensor data must be on the tensor's device {device_id} for {name}, but "
                             f"cudaPointerGetAttributes reports device {dev}.")
    if kind == "managed" and mtype != 3:
        raise ValueError(f"DLTensor data must be managed memory for {name}, but "
                         f"cudaPointerGetAttributes reports {got}.")


# ----------------------------------------------------------------------------------------------
# DLTensor -> mdspan
# ----------------------------------------------------------------------------------------------

def _mul_overflows(a, b):
    p = a * b
    return not _INT64_MIN <= p <= _INT64_MAX


def _right_stride(shape, pos, rank):
    s = 1
    for i in range(pos + 1, rank):
        if _mul_overflows(s, shape[i]):
            raise ValueError(f"shape overflow: the layout_right stride of mode {pos} exceeds int64.")
        s *= shape[i]
    return s


def _left_stride(shape, pos):
    s = 1
    for i in range(pos):
        if _mul_overflows(s, shape[i]):
            raise ValueError(f"shape overflow: the layout_left stride of mode {pos} exceeds int64.")
        s *= shape[i]
    return s


class _Conversion:
    """What one DLTensor -> mdspan conversion knows; the validators below read it and fill it in."""

    __slots__ = ("kind", "t", "is_const", "rank", "layout", "tensor", "version", "ro", "owner", "data", "handle",
                 "datatype_size", "sizeof", "shape", "strides")

    def __init__(self, kind, t, is_const, rank, layout, tensor, version, ro, owner):
        self.kind, self.t, self.is_const, self.rank, self.layout = kind, t, is_const, rank, layout
        self.tensor, self.version, self.ro, self.owner = tensor, version, ro, owner
        code, bits, lanes = dldtype_of(t)
        self.datatype_size = bits * lanes // 8
        self.sizeof = (bits * lanes + 7) // 8
        self.data = self.handle = 0
        self.shape = self.strides = ()


# CCCL's checks (cuda/__mdspan/dlpack_to_mdspan.h), one function each, called in CCCL's order by
# _to_mdspan; every message starts with CCCL's exception text.  ``*``: a check CCCL does not make.

def validate_device_type(c):
    """1. to_{host,device,managed}_mdspan: the device type of the accessor."""
    device_type, device_name, view_name = _ACCESSORS[c.kind]
    dev_type = c.tensor.device.device_type
    if dev_type != device_type:
        try:
            got = DLDeviceType(dev_type).name
        except ValueError:
            got = f"unknown device type {dev_type}"
        raise ValueError(f"DLTensor device type must be {device_name} for {view_name}, but got {got}.")


def validate_rank(c):
    """2. ``ndim == Rank``."""
    if c.tensor.ndim != c.rank:
        raise ValueError(
            f"DLTensor rank does not match expected rank: expected {c.rank}, but got ndim={c.tensor.ndim}.")


def validate_data_type(c):
    """3. __validate_dlpack_data_type: (code, bits, lanes) of the element type."""
    code, bits, lanes = dldtype_of(c.t)
    d = c.tensor.dtype
    if (d.code, d.bits, d.lanes) != (code, bits, lanes):
        raise ValueError(
            f"DLTensor data type does not match expected type: expected {c.t.name} {_dtype_str(code, bits, lanes)}, "
            f"but got {_dtype_str(d.code, d.bits, d.lanes)}."
        )


def validate_data_pointer(c):
    """4. data non-null (*: an empty tensor may have data NULL, as DLPack allows)."""
    c.data = c.tensor.data or 0
    if c.data == 0:
        shape_ptr = c.tensor.shape  # the later checks (shape, strides) still apply, as with a real pointer
        empty = c.rank > 0 and bool(shape_ptr) and any(shape_ptr[i] == 0 for i in range(c.rank))
        if not empty:
            raise ValueError("DLTensor data must be non-null, but got NULL for a tensor that is not empty.")


def validate_byte_offset(c):
    """5. layout_stride_relaxed only: byte_offset in whole elements (it becomes the mapping's offset)."""
    byte_offset = c.tensor.byte_offset
    if c.layout == "stride_relaxed":
        if c.datatype_size > 0 and byte_offset % c.datatype_size != 0:
            raise ValueError(
                f"DLTensor byte_offset must be a multiple of element size: expected a multiple of "
                f"{c.datatype_size}, but got {byte_offset}."
            )
        c.handle = c.data
    else:
        # An empty tensor with data NULL keeps a NULL handle: there is nothing to offset into.
        c.handle = c.data + byte_offset if c.data else 0


def validate_alignment(c):
    """6. alignment to the element size (CCCL: "not exact, size != alignment, but works for the supported types")."""
    if c.datatype_size > 0 and c.handle % c.datatype_size != 0:
        raise ValueError(
            f"DLTensor data must be aligned to the data type: expected a multiple of {c.datatype_size} bytes, "
            f"but got address 0x{c.handle:x}."
        )


def validate_memory_type(c):
    """7*. the pointer's real memory type, where cupy and a GPU can tell."""
    if c.data:
        _check_memory_type(c.kind, c.handle, c.tensor.device.device_id, _ACCESSORS[c.kind][2])


def validate_shape_pointer(c):
    """8. shape non-null (rank > 0)."""
    if c.rank and not c.tensor.shape:
        raise ValueError(f"DLTensor shape must be non-null for rank {c.rank}, but got NULL.")


def validate_shapes(c):
    """9. no negative extent."""
    c.shape = tuple(int(c.tensor.shape[i]) for i in range(c.rank)) if c.rank else ()
    for i, e in enumerate(c.shape):
        if e < 0:
            raise ValueError(f"DLTensor shapes must be positive: expected shape[{i}] >= 0, but got {e}.")


def _strides_of_empty(layout, shape, given):
    """The mapping strides of an empty tensor (11*, and make_mdspan): it has no element for its strides to
    address, so any are accepted; the given ones are kept where the layout accepts them, else the layout's
    canonical ones are taken (layout_stride's: row-major with extents 0 counted as 1, so still positive)."""
    rank = len(shape)
    if layout == "left":
        return tuple(_left_stride(shape, i) for i in range(rank))
    if layout == "right":
        return tuple(_right_stride(shape, i, rank) for i in range(rank))
    if layout == "stride" and any(s <= 0 for s in given):
        nonzero = tuple(max(e, 1) for e in shape)
        return tuple(_right_stride(nonzero, i, rank) for i in range(rank))
    return tuple(given)


def validate_strides(c):
    """10./11. __validate_dlpack_strides: NULL strides by DLPack version and layout; per mode, the
    layout_right / layout_left compact strides ("shape overflow" past int64), or positive strides
    (*: an empty tensor's strides are not checked, see _strides_of_empty)."""
    rank, layout, shape = c.rank, c.layout, c.shape
    if not rank:
        return
    strides_ptr = c.tensor.strides
    if not strides_ptr:
        if c.version >= (1, 2):
            raise ValueError(
                f"strides=nullptr is not supported for DLPack v1.2 and later: the tensor is DLPack "
                f"v{c.version[0]}.{c.version[1]}, rank {rank}."
            )
        if layout == "left" and rank > 1:
            raise ValueError(f"strides must be non-null for layout_left: strides=NULL means row-major, rank {rank}.")
        if layout in ("right", "left"):
            c.strides = _COMPACT[layout](shape)
        else:  # row-major, as pre-1.2 DLPack means by NULL
            c.strides = tuple(_right_stride(shape, i, rank) for i in range(rank))
        return
    given = tuple(int(strides_ptr[i]) for i in range(rank))
    if 0 in shape:
        c.strides = _strides_of_empty(layout, shape, given)
        return
    for pos in range(rank):
        if layout == "right":
            want = _right_stride(shape, pos, rank)
            if given[pos] != want:
                raise ValueError(f"DLTensor strides are not compatible with layout_right: expected strides[{pos}] "
                                 f"== {want}, but got {given[pos]} (shape {shape}, strides {given}).")
        elif layout == "left":
            want = _left_stride(shape, pos)
            if given[pos] != want:
                raise ValueError(f"DLTensor strides are not compatible with layout_left: expected strides[{pos}] "
                                 f"== {want}, but got {given[pos]} (shape {shape}, strides {given}).")
        elif layout == "stride" and given[pos] <= 0:
            raise ValueError(f"layout_stride requires strictly positive strides: expected strides[{pos}] > 0, "
                             f"but got {given[pos]} (use layout='stride_relaxed' for zero or negative strides).")
    c.strides = _COMPACT[layout](shape) if layout in ("right", "left") else given


def validate_span(mapping):
    """12*. size and required_span_size() fit int64_t (CCCL asserts it in debug builds only; release
    builds wrap around).  make_mdspan checks it too: is_unique() and numpy() compute in int64."""
    span = max(mapping.size(), mapping.required_span_size())
    if span > _INT64_MAX:
        raise ValueError(
            f"layout_{mapping.layout}::mapping: required span size is not representable as index_type: expected at "
            f"most {_INT64_MAX} (int64_t), but got {span} (shape {mapping.extents()}, strides {mapping.strides()})."
        )


_CCCL_ORDER = (validate_device_type, validate_rank, validate_data_type, validate_data_pointer, validate_byte_offset,
               validate_alignment, validate_memory_type, validate_shape_pointer, validate_shapes, validate_strides)


def _to_mdspan(kind, dl, element_type, rank, layout, dlpack_version, read_only):
    t, is_const = _split_const(element_type)
    _check_lanes(t)
    if type(rank) is not int:
        raise TypeError(f"Expected an int rank, but got {type(rank).__name__}.")
    if rank < 0:
        raise ValueError(f"Expected a rank >= 0, but got {rank}.")
    if layout not in MDSPAN_LAYOUTS:
        raise ValueError(f"Expected layout 'right', 'left', 'stride' or 'stride_relaxed', but got {layout!r}.")
    c = _Conversion(kind, t, is_const, rank, layout, *_source(dl, dlpack_version, read_only))
    for validate in _CCCL_ORDER:
        validate(c)
    sizeof = c.sizeof
    offset = c.tensor.byte_offset // sizeof if layout == "stride_relaxed" else 0
    mapping = MdspanMapping(layout, c.shape, c.strides, offset)
    validate_span(mapping)
    handle = c.handle
    # 13*. negative strides reaching below the data pointer (numpy's a[:, ::-1] exports data at
    # element 0 with byte_offset 0) rebase: the handle moves down and the offset up by the same number
    # of elements, so every element keeps its address and all mapped offsets are >= 0, the mapping's
    # precondition (CCCL asserts it in debug builds only).
    if layout == "stride_relaxed" and mapping.size() > 0 and mapping.min_offset() < 0:
        shift = -mapping.min_offset()
        if shift * sizeof > handle:  # CCCL keeps the pointer: its mapping would address memory below 0
            raise ValueError(
                f"layout_stride_relaxed::mapping: the negative strides reach below address 0: expected at most "
                f"{handle // sizeof} elements below the data pointer 0x{handle:x}, but got {shift} (shape {c.shape}, "
                f"strides {c.strides})."
            )
        mapping = MdspanMapping(layout, c.shape, c.strides, offset + shift)
        handle -= shift * sizeof
    device = (int(c.tensor.device.device_type), int(c.tensor.device.device_id))
    return Mdspan(kind, const(t) if (is_const or c.ro) else t, mapping, handle, device=device, owner=c.owner)


_DOC = """Convert a DLTensor to a ``{view}`` as CCCL's ``cuda::{fn}<T, Rank, Layout>``.

    ``dl``: a ``workbench.dlpack.DLTensor`` (or a pointer to one), a ``to_dlpack_tensor``
    wrapper, or any DLPack object (read through ``workbench.dlpack.importer.consume``).
    ``element_type``: ``wb.Float32`` ... or ``wb.const(wb.Float32)``; ``rank``: the expected
    ``ndim``; ``layout``: 'right', 'left', 'stride' (default) or 'stride_relaxed'.
    ``dlpack_version``: the producer's DLPack version (decides whether strides may be NULL);
    default: the capsule's, or 1.3 for a bare DLTensor.  ``read_only=True`` makes the view
    const; ``read_only=False`` of a read-only source (READ_ONLY flag, a const view's export) is
    a ValueError: a request may add const, never remove it.  A read-only view has a const element type.

    The checks and their order are in this module's docstring; each failure is a ValueError
    whose message starts with CCCL's text.  Guarantees, for the returned ``md``:
    ``md.extent(i) == shape[i]``; ``md.stride(i) == strides[i]`` (computed for right/left, and
    row-major where strides may be NULL; an empty tensor may have any strides: its view has the
    layout's canonical ones where the given ones do not fit the layout); ``md.data_handle() == data + byte_offset``
    (stride_relaxed: ``== data`` and ``md.offset() == byte_offset // sizeof(T)``, unless rebased
    for negative strides; the address of element 0, ``data + byte_offset``, is kept in every case).
    """


def to_host_mdspan(dl, element_type, rank, layout="stride", *, dlpack_version=None, read_only=None):
    return _to_mdspan("host", dl, element_type, rank, layout, dlpack_version, read_only)


def to_device_mdspan(dl, element_type, rank, layout="stride", *, dlpack_version=None, read_only=None):
    return _to_mdspan("device", dl, element_type, rank, layout, dlpack_version, read_only)


def to_managed_mdspan(dl, element_type, rank, layout="stride", *, dlpack_version=None, read_only=None):
    return _to_mdspan("managed", dl, element_type, rank, layout, dlpack_version, read_only)


to_host_mdspan.__doc__ = _DOC.format(view="host_mdspan", fn="to_host_mdspan")
to_device_mdspan.__doc__ = _DOC.format(view="device_mdspan", fn="to_device_mdspan")
to_managed_mdspan.__doc__ = _DOC.format(view="managed_mdspan", fn="to_managed_mdspan")


def _int(v, what):
    try:
        return operator.index(v)  # integers only: int() would make 1.5 the offset 1
    except TypeError:
        raise TypeError(f"Expected integer {what}, but got {type(v).__name__} ({v!r}).") from None


def make_mdspan(data_handle, element_type, extents, strides=None, *, layout=None, offset=0, accessor="host",
                device=None, owner=None):
    """An mdspan over ``data_handle`` (an int address), like constructing ``cuda::host_mdspan`` in C++.

    ``strides=None`` gives layout_right; ``layout`` defaults to 'right' without strides,
    'stride' with positive strides and no offset, else 'stride_relaxed'.  Nothing is checked
    against memory: as in C++, the caller vouches for the pointer.  ``owner`` is kept alive.
    With no elements (an extent 0), the strides are not checked against the layout: the view has
    the given ones where the layout accepts them, else the layout's canonical ones, as the importers.
    """
    extents = tuple(_int(e, "extents") for e in extents)
    if any(e < 0 for e in extents):
        raise ValueError(f"Expected non-negative extents, but got {extents}.")
    if strides is None:
        layout = layout or "right"
        if layout not in ("right", "left"):
            raise ValueError(f"Expected strides for layout {layout!r}, but got none.")
        strides = _COMPACT[layout](extents)
    strides = tuple(_int(s, "strides") for s in strides)
    offset = _int(offset, "offset")
    if len(strides) != len(extents):
        raise ValueError(f"Expected {len(extents)} strides, but got {len(strides)}.")
    if layout is None:
        layout = "stride" if offset == 0 and all(s > 0 for s in strides) else "stride_relaxed"
    if layout not in MDSPAN_LAYOUTS:
        raise ValueError(f"Expected layout 'right', 'left', 'stride' or 'stride_relaxed', but got {layout!r}.")
    if 0 in extents and layout != "stride_relaxed":
        strides = _strides_of_empty(layout, extents, strides)
    if layout in ("right", "left") and strides != _COMPACT[layout](extents):
        raise ValueError(f"Expected the layout_{layout} strides {_COMPACT[layout](extents)}, "
                         f"but got {strides}.")
    if layout == "stride" and any(s <= 0 for s in strides):
        raise ValueError(f"Expected strictly positive strides for layout_stride, but got {strides}.")
    if layout != "stride_relaxed" and offset != 0:
        raise ValueError(f"Expected offset 0 for layout_{layout} (only stride_relaxed has one), but got {offset}.")
    mapping = MdspanMapping(layout, extents, strides, offset)
    if mapping.size() > 0 and mapping.min_offset() < 0:
        raise ValueError(f"Expected an offset covering the negative strides ({offset - mapping.min_offset()}), "
                         f"but got {offset}.")
    validate_span(mapping)
    return Mdspan(accessor, element_type, mapping, data_handle, device=device, owner=owner)


# ----------------------------------------------------------------------------------------------
# submdspan
# ----------------------------------------------------------------------------------------------

def submdspan(md, *specs):
    """The sub-view of ``md`` selected by one spec per mode, as ``cuda::std::submdspan``.

    A spec is an int (the mode is dropped), a Python slice (any step but 0; a negative step
    gives a negative stride and a stride_relaxed view), ``wb.full_extent``, or a pair
    ``(begin, end)``.  The result has the same accessor, element type and owner;
    ``result[j...] is md[i...]`` for the corresponding indices.  Layout: right/left when the
    result is still compact that way and came from right/left, stride_relaxed when the source
    was relaxed or a step is negative, else stride.
    """
    if type(md) is not Mdspan:
        raise TypeError(f"Expected an mdspan view, but got {type(md).__name__}.")
    if len(specs) != md.rank():
        raise ValueError(f"Expected {md.rank()} slice specifiers, but got {len(specs)}.")
    crd, kept = [], []   # CuTe's slice coordinate (None keeps a mode); each kept mode's (start, extent, step)
    negative = False
    for r, spec in enumerate(specs):
        e = md.extent(r)
        if spec is full_extent:
            spec = slice(None)
        if type(spec) is tuple:
            if len(spec) != 2:
                raise ValueError(f"Expected a (begin, end) pair for mode {r}, but got {spec!r}.")
            b, end = (operator.index(v) for v in spec)
            if not 0 <= b <= end <= e:
                raise IndexError(f"Expected 0 <= begin <= end <= {e} for mode {r}, but got ({b}, {end}).")
            spec = slice(b, end)
        if type(spec) is slice:
            start, _, step = spec.indices(e)
            n = len(range(*spec.indices(e)))
            crd.append(None)
            kept.append((start if n > 0 else 0, n, step))
            negative |= step < 0
        else:
            try:
                i = operator.index(spec)
            except TypeError:
                raise TypeError(f"Expected an int, slice, pair or wb.full_extent for mode {r}, "
                                f"but got {type(spec).__name__}.") from None
            if not 0 <= i < e:
                raise IndexError(f"Expected index {r} in [0, {e}), but got {i}.")
            crd.append(i)
    # The modes an int fixes go as CuTe slices (the core's slice_and_offset); a kept mode starts at its
    # range's start and steps by its stride times the range's step (CCCL's strided slice: no CuTe op).
    sub, shift = slice_and_offset(tuple(crd), md.mapping().cute_layout)
    shift += sub(tuple(start for start, _, _ in kept))
    extents = tuple(n for _, n, _ in kept)
    strides = tuple(d * step for d, (_, _, step) in zip(sub.stride, kept))
    et_ = const(md.element_type) if md.is_const else md.element_type
    if md.layout == "stride_relaxed" or negative:
        # Keep the data handle; the shift goes into the (non-negative) offset.
        mapping = MdspanMapping("stride_relaxed", extents, strides, md.offset() + shift)
        return Mdspan(md.accessor, et_, mapping, md.data_handle(), device=md.device, owner=md)
    bits = shift * md.element_type.bits
    if bits % 8:
        raise ValueError(f"Expected a sub-view starting on a byte boundary, but got element {shift} of "
                         f"{md.element_type.name}.")
    layout = "stride"
    if md.layout in ("right", "left") and strides == _COMPACT[md.layout](extents):
        layout = md.layout
    mapping = MdspanMapping(layout, extents, strides, 0)
    data = md.data_handle() + bits // 8 if md.data_handle() else 0
    return Mdspan(md.accessor, et_, mapping, data, device=md.device, owner=md)


# ----------------------------------------------------------------------------------------------
# mdspan -> DLTensor
# ----------------------------------------------------------------------------------------------

class DLPackTensorWrapper:
    """CCCL's ``__dlpack_tensor<Rank>``: owns the shape and strides storage of a DLTensor.

    ``get()`` returns a fresh ``DLTensor`` whose ``shape``/``strides`` point into this
    wrapper's arrays (NULL for rank 0).  Unlike C++, it cannot dangle: the returned DLTensor
    keeps the wrapper (and so the mdspan and its memory's producer) alive.
    """

    def __init__(self, md, data, device, dtype, shape, strides, byte_offset):
        self.mdspan = md
        self.read_only = md.is_const
        self.shape = shape
        self.strides = strides
        n = len(shape)
        self._shape = (ctypes.c_int64 * max(n, 1))(*shape)
        self._strides = (ctypes.c_int64 * max(n, 1))(*strides)
        self._tensor = DLTensor()
        self._tensor.data = data or None
        self._tensor.device.device_type, self._tensor.device.device_id = device
        self._tensor.ndim = n
        self._tensor.dtype.code, self._tensor.dtype.bits, self._tensor.dtype.lanes = dtype
        self._tensor.byte_offset = byte_offset

    def get(self):
        t = DLTensor()
        ctypes.pointer(t)[0] = self._tensor
        if self._tensor.ndim > 0:
            t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
            t.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        t._wb_keepalive = self  # the shape/strides storage lives as long as the DLTensor
        return t

    def __repr__(self):
        t = self._tensor
        return (f"dlpack_tensor<{t.ndim}>(data=0x{(t.data or 0):016x}, device=({t.device.device_type}, "
                f"{t.device.device_id}), dtype={_dtype_str(t.dtype.code, t.dtype.bits, t.dtype.lanes)}, "
                f"shape={self.shape}, strides={self.strides}, byte_offset={t.byte_offset})")


def to_dlpack_tensor(md):
    """A DLPack view of ``md``, as CCCL's ``cuda::to_dlpack_tensor``.

    ``ndim = rank``, ``shape[i] = extent(i)``, ``strides[i] = stride(i)``, data =
    ``data_handle()`` (NULL for an empty view), ``byte_offset = 0``; device {kDLCPU, 0} /
    {kDLCUDA, the pointer's device} / {kDLCUDAManaged, 0}; the element type's (code, bits,
    lanes).  An extent or stride outside int64 raises ValueError ("Extent is too large" /
    "Stride is too large").  Improvement: a stride_relaxed view with an offset exports
    ``byte_offset = offset * sizeof(T)``, so element 0 stays at ``data + byte_offset``.
    """
    if type(md) is not Mdspan:
        raise TypeError(f"Expected an mdspan view (wb.to_host_mdspan ...), but got {type(md).__name__}.")
    t = md.element_type
    _check_lanes(t)
    for i in range(md.rank()):
        if md.extent(i) > _INT64_MAX:
            raise ValueError(f"Extent is too large: expected extent({i}) <= {_INT64_MAX}, but got {md.extent(i)}.")
        if md.stride(i) > _INT64_MAX:
            raise ValueError(f"Stride is too large: expected stride({i}) <= {_INT64_MAX}, but got {md.stride(i)}.")
        if md.stride(i) < _INT64_MIN:
            raise ValueError(f"Stride is too small: expected stride({i}) >= {_INT64_MIN}, but got {md.stride(i)}.")
    if md.accessor == "host":
        device = (int(DLDeviceType.kDLCPU), 0)
    elif md.accessor == "managed":
        device = (int(DLDeviceType.kDLCUDAManaged), 0)
    else:
        # CCCL asks the driver for the pointer's device; without a GPU we keep the imported id.
        attrs = _pointer_attributes(md.data_handle()) if md.size() > 0 else None
        dev = attrs[1] if attrs is not None and attrs[0] == 2 else md.device[1]
        device = (int(DLDeviceType.kDLCUDA), dev)
    empty = md.size() == 0
    byte_offset = 0
    if md.offset() and not empty:
        bits = md.offset() * t.bits
        if bits % 8:
            raise BufferError(f"Expected an offset of whole bytes, but got {md.offset()} elements of {t.name}.")
        byte_offset = bits // 8
    return DLPackTensorWrapper(md, 0 if empty else md.data_handle(), device, dldtype_of(t), md.extents(),
                               md.strides(), byte_offset)
