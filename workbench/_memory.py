"""What memory a bare address may reach.

A tensor over a bare address (``wb.make_tensor(wb.make_ptr(...), layout)``) owns nothing and has no
extent but its layout, which the caller may have got wrong: a kernel, numpy or torch would read
and write wherever that layout points.  So every consumer of such memory first asks here:

* host memory must lie inside a buffer the caller declared with :func:`host_buffers` (the CPU
  executor's raw pointers, and exports or mdspan views of bare host tensors);
* device memory must lie inside one allocation, as the CUDA driver reports it
  (``cuMemGetAddressRange``); without a driver that can tell, it is refused.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes

__all__ = ["host_buffers", "declared_host_buffer", "device_allocation", "check_bare_span"]

# (base address, bytes, read-only) of every buffer declared in this thread/context
_DECLARED: contextvars.ContextVar[tuple] = contextvars.ContextVar("wb_host_buffers", default=())


@contextlib.contextmanager
def host_buffers(*buffers):
    """Declare the host memory that bare addresses point into, for the duration of a ``with`` block::

        with wb.host_buffers(x, y, z):
            add_ptr[grid, block](px, py, pz, m, n)      # raw pointers on the CPU executor
            wb.make_tensor(px, layout).numpy()          # a view of a bare address

    A pointer whose address lies in a declared buffer (start, middle or one past the end) may
    access exactly the whole elements of that buffer (the smallest one, when declared buffers
    overlap), before or after the pointer; any other access is refused without touching memory.
    A read-only buffer refuses writes through the pointer.  Buffers are objects exporting a
    C-contiguous buffer (numpy arrays, bytearray, ctypes arrays) and are kept alive (their
    exports held) until the block ends.  Declarations nest and are per thread/context.
    """
    import numpy as np

    spans, views = [], []
    try:
        for b in buffers:
            try:
                mv = memoryview(b)
            except TypeError:
                raise TypeError(f"Expected objects exporting the buffer protocol (numpy arrays, bytearray, ctypes arrays) "
                                f"for host_buffers, but got {type(b).__name__}.") from None
            views.append(mv)
            if not mv.c_contiguous:
                raise ValueError(f"Expected C-contiguous buffers for host_buffers, but got a non-contiguous "
                                 f"{type(b).__name__} of shape {mv.shape}.")
            base = np.frombuffer(mv.cast("B"), np.uint8).ctypes.data if mv.nbytes else None
            if base is not None:
                spans.append((base, mv.nbytes, mv.readonly))
        token = _DECLARED.set(_DECLARED.get() + tuple(spans))
        try:
            yield
        finally:
            _DECLARED.reset(token)
    finally:
        for mv in views:
            mv.release()


def declared_host_buffer(address: int):
    """(base, bytes, read_only) of the smallest declared buffer containing ``address`` (one past
    the end counts), or None."""
    inside = [sp for sp in _DECLARED.get() if sp[0] <= address <= sp[0] + sp[1]]
    return min(inside, key=lambda sp: sp[1]) if inside else None


_CUDA = None  # None: not probed yet; False: no driver; else libcuda with cuMemGetAddressRange typed


def device_allocation(address: int):
    """(base, bytes) of the CUDA allocation containing ``address``, or None when the driver does not
    know it (or there is no driver, or no context)."""
    global _CUDA
    if _CUDA is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            lib.cuMemGetAddressRange_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t),
                                                    ctypes.c_uint64]
            lib.cuMemGetAddressRange_v2.restype = ctypes.c_int
            _CUDA = lib
        except (OSError, AttributeError):
            _CUDA = False
    if not _CUDA:
        return None
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    if _CUDA.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), address) != 0:
        return None
    return base.value, size.value


def check_bare_span(lo: int, hi: int, device: bool, what: str, *, written: bool = False) -> None:
    """Refuse a bare-address byte range [lo, hi) that no declared host buffer (host memory) or no
    single CUDA allocation (device memory) contains; ``what`` names it in the message."""
    if hi <= lo:
        return
    if device:
        alloc = device_allocation(lo)
        if alloc is not None and alloc[0] <= lo and hi <= alloc[0] + alloc[1]:
            return
        where = "no CUDA allocation the driver knows" if alloc is None else \
            f"the CUDA allocation {alloc[0]:#x}..{alloc[0] + alloc[1]:#x}"
        raise ValueError(
            f"Expected {what} to lie inside one CUDA allocation, but its bytes {lo:#x}..{hi:#x} lie outside "
            f"{where}: a bare address has no extent of its own, and reading past an allocation faults the GPU.")
    buf = declared_host_buffer(lo)
    if buf is not None and hi <= buf[0] + buf[1]:
        if written and buf[2]:
            raise ValueError(f"Expected writable memory for {what}, but it lies in a read-only declared buffer.")
        return
    raise ValueError(
        f"Expected {what} (bytes {lo:#x}..{hi:#x}) to lie inside host memory declared with wb.host_buffers(...), "
        "but no declared buffer contains it: a bare address has no extent of its own, and reading past the "
        "memory behind it crashes the process.  Declare the memory (`with wb.host_buffers(array):`) or make "
        "the tensor from the array itself (wb.from_dlpack).")
