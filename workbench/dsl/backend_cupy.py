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


# generated code includes no header (codegen_cuda declares its 16-bit types), so NVRTC needs no -I
_NVRTC_OPTIONS = ("-std=c++17",)


def compile_ptx(source: str, arch: str = "sm_90", name: str = "kernel.cu") -> str:
    """CUDA C++ -> PTX with NVRTC (no GPU needed).  Raises RuntimeError with NVRTC's log."""
    from cupy_backends.cuda.libs import nvrtc
    prog = nvrtc.createProgram(source, name, [], [])
    try:
        opts = [f"--gpu-architecture=compute_{arch.removeprefix('sm_')}", *_NVRTC_OPTIONS]
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
    """A loaded kernel with its prebuilt parameter buffer."""

    def __init__(self, source: str, name: str, fmt_size: int, nparams: int, dynamic_smem: int = 0):
        import cupy
        t0 = time.perf_counter()
        self.module = cupy.RawModule(code=source, options=_NVRTC_OPTIONS)
        self.raw = self.module.get_function(name)
        self.handle = ctypes.c_void_p(self.raw.kernel.ptr)   # loads the module now
        if dynamic_smem > 48 * 1024:   # above 48 KiB the driver wants the kernel's opt-in first
            self.raw.max_dynamic_shared_size_bytes = dynamic_smem
        self.compile_seconds = time.perf_counter() - t0
        self.buf = ctypes.create_string_buffer(max(8, fmt_size))
        base = ctypes.addressof(self.buf)
        self.params = (ctypes.c_void_p * max(1, nparams))(*[base + 8 * i for i in range(nparams)])
        self.params_ptr = ctypes.cast(self.params, ctypes.c_void_p)
        self.launch_fn = libcuda().cuLaunchKernel

    def attributes(self) -> dict:
        return {"registers": self.raw.num_regs, "shared_bytes": self.raw.shared_size_bytes,
                "local_bytes": self.raw.local_size_bytes, "max_threads_per_block": self.raw.max_threads_per_block}


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
