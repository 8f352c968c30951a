"""Import (consume) side of DLPack, per the DLPack Python specification.

Rules, each traceable to the spec or dlpack.h 1.3:
- ask ``__dlpack__(max_version=(1, 3))``; a producer that predates versioning raises TypeError
  on the keyword, so fall back to ``__dlpack__()``;
- branch on the capsule *name* (``dltensor_versioned`` / ``dltensor``), never on what was asked;
- consuming renames the capsule to ``used_...``; the deleter is then called exactly once when the
  last workbench view dies (the C ``Owner`` does it);
- a versioned capsule with a different major version: call the deleter, read nothing, BufferError;
- types exposing ``__dlpack_c_exchange_api__`` (torch >= 2.10) are read through the exchange
  API's ``dltensor_from_py_object_no_sync`` into a stack DLTensor: no capsule, no allocation;
  torch tensors, where the torch reader is built for the running torch, by the reader instead
  (workbench/dlpack/torch_native.py: same fields, same refusals, a third of the host time).
"""

from __future__ import annotations

import ctypes
from typing import NamedTuple

from . import _native
from .abi import DLPACK_FLAG_BITMASK_READ_ONLY, DLDataType, DLDevice, DLPackExchangeAPI, DLTensor
from .dtypes import PACKED

__all__ = ["Fields", "dlpack_fields", "consume", "Imported", "exchange_api_of"]

MAX_VERSION = (1, 3)


class Fields(NamedTuple):
    """The decoded fields of one imported DLTensor (raw: ``data`` excludes ``byte_offset``)."""

    owner: object             # keeps the memory alive (C Owner calling the deleter, or the producer)
    version: tuple | None     # (major, minor); None for a legacy capsule
    flags: int
    data: int
    device_type: int
    device_id: int
    ndim: int
    code: int
    bits: int
    lanes: int
    shape: tuple | None       # None: the producer sent shape == NULL with ndim > 0
    strides: tuple | None     # None: strides == NULL
    byte_offset: int
    packed_dtype: int         # code | bits << 8 | lanes << 16


_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_GetPointer.restype = ctypes.c_void_p
_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

_NO_API = object()
_EXCHANGE: dict[type, tuple | None] = {}  # per type: (fnptr, version, precheck) or None


def _torch_precheck(x):
    # The exchange API skips the checks torch's __dlpack__ makes, and __dlpack__ itself exports
    # neg-bit tensors with silently negated data: refuse all three with the fix in the message.
    if x.requires_grad:
        raise BufferError("Expected a tensor that does not require grad, but got one that does: pass x.detach().")
    if x.is_conj():
        raise BufferError("Expected a tensor without the conjugate bit, but got one with it: pass x.resolve_conj().")
    if x.is_neg():
        raise BufferError("Expected a tensor without the negative bit, but got one with it: pass x.resolve_neg().")


def _is_torch_tensor_type(tp: type) -> bool:
    # by the MRO, not the module name: a user's torch.Tensor subclass carries the same neg/conj bits
    return any(c.__module__.partition(".")[0] == "torch" for c in tp.__mro__)


def exchange_api_of(tp: type):
    """(fnptr, version, precheck) for a type exposing ``__dlpack_c_exchange_api__``, else None."""
    cached = _EXCHANGE.get(tp, _NO_API)
    if cached is not _NO_API:
        return cached
    result = None
    caps = getattr(tp, "__dlpack_c_exchange_api__", None)
    if caps is not None:
        try:
            addr = _GetPointer(caps, b"dlpack_exchange_api")
        except ValueError:
            addr = None
        if addr:
            api = DLPackExchangeAPI.from_address(addr)
            version = (api.header.version.major, api.header.version.minor)
            fn = api.dltensor_from_py_object_no_sync
            if version[0] == MAX_VERSION[0] and fn:
                pre = _torch_precheck if _is_torch_tensor_type(tp) else None
                result = (fn, version, pre)
    _EXCHANGE[tp] = result
    _learn(tp, result)
    return result


_CPU_ONLY_TYPES: set[type] = set()
try:
    import numpy as _np

    _CPU_ONLY_TYPES.add(_np.ndarray)
except ImportError:  # numpy is a dependency, but the bridge itself does not need it
    pass

# The table the C paths (wb.from_dlpack and the kernel launcher) read, filled here as producer types
# are met, whichever path meets them first: a type the C side does not know goes through the Python
# path once and is served in C from then on.  One entry a type (see wb_producer in _dlpack_structs.h):
VIA_EXCHANGE, VIA_HOST_CAPSULE, VIA_CUDA_CAPSULE = 0, 1, 2
PRODUCERS_FOR_C: dict = {tp: (VIA_HOST_CAPSULE,) for tp in _CPU_ONLY_TYPES}
_native.set_tables(PRODUCERS_FOR_C, PACKED)


