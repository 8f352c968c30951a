"""A DLPack producer written in the test suite: it builds capsules by hand with ctypes so that
tests control every field (versions, flags, NULL pointers, dtype codes) and count deleter calls."""

from __future__ import annotations

import ctypes

import numpy as np

from workbench.dlpack.abi import (
    DLDataType,
    DLDevice,
    DLManagedTensor,
    DLManagedTensorDeleter,
    DLManagedTensorVersioned,
    DLManagedTensorVersionedDeleter,
    DLPackVersion,
)

_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

_KEEP: dict[int, object] = {}  # address of the managed struct -> everything it points into
_DEAD: list = []               # RawCapsules whose deleter ran, freed when the next one is made


class Producer:
    """An object with ``__dlpack__`` over a numpy buffer, with knobs for every field.

    ``deleter_calls`` counts how often the consumer (or the capsule destructor) released it.
    """

    def __init__(self, array=None, *, versioned=True, version=(1, 3), flags=0, shape=None, strides="auto",
                 dtype=None, device=(1, 0), data="auto", byte_offset=0, ndim=None, accepts_max_version=True):
        self.array = np.arange(12, dtype=np.float32).reshape(3, 4) if array is None else array
        a = self.array
        self.versioned, self.version, self.flags = versioned, version, flags
        self.shape = tuple(a.shape) if shape is None else shape
        if strides == "auto":
            strides = tuple(s // a.itemsize for s in a.strides)
        self.strides = strides
        self.dtype = dtype or {np.dtype("float32"): (2, 32, 1), np.dtype("int64"): (0, 64, 1),
                               np.dtype("uint8"): (1, 8, 1), np.dtype("float64"): (2, 64, 1)}[a.dtype]
        self.device = device
        self.data = a.ctypes.data if data == "auto" else data
        self.byte_offset = byte_offset
        self.ndim = len(self.shape) if ndim is None else ndim
        self.accepts_max_version = accepts_max_version
        self.deleter_calls = 0
        self.capsules_made = 0

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, *, stream=None, max_version=None, **kw):
        if max_version is not None and not self.accepts_max_version:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        self.capsules_made += 1
        return self.capsule()

    def _on_delete(self, ptr):
        self.deleter_calls += 1
        _KEEP.pop(ptr, None)

    def capsule(self):
        n = self.ndim
        shape = (ctypes.c_int64 * max(n, 1))(*(self.shape or ())) if self.shape is not None else None
        strides = (ctypes.c_int64 * max(n, 1))(*self.strides) if self.strides is not None else None
        if self.versioned:
            m = DLManagedTensorVersioned()
            m.version = DLPackVersion(*self.version)
            m.flags = self.flags
            deleter = DLManagedTensorVersionedDeleter(lambda p: self._on_delete(ctypes.addressof(p.contents)))
        else:
            m = DLManagedTensor()
            deleter = DLManagedTensorDeleter(lambda p: self._on_delete(ctypes.addressof(p.contents)))
        m.deleter = deleter
        t = m.dl_tensor
        t.data = self.data or None
        t.device = DLDevice(*self.device)
        t.ndim = n
        t.dtype = DLDataType(*self.dtype)
        if shape is not None:
            t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        if strides is not None:
            t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
        t.byte_offset = self.byte_offset
        addr = ctypes.addressof(m)
        _KEEP[addr] = (m, shape, strides, deleter, self.array)
        name = b"dltensor_versioned" if self.versioned else b"dltensor"
        return _PyCapsule_New(addr, name, ctypes.cast(_DESTRUCTOR, ctypes.c_void_p))


# The destructor gets the dying capsule as a raw pointer: wrapping it in a py_object would
# resurrect an object whose refcount is already zero.
_IsValidRaw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", ctypes.pythonapi))
_GetPointerRaw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", ctypes.pythonapi))


def _capsule_destructor(capsule):
    # The producer's rule: a capsule that was never consumed still owns its tensor.
    for name, cls in ((b"dltensor_versioned", DLManagedTensorVersioned), (b"dltensor", DLManagedTensor)):
        if _IsValidRaw(capsule, name):
            m = cls.from_address(_GetPointerRaw(capsule, name))
            if m.deleter:  # DLPack allows a NULL deleter
                m.deleter(ctypes.pointer(m))


_DESTRUCTOR = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(_capsule_destructor)
# Capsules may die during interpreter shutdown, after this module's globals: the trampoline is immortal.
ctypes.pythonapi.Py_IncRef(ctypes.py_object(_DESTRUCTOR))


class RawCapsule:
    """One hand-built capsule with every field chosen by the caller, none of them checked: the fuzz
    suite's producer.  ``shape``/``strides`` are the int64 arrays as allocated (None: a NULL pointer),
    independently of ``ndim``; ``deleter`` is 'count' (counts calls), 'null' (a NULL deleter) or 'raise'
    (counts, then raises inside the ctypes callback)."""

    def __init__(self, *, name=b"dltensor_versioned", versioned=True, version=(1, 3), flags=0, data=None, device=(1, 0),
                 ndim=1, dtype=(2, 32, 1), shape=(1,), strides=(1,), byte_offset=0, deleter="count", backing=None):
        self.deleter_calls = 0
        self.backing = backing
        _DEAD.clear()          # deleters that ran before this capsule was made have returned: free them now
        _KEEP[id(self)] = self  # struct and deleter trampoline live until the deleter runs (a NULL one: forever)
        self._shape = (ctypes.c_int64 * max(len(shape), 1))(*shape) if shape is not None else None
        self._strides = (ctypes.c_int64 * max(len(strides), 1))(*strides) if strides is not None else None
        if versioned:
            m = DLManagedTensorVersioned()
            m.version = DLPackVersion(*version)
            m.flags = flags
            cb = DLManagedTensorVersionedDeleter(self._on_delete)
        else:
            m = DLManagedTensor()
            cb = DLManagedTensorDeleter(self._on_delete)
        if deleter != "null":
            m.deleter = cb
        self._raise = deleter == "raise"
        t = m.dl_tensor
        t.data = data or None
        t.device = DLDevice(*device)
        t.ndim = ndim
        t.dtype = DLDataType(*dtype)
        if self._shape is not None:
            t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        if self._strides is not None:
            t.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        t.byte_offset = byte_offset
        self._m, self._cb = m, cb
        self.capsule = _PyCapsule_New(ctypes.addressof(m), name, ctypes.cast(_DESTRUCTOR, ctypes.c_void_p))

    def _on_delete(self, ptr):
        self.deleter_calls += 1
        _DEAD.append(_KEEP.pop(id(self), None))  # not freed here: this call still runs on its trampoline
        if self._raise:
            raise RuntimeError("a misbehaving deleter")
