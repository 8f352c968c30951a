"""``@wb.kernel``: specialization, argument validation and launch.

A call first tries the fast guards of the kernel's specializations (generated Python that checks
each argument's type, element type, memory space, alignment, static layout values and dynamic
markers, then packs the parameter values); the first that accepts launches.  Otherwise the slow
path converts framework tensors, builds the signature key, lowers and compiles a new
specialization if needed, and raises with a message naming the argument when no kernel can
accept the arguments (a read-only tensor that the kernel writes, mixed host/device memory...).
Nothing runs on arguments that the guard has not accepted.
"""

from __future__ import annotations

import ctypes
import operator
import struct
import threading

from ..._element_types import Boolean
from ..._tensor import Pointer, Tensor
from ...dlpack.dtypes import PACKED
from ...dlpack.importer import PRODUCERS_FOR_C
from ...layout import offset_span
from .. import captures, ir
from ..backends.cpu import CompiledCPU, check_shared_memory, pointer_extent
from ..backends.cuda import generate
from ..frontend import FunctionSource, Lowering
from . import _launch, cache, limits
from . import args as A
from . import cupy as backend_cupy

_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


def _dim3(v, what):
    if type(v) is int:
        v = (v,)
    try:
        v = tuple(operator.index(x) for x in v)
    except TypeError:
        raise TypeError(f"Expected the {what} as an int or a tuple of 1 to 3 ints, but got {v!r}.") from None
    if not 1 <= len(v) <= 3 or any(x < 1 for x in v):
        raise ValueError(f"Expected the {what} as 1 to 3 positive ints, but got {v!r}.")
    return v + (1,) * (3 - len(v))


