"""The GPU backend: NVRTC through cupy, launches through the driver's ``cuLaunchKernel``.

cupy compiles (``cupy.RawModule``, with its on-disk kernel cache) and loads the module; the hot
path then calls ``cuLaunchKernel`` through ctypes on cupy's ``CUfunction`` handle with a
parameter buffer prepared once per specialization (``kernelParams[i]`` points at slot ``i`` of
one 8-byte-per-parameter buffer; a call only rewrites the values with one ``struct.pack_into``),
because ``RawKernel.__call__`` costs several microseconds more than the driver call.

``compile_ptx`` needs no GPU (NVRTC is a library): CI uses it to check that generated code compiles.
"""

from __future__ import annotations

import ctypes
import os
import time

from .limits import MAX_STATIC_SMEM

# generated code includes no header (codegen_cuda declares its 16-bit types), so NVRTC needs no -I
_NVRTC_OPTIONS = ("-std=c++17",)


def compile_ptx(source: str, arch: str = "sm_90", name: str = "kernel.cu") -> str:
    """CUDA C++ -> PTX with NVRTC (no GPU needed).  Raises RuntimeError with NVRTC's log."""
    from cupy_backends.cuda.libs import nvrtc
    prog = nvrtc.createProgram(source, name, [], [])
    try:
        opts = [f"--gpu-architecture=compute_{arch.removeprefix('sm_')}", *_NVRTC_OPTIONS]   # sm_90a -> compute_90a
        try:
            nvrtc.compileProgram(prog, opts)
        except nvrtc.NVRTCError as e:
            log = nvrtc.getProgramLog(prog)
            raise RuntimeError(f"NVRTC failed to compile the generated code: {e}\n{log}\n--- source ---\n{source}") from None
        ptx = nvrtc.getPTX(prog)
        return ptx.decode() if isinstance(ptx, bytes) else ptx
    finally:
        nvrtc.destroyProgram(prog)


_gpu_state = None


def gpu_available() -> bool:
    """True when cupy imports and sees at least one CUDA device."""
    global _gpu_state
    if _gpu_state is None:
        try:
            import cupy
            _gpu_state = cupy.cuda.runtime.getDeviceCount() > 0
        except Exception:
            _gpu_state = False
    return _gpu_state


def current_arch() -> str:
    import cupy
    return "sm_" + cupy.cuda.Device().compute_capability


def current_device() -> int:
    import cupy
    return cupy.cuda.runtime.getDevice()


_libcuda = None


def libcuda():
    global _libcuda
    if _libcuda is None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuLaunchKernel.restype = ctypes.c_int
        lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _libcuda = lib
    return _libcuda


def error_string(code: int) -> str:
    s = ctypes.c_char_p()
    libcuda().cuGetErrorString(code, ctypes.byref(s))
    return (s.value or b"unknown").decode()


class GPUKernel:
    """A loaded kernel with its prebuilt parameter buffer.  ``slots``: each parameter's first 8-byte slot;
    ``arch_specific``: compiled for sm_90a (wgmma, setmaxnreg), which cupy's arch selection cannot name, so NVRTC
    makes the cubin here and the driver loads it."""

    def __init__(self, source: str, name: str, fmt_size: int, slots, dynamic_smem: int = 0,
                 arch_specific: bool = False):
        import cupy
        from cupy.cuda import driver
        t0 = time.perf_counter()
        if arch_specific:
            self.module = cupy.cuda.function.Module()
            self.module.load(compile_cubin(source, current_arch() + "a"))
            self.func = self.module.get_function(name)
        else:
            self.module = cupy.RawModule(code=source, options=_NVRTC_OPTIONS)
            self.func = self.module.get_function(name).kernel   # loads the module now
        self.handle = ctypes.c_void_p(self.func.ptr)
        if dynamic_smem > MAX_STATIC_SMEM:   # above 48 KiB the driver wants the kernel's opt-in first
            driver.funcSetAttribute(self.func.ptr, driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_smem)
        self.compile_seconds = time.perf_counter() - t0
        self.buf = ctypes.create_string_buffer(max(8, fmt_size))
        base = ctypes.addressof(self.buf)
        self.params = (ctypes.c_void_p * max(1, len(slots)))(*[base + 8 * k for k in slots])
        self.params_ptr = ctypes.cast(self.params, ctypes.c_void_p)
        self.launch_fn = libcuda().cuLaunchKernel

    def attributes(self) -> dict:
        from cupy.cuda import driver
        get = lambda a: driver.funcGetAttribute(a, self.func.ptr)   # noqa: E731
        return {"registers": get(driver.CU_FUNC_ATTRIBUTE_NUM_REGS),
                "shared_bytes": get(driver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
                "local_bytes": get(driver.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
                "max_threads_per_block": get(driver.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)}


def compile_cubin(source: str, arch: str, name: str = "kernel.cu") -> bytes:
    """CUDA C++ -> a cubin for ``arch`` (e.g. 'sm_90a') with NVRTC.  Raises RuntimeError with NVRTC's log."""
    from cupy_backends.cuda.libs import nvrtc
    prog = nvrtc.createProgram(source, name, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, [f"--gpu-architecture={arch}", *_NVRTC_OPTIONS])
        except nvrtc.NVRTCError as e:
            raise RuntimeError(f"NVRTC failed to compile the generated code: {e}\n{nvrtc.getProgramLog(prog)}\n"
                               f"--- source ---\n{source}") from None
        return nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)


def stream_handle(stream):
    """None -> the legacy default stream; an int handle; or an object with .ptr / __cuda_stream__."""
    if stream is None:
        return None
    if type(stream) is int:
        return ctypes.c_void_p(stream)
    if hasattr(stream, "__cuda_stream__"):
        return ctypes.c_void_p(stream.__cuda_stream__()[1])
    ptr = getattr(stream, "ptr", None)
    if ptr is None:
        ptr = getattr(stream, "cuda_stream", None)
    if type(ptr) is not int:
        raise TypeError(f"Expected a CUDA stream (int handle, cupy/torch stream), but got {type(stream).__name__}.")
    return ctypes.c_void_p(ptr)


def disk_cache_dir() -> str:
    return os.environ.get("CUPY_CACHE_DIR", os.path.expanduser("~/.cupy/kernel_cache"))