def _learn(tp: type, ex) -> None:
    # A type's entry is set here once (exchange_api_of caches per type) and never changed; the C paths'
    # cache of the last type's entry checks the table anyway (wb_producer_cached).
    if ex is not None:   # (VIA_EXCHANGE, fnptr, version, whether torch's hazards are checked)
        if ex[2] is _torch_precheck:
            # the first torch tensor type met: load the torch reader if it was built for this torch
            # (torch_native.py), before the C paths first read this type
            from . import torch_native
            torch_native.activate()
        PRODUCERS_FOR_C[tp] = (VIA_EXCHANGE, ex[0], ex[1], ex[2] is _torch_precheck)
    elif tp.__module__.partition(".")[0] == "cupy" and tp.__name__ == "ndarray":
        PRODUCERS_FOR_C[tp] = (VIA_CUDA_CAPSULE,)  # cupy arrays live on CUDA devices: asked with stream=-1


def dlpack_fields(x, stream=None, *, keeps_bounds=False) -> tuple:
    """Decode any DLPack producer (or a raw capsule) into the tuple layout of :class:`Fields`.

    ``stream`` is passed to non-CPU producers as the spec's ``stream`` argument (-1: no
    synchronization, 1/2: legacy/per-thread default stream, else a handle); None (the default)
    leaves it to the producer, since not all accept -1 (jax raises on it).  ``keeps_bounds``: the
    caller keeps a workbench tensor over a bare address bare (wb.from_dlpack), so it need not lie in
    declared memory.  Returns a plain tuple: the general path of ``wb.from_dlpack`` (torch, numpy and
    cupy take the C path).
    """
    tp = type(x)
    ex = _EXCHANGE.get(tp, _NO_API)
    if ex is _NO_API:
        ex = exchange_api_of(tp)
    if ex is not None and stream is None:  # the exchange API never synchronizes: a stream asks for __dlpack__
        if ex[2] is not None:
            ex[2](x)
        return _native.exchange(ex[0], x, ex[1])
    if ex is not None and ex[2] is not None:
        ex[2](x)  # torch's __dlpack__ exports neg-bit tensors as negated data: refuse before asking
    if tp.__name__ == "PyCapsule":
        return _native.consume(x)
    own = getattr(x, "__wb_dlpack__", None)
    if own is not None:  # a workbench tensor: served without the export rule's refusals (we honour both)
        return _native.consume(own(max_version=MAX_VERSION, keeps_bounds=keeps_bounds))
    method = getattr(x, "__dlpack__", None)
    if method is None:
        raise TypeError(f"Expected an object implementing __dlpack__ (a torch/numpy/cupy/jax array), but got {tp.__name__}.")
    kw = {"max_version": MAX_VERSION}
    if tp not in _CPU_ONLY_TYPES and stream is not None and x.__dlpack_device__()[0] != 1:
        kw["stream"] = stream  # only non-CPU producers take a stream
    try:
        capsule = method(**kw)
    except TypeError:
        # pre-1.0 producers (numpy < 2.1, ...) do not know max_version: the spec's fallback
        kw.pop("max_version")
        capsule = method(**kw)
    return _native.consume(capsule)


class Imported:
    """A consumed DLPack tensor with its raw fields, for inspection and the mdspan views.

    ``fields`` are exactly what the producer wrote; ``dltensor`` is a ctypes DLTensor with the same
    values whose shape/strides arrays are owned by this object (NULL where the producer sent NULL).
    The producer's deleter runs once, when this object and every view made from it are gone.
    """

    def __init__(self, fields: tuple):
        self.fields = Fields(*fields)
        f = self.fields
        n = f.ndim
        self._shape = (ctypes.c_int64 * n)(*f.shape) if f.shape is not None else None
        self._strides = (ctypes.c_int64 * n)(*f.strides) if f.strides is not None else None

    @property
    def dltensor(self) -> DLTensor:
        """A fresh ctypes DLTensor over this import: it keeps this object (and so the producer's
        memory) alive, without a cycle that would delay the producer's deleter to a collection."""
        f = self.fields
        t = DLTensor()
        t.data = f.data or None
        t.device = DLDevice(f.device_type, f.device_id)
        t.ndim = f.ndim
        t.dtype = DLDataType(f.code, f.bits, f.lanes)
        if self._shape is not None and f.ndim:
            t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        if self._strides is not None and f.ndim:
            t.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        t.byte_offset = f.byte_offset
        t._wb_keepalive = self  # a view made from the DLTensor (mdspan) keeps the producer alive through it
        return t

    @property
    def version(self):
        return self.fields.version

    @property
    def flags(self) -> int:
        return self.fields.flags

    @property
    def read_only(self) -> bool:
        return bool(self.fields.flags & DLPACK_FLAG_BITMASK_READ_ONLY)

    @property
    def owner(self):
        return self.fields.owner

    def __repr__(self) -> str:
        f = self.fields
        v = "legacy" if f.version is None else f"{f.version[0]}.{f.version[1]}"
        return (f"Imported(version={v}, flags={f.flags:#x}, device=({f.device_type},{f.device_id}), "
                f"dtype=({f.code},{f.bits},{f.lanes}), shape={f.shape}, strides={f.strides}, byte_offset={f.byte_offset})")


def consume(obj, stream=None) -> Imported:
    """Consume any DLPack producer or capsule and keep its raw fields (see :class:`Imported`)."""
    return Imported(dlpack_fields(obj, stream))