class Specialization:
    """One compiled kernel: a signature, its IR, and (lazily) its CUDA and CPU forms."""

    def __init__(self, kernel, key, specs, target):
        self.kernel, self.key, self.specs, self.target = kernel, key, specs, target
        src = kernel.source
        env, params = A.bind(src.params, specs, src.constexpr)
        low = Lowering(src, env, params, kernel.__name__, kernel.launch_bounds, kernel.cluster)
        self.ir = low.run()
        self.captures = tuple(low.captured.values())   # the globals/closures it compiled in (captures.py)
        self.params = self.ir.params
        self.fmt = A.pack_format(self.params)
        # each parameter's first 8-byte slot in the buffer (a TMA descriptor takes 16)
        self.slots = [struct.calcsize(A.pack_format(self.params[:k])) // 8 for k in range(len(self.params))]
        self.size = struct.calcsize(self.fmt)
        self.written = frozenset(self.ir.written_args)
        self.cuda_source = generate(self.ir, header=self.describe())
        self._cpu = None
        self.gpu = None
        self.arg_specs = self._arg_specs()
        self._gos: dict = {}

    def describe(self) -> str:
        names = self.kernel.source.params
        sig = ", ".join(f"{n}: {s}" for n, s in zip(names, self.specs))
        return f"{self.kernel.__name__}({sig}) [{self.target}]"

    __str__ = describe

    def __repr__(self):
        return f"<Specialization {self.describe()}>"

    @property
    def cpu(self) -> CompiledCPU:
        if self._cpu is None:
            self._cpu = CompiledCPU(self.ir)
        return self._cpu

    @property
    def python_source(self) -> str:
        return self.cpu.source

    def load_gpu(self):
        if self.gpu is None:
            _DEVICE[0] = backend_cupy.current_device()
            arch = backend_cupy.current_arch()
            want = f"sm_{self.ir.min_arch}"      # sm_90a (wgmma...) or sm_100a (tcgen05) code runs on that arch only
            if self.ir.arch_specific and arch != want:
                what = "an SM90 GPU (H100/H200)" if want == "sm_90" else "an SM100 GPU (B200/GB200)"
                raise ValueError(f"Expected {what} for {self.kernel.__name__}: it uses "
                                 f"{self.ir.min_arch_reason}, compiled for {want}a, which only compute capability "
                                 f"{self.ir.min_arch // 10}.{self.ir.min_arch % 10} runs; the device is {arch}.")
            if self.ir.min_arch and int(arch.removeprefix("sm_")) < self.ir.min_arch:
                raise ValueError(f"Expected a GPU of compute capability {self.ir.min_arch} or newer for "
                                 f"{self.kernel.__name__} (it uses {self.ir.min_arch_reason}), but the device is {arch}.")
            self.gpu = backend_cupy.GPUKernel(self.cuda_source, self.ir.name, self.size, self.slots,
                                              self.ir.dynamic_smem, self.ir.arch_specific)
            self.arg_specs = self._arg_specs()   # device tensors are checked against the device loaded on
            self._gos.clear()
            st = self.kernel.stats
            st.gpu_compiles += 1
            st.compile_seconds += self.gpu.compile_seconds
        return self.gpu

    # -- the guard: one argument spec, read by the C launcher for every use ----------------------
    def _arg_specs(self):
        """Per-argument spec tuples for workbench.dsl.runtime._launch (its header lists the layouts).  The
        same specs guard and pack the hot path, launches with a stream, the slow path and the CPU
        executor's values: there is no second guard to drift from this one."""
        slots: dict = {}
        for k, p in enumerate(self.params):
            slots.setdefault(p.source[1], []).append((k, p))
        out = []
        for i, s in enumerate(self.specs):
            kind = type(s)
            mine = slots.get(i, [])
            if kind is A.ConstSpec:
                out.append((K.CONSTEXPR, s.value, s.key[1], A.const_key))
            elif kind is A.TmaSpec:
                from ..ops.tma import TmaLoad
                out.append((K.TMA, self.slots[mine[0][0]], TmaLoad, s.key))
            elif kind is A.PointerSpec:
                out.append((K.POINTER, self.slots[mine[0][0]], s.etype, s.memspace, s.align, i in self.written))
            elif kind is A.ScalarSpec:
                slot = self.slots[mine[0][0]]
                code = {ir.Int32: K.INT32, ir.Int64: K.INT64, ir.Float32: K.FLOAT32, Boolean: K.BOOL}.get(s.etype)
                np_kind = _launch.NUMPY_KINDS.get(s.etype.name)
                if code is not None and np_kind is None:
                    out.append((code, slot))
                elif code is None:
                    out.append((K.NUMPY_SCALAR, slot, type(_np_scalar(s.etype)), np_kind))
                else:   # a Python scalar or the numpy scalar of the same dtype (np.float32(2) is a Float32)
                    out.append((K.EITHER, (code, slot), (K.NUMPY_SCALAR, slot, type(_np_scalar(s.etype)), np_kind)))
            else:
                ptr = self.slots[[k for k, p in mine if p.source[0] == "ptr"][0]]
                dyn = tuple((self.slots[k], 2 if p.source[0] == "shape" else 3, p.source[2], p.etype is ir.Int64)
                            for k, p in mine if p.source[0] in ("shape", "stride"))
                e = s.etype
                packed = _PACKED_OF.get(e, -1)   # -1: no framework tensor carries it (only wb.Tensors match)
                out.append((K.TENSOR, ptr, e, s.memspace == "gmem", s.align, i in self.written, _DEVICE[0], s.shape, s.stride,
                            dyn, packed, e.natural_align))
        return tuple(out)

    def values(self, args):
        """The parameter values these arguments give, or None when the guard refuses them."""
        raw = _launch.pack(self.arg_specs, tuple(args))
        return None if raw is None else struct.unpack_from(self.fmt, raw)

    def pack(self, args, buf) -> bool:
        """Guard and pack into a parameter buffer; False when the guard refuses."""
        raw = _launch.pack(self.arg_specs, tuple(args))
        if raw is None:
            return False
        ctypes.memmove(buf, raw, len(raw))
        return True

    def check_block(self, block):
        """Raise unless the block has the threads the kernel's tiled MMAs and copies partition (and no more than its
        launch bounds)."""
        need = self.ir.block_threads
        n = block[0] * block[1] * block[2]
        bounds = self.ir.launch_bounds
        if bounds and n > bounds[0]:
            raise ValueError(f"Expected blocks of at most {bounds[0]} threads for {self.kernel.__name__} (its "
                             f"launch_bounds), but the launch has block {tuple(block)}.")
        if need and need[2]:
            if n < need[0] or n % 128:
                raise ValueError(f"Expected blocks of at least {need[0]} threads, in whole warpgroups (128), for "
                                 f"{self.kernel.__name__}: it partitions by {need[1]}, but the launch has block {tuple(block)}.")
        elif need and n != need[0]:
            raise ValueError(f"Expected blocks of {need[0]} threads for {self.kernel.__name__}: it partitions by "
                             f"{need[1]}, which has {need[0]} threads, but the launch has block {tuple(block)}.")

    def check_grid(self, grid):
        """Raise unless the grid is a whole number of the kernel's clusters."""
        c = self.ir.cluster
        if any(g % x for g, x in zip(grid, c)):
            raise ValueError(f"Expected a grid that is a multiple of the cluster {c} of {self.kernel.__name__}, but "
                             f"got grid {tuple(grid)}.")

    def go_for(self, grid6):
        """The hot path for one launch configuration: guard, pack and cuLaunchKernel in one C call,
        grid and block fixed.  Returns None when the arguments do not match this specialization."""
        f = self._gos.get(grid6)
        if f is None and self.gpu is not None:
            self.check_block(grid6[3:])
            g = self.gpu
            f = self._gos[grid6] = _launch.Launcher(
                ctypes.cast(g.launch_fn, ctypes.c_void_p).value, g.handle.value, tuple(grid6), self.ir.dynamic_smem,
                ctypes.addressof(g.params), ctypes.addressof(g.buf), ctypes.sizeof(g.buf), self.arg_specs, g)
        return f

    # -- running ---------------------------------------------------------------------------------
    def extents(self, args):
        """Element ranges [lo, hi) each pointer parameter may touch (for the CPU executor's views)."""
        ext = {}
        for p in self.params:
            if p.kind == "tma":   # the CPU executor's TMA reads the descriptor's tensor itself
                ext[p.name] = args[p.arg_index]
                continue
            if p.kind != "ptr":
                continue
            a = args[p.arg_index]
            if type(a) is Pointer:   # a bare address: bounded by the host buffer the caller declared
                ext[p.name] = pointer_extent(p, a)
                continue
            span = offset_span(a.layout)
            if span is None:
                ext[p.name] = (0, 0)
                continue
            lo, hi = span
            if a._f[0] is None and a.memspace == "generic":
                # a tensor made over a bare host address (wb.make_tensor(wb.make_ptr(...), layout)) owns no
                # memory: like a raw pointer it must lie inside a buffer declared with host_buffers(...)
                plo, phi = pointer_extent(p, a.iterator)
                if lo < plo or hi >= phi:
                    raise ValueError(f"Expected tensor argument '{p.name}' ({a}) to stay inside its declared host "
                                     f"buffer (elements {plo}..{phi - 1} around its address), but its layout reaches "
                                     f"{lo}..{hi}.")
            ext[p.name] = (lo, hi + 1)
        return ext


_PACKED_OF = {e: p for p, e in PACKED.items()}
K = A.SpecKind
_DEVICE = [0]   # the CUDA device the launchers check tensors against (set when the GPU is first used)
_launch.set_types(Tensor, Pointer, PRODUCERS_FOR_C)


def _describe_args(args) -> str:
    return "(" + ", ".join(str(a) if type(a) in (Tensor, Pointer) else repr(a) for a in args) + ")"


def _np_scalar(t):
    import numpy as np
    return np.dtype(t.numpy).type(0)


class _Launcher:
    """``kern[grid, block]``: holds the hot-path functions of the kernel's GPU specializations for
    this launch configuration (rebuilt when a specialization is added)."""

    __slots__ = ("k", "grid", "block", "g", "gos", "ver")

    def __init__(self, k, grid, block):
        self.k, self.grid, self.block, self.g = k, grid, block, grid + block
        self.gos, self.ver = (), -1

    def __call__(self, *args):
        k = self.k
        if k._watch and k._captures_changed():   # empty unless the kernel captured user state
            k._revalidate()
        if self.ver != k._hot_ver:               # a specialization added or dropped (LRU, a changed capture)
            self.gos, self.ver = tuple(sp.go_for(self.g) for sp in k._hot), k._hot_ver
        # framework tensors go straight in: the C guard reads them (torch through its exchange API)
        for go in self.gos:
            rc = go(*args)
            if rc is not None:
                if rc:
                    raise RuntimeError(f"cuLaunchKernel failed for {k.__name__}: {backend_cupy.error_string(rc)} ({rc})")
                return None
        return k._launch(self.grid, self.block, 0, None, args)


class Kernel:
    """A ``@wb.kernel`` function: launch with ``kern[grid, block](*args)``."""
    _wb_device_function = True   # the frontend inlines calls to it (recognized by this marker, no import)

    def __init__(self, fn, launch_bounds=None, cluster=(1, 1, 1)):
        self.fn = fn
        self.launch_bounds = launch_bounds
        self.cluster = cluster
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.source = FunctionSource(fn)
        self._specs: dict = {}
        self._hot: list = []        # GPU specializations, most recently added first
        self._hot_ver = 0
        self._launchers: dict = {}
        self.stats = cache.Stats()
        self._arch = None
        self._watch = ()                # the captures of the kept specializations (captures.py)
        self._lock = threading.RLock()  # guards _specs, _hot and _watch; launches read them without it
        cache.register(self)

    def __repr__(self):
        return f"<wb.kernel {self.__name__}: {len(self._specs)} specialization(s)>"

    def __call__(self, *args, **kw):
        raise TypeError(f"Launch a kernel with {self.__name__}[grid, block](*args) or {self.__name__}.launch(...); "
                        "call it directly only from another kernel (as a device function).")

    @property
    def specializations(self) -> list:
        with self._lock:
            return list(self._specs.values())

    # -- captured globals and closures (captures.py): re-specialize when one changed ---------------
    def _captures_changed(self) -> bool:
        for c in self._watch:
            if c.current() is not c.value:
                return True
        return False

    def _revalidate(self):
        """Drop the specializations whose captured values changed (an equal value rebound is kept)."""
        with self._lock:
            for key, sp in list(self._specs.items()):
                for c in sp.captures:
                    cur = c.current()
                    if captures.same(c.value, cur, A.const_key):
                        c.value = cur
                    else:
                        self._drop(key)
                        break
            self._rewatch()

    def _rewatch(self):
        self._watch = tuple(c for sp in self._specs.values() for c in sp.captures)

    def __getitem__(self, gb):
        try:
            return self._launchers[gb]
        except (KeyError, TypeError):
            pass
        if type(gb) is not tuple or len(gb) != 2:
            raise TypeError(f"Expected kern[grid, block], but got kern[{gb!r}].")
        ln = _Launcher(self, _dim3(gb[0], "grid"), _dim3(gb[1], "block"))
        try:
            if len(self._launchers) < 64:
                self._launchers[gb] = ln
        except TypeError:
            pass
        return ln

    def launch(self, *args, grid, block, smem=0, stream=None, backend=None):
        """Launch on a grid of blocks.  backend: None (by where the tensors live), 'cuda' or 'cpu'."""
        grid, block = _dim3(grid, "grid"), _dim3(block, "block")
        if backend is not None:
            return self._slow(grid, block, smem, stream, args, backend)
        return self._launch(grid, block, smem, stream, args)

    # -- dispatch --------------------------------------------------------------------------------
    def _launch(self, grid, block, smem, stream, args):
        if self._watch and self._captures_changed():
            self._revalidate()
        for sp in self._hot:
            if sp.pack(args, sp.gpu.buf):
                return self._go(sp, grid, block, smem, stream)
        return self._slow(grid, block, smem, stream, args, None)

    def _go(self, sp, grid, block, smem, stream):
        """Launch the GPU specialization sp, its parameters packed.  The shared memory is checked first, by the CPU
        executor's check (the driver would take a negative smem as a huge unsigned one, ctypes refuse 2**40)."""
        dyn = sp.ir.dynamic_smem
        smem = check_shared_memory(sp.ir.shared_bytes - dyn, smem, dyn)
        g = sp.gpu
        rc = g.launch_fn(g.handle, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem,
                         backend_cupy.stream_handle(stream), g.params_ptr, None)
        if rc:
            raise RuntimeError(f"cuLaunchKernel failed for {self.__name__}: {backend_cupy.error_string(rc)} ({rc})")
        return None

    def specialize(self, args, target=None) -> Specialization:
        """The specialization these arguments select (lowered now if new); no launch."""
        nargs, spec, _ = self._select(args, target)
        return spec

    def _select(self, args, backend):
        names = self.source.params
        if len(args) != len(names):
            raise TypeError(f"Expected {len(names)} arguments for {self.__name__}({', '.join(names)}), but got {len(args)}.")
        nargs = tuple(A.normalize(a) for a in args)
        specs = [A.spec_of(a, n in self.source.constexpr, n) for a, n in zip(nargs, names)]
        spaces = {s.memspace for s in specs if type(s) in (A.TensorSpec, A.PointerSpec, A.TmaSpec)}
        if len(spaces) > 1:
            detail = ", ".join(f"{n}: {s.memspace}" for n, s in zip(names, specs)
                               if type(s) in (A.TensorSpec, A.PointerSpec, A.TmaSpec))
            raise ValueError(f"Expected all tensor and pointer arguments of {self.__name__} in one memory space, but got {detail}.")
        space = spaces.pop() if spaces else None
        if backend is None:
            backend = "cpu" if space == "generic" or (space is None and not backend_cupy.gpu_available()) else "cuda"
        if backend == "cpu" and space == "gmem":
            raise ValueError(f"Expected host tensors for the CPU executor, but {self.__name__} got device (gmem) memory.")
        if backend == "cuda" and space == "generic":
            raise ValueError(f"Expected CUDA device tensors to launch {self.__name__} on the GPU, but got host (generic) memory; "
                             "host tensors run on the CPU executor.")
        if backend == "cpu":
            target = "cpu"
        elif backend == "cuda":
            if self._arch is None:
                self._arch = backend_cupy.current_arch() if backend_cupy.gpu_available() else "sm_90"
            target = self._arch
        else:
            raise ValueError(f"Expected backend None, 'cuda' or 'cpu', but got {backend!r}.")
        key = (tuple(s.key for s in specs), target)
        with self._lock:
            if self._watch and self._captures_changed():
                self._revalidate()
            sp = self._specs.pop(key, None)
            if sp is None:
                sp = Specialization(self, key, specs, target)
                self.stats.lowerings += 1
            self._specs[key] = sp          # the most recently selected last: a bounded LRU cache
            while len(self._specs) > limits.MAX_SPECIALIZATIONS:
                self._drop(next(iter(self._specs)))
            self._rewatch()
        from ..ops.tma import TmaLoad  # (the op modules import the runtime)
        for i in sp.written:
            a = nargs[i]
            if (type(a) is Tensor or type(a) is Pointer or type(a) is TmaLoad) and a.read_only:  # .iterator too
                raise ValueError(f"Expected a writable tensor for argument '{names[i]}' of {self.__name__} (the kernel writes it), "
                                 "but got a read-only tensor (DLPack READ_ONLY flag).")
        return nargs, sp, target

    def _drop(self, key):
        """Forget a specialization (the LRU bound, a stale capture): its hot launchers go with it."""
        sp = self._specs.pop(key)
        if sp in self._hot:    # replaced, not mutated: launches iterate it without the lock
            self._hot = [h for h in self._hot if h is not sp]
            self._hot_ver += 1

    def _slow(self, grid, block, smem, stream, args, backend):
        self.stats.slow_dispatches += 1
        nargs, sp, target = self._select(args, backend)
        if block[0] * block[1] * block[2] > 1024:
            raise ValueError(f"Expected at most 1024 threads per block, but got {block}.")
        sp.check_block(block)
        sp.check_grid(grid)
        vals = sp.values(nargs)
        if vals is None:
            raise ValueError(f"Expected arguments of {self.__name__} that fit the parameter types of {sp.describe()}, "
                             f"but the guard refused {_describe_args(nargs)} (e.g. a float beyond Float32's range).")
        if target == "cpu":
            sp.cpu.run(grid, block, vals, sp.extents(nargs), smem)
            return None
        g = sp.load_gpu()
        with self._lock:
            if sp not in self._hot and self._specs.get(sp.key) is sp:
                self._hot = [sp] + self._hot
                self._hot_ver += 1
        if any(type(a) is Tensor and a.memspace == "gmem" and a.device[1] != backend_cupy.current_device() for a in nargs):
            raise ValueError(f"Expected tensors on the current CUDA device {backend_cupy.current_device()} for {self.__name__}.")
        if not sp.pack(nargs, g.buf):
            raise ValueError(f"The arguments of {self.__name__} were refused by the guard of {sp.describe()}.")
        return self._go(sp, grid, block, smem, stream)


def kernel(fn=None, *, launch_bounds=None, cluster=None):
    """Decorator: make a Python function a GPU kernel (and a device function other kernels may call).

    ``@wb.kernel(launch_bounds=384)`` or ``(384, 1)``: CUDA's ``__launch_bounds__(max threads, min blocks per SM)``;
    launches with more threads are refused.  ptxas budgets registers from it, and a kernel that moves registers
    between warpgroups (``wb.warpgroup_reg_alloc``, setmaxnreg) needs it.

    ``@wb.kernel(cluster=(2, 1, 1))``: thread-block clusters (SM90, ``__cluster_dims__``): the blocks of a cluster
    run at once on neighbouring SMs and reach each other's shared memory (``wb.block_rank_in_cluster``,
    ``wb.cluster_sync``, ``wb.mbarrier_arrive(..., cta=r)``, ``wb.tma_load(..., multicast=mask)``); the grid must
    be a multiple of it.  The CPU executor runs a cluster's blocks together."""
    bounds = _launch_bounds(launch_bounds)
    dims = _cluster_dims(cluster)
    if fn is None:
        return lambda f: kernel(f, launch_bounds=launch_bounds, cluster=cluster)
    if isinstance(fn, Kernel):
        if (bounds is not None and fn.launch_bounds != bounds) or (cluster is not None and fn.cluster != dims):
            raise ValueError(f"{fn.__name__} is already a kernel with launch_bounds {fn.launch_bounds} and cluster "
                             f"{fn.cluster}.")
        return fn
    if not callable(fn):
        raise TypeError(f"Expected a function to decorate with @wb.kernel, but got {type(fn).__name__}.")
    return Kernel(fn, bounds, dims)


MAX_CLUSTER_BLOCKS = 8    # the portable cluster size (16 needs a non-portable opt-in)


def _cluster_dims(v):
    if v is None:
        return (1, 1, 1)
    t = (v,) if type(v) is int else v
    if type(t) is tuple and 1 <= len(t) <= 3 and all(type(x) is int and x >= 1 for x in t):
        t = t + (1,) * (3 - len(t))
        if t[0] * t[1] * t[2] <= MAX_CLUSTER_BLOCKS:
            return t
    raise ValueError(f"Expected cluster as 1 to 3 positive ints of at most {MAX_CLUSTER_BLOCKS} blocks in all (the "
                     f"portable cluster size), but got {v!r}.")


def _launch_bounds(v):
    if v is None:
        return None
    t = (v, 1) if type(v) is int else v
    if (type(t) is not tuple or len(t) != 2 or any(type(x) is not int for x in t) or not 1 <= t[0] <= 1024
            or not 1 <= t[1] <= 32):
        raise ValueError(f"Expected launch_bounds as max threads (1 to 1024) or (max threads, min blocks per SM 1 to "
                         f"32), but got {v!r}.")
    return t


def show_code(k: Kernel, *args, target: str | None = None) -> str:
    """The CUDA C++ that launching ``k`` with these arguments compiles (no GPU needed)."""
    if not isinstance(k, Kernel):
        raise TypeError(f"Expected a @wb.kernel function, but got {type(k).__name__}.")
    nargs = tuple(A.normalize(a) for a in args)
    spaces = {getattr(a, "memspace", None) for a in nargs} - {None}
    backend = "cpu" if spaces == {"generic"} else ("cuda" if spaces else None)
    if backend is None:
        backend = "cuda" if backend_cupy.gpu_available() else "cpu"
    _, sp, _ = k._select(args, backend)
    return sp.cuda_source

