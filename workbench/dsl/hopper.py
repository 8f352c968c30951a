"""Hopper in kernels: TMA boxes, mbarriers and warpgroup MMAs (``wgmma``), on the GPU and on the CPU executor.

Host side, :func:`make_tma_load` turns a tensor and the shared layout of one box into a :class:`TmaLoad`: the
box proven against the layout (``workbench.atoms.tma``) and, for a device tensor, the 128-byte descriptor the
driver encodes (``cuTensorMapEncodeTiled``), passed to the kernel as a ``__grid_constant__`` parameter.

In kernels (CuTe DSL's ``cute.arch`` names where it has them):

* ``wb.mbarrier_init(bars, i, count)``, ``wb.mbarrier_init_fence()``, ``wb.mbarrier_arrive(bars, i)``,
  ``wb.mbarrier_arrive_and_expect_tx(bars, i, nbytes)``, ``wb.mbarrier_wait(bars, i, phase)``: the mbarrier
  ``bars[i]`` of a shared ``Uint64`` tensor;
* ``wb.tma_load(tma, dst, coords, bars, i)``: one box at element coordinates ``coords`` (the tensor's modes) into
  the shared tile ``dst``, completing its bytes on ``bars[i]``; ``wb.tma_store(tma, src, coords)`` with
  ``wb.tma_store_commit_group()`` / ``wb.tma_store_wait_group(n)``, after ``wb.fence_proxy_async()``;
* ``wb.gemm(tiled_mma, acc, a, b, acc)`` with an SM90 ``SS`` atom (``atoms_in_kernels.gemm`` sends it here): a
  and b are the shared tiles ``thr_mma.partition_A/B`` gives; each atom call is one ``wgmma.mma_async`` whose
  descriptors (``workbench.atoms.gmma_desc``) are proven against those tiles while tracing;
  ``wb.warpgroup_fence()``, ``wb.warpgroup_commit_group()``, ``wb.warpgroup_wait_group(n)``;
  ``wb.warpgroup_reg_alloc(n)`` / ``wb.warpgroup_reg_dealloc(n)`` (``setmaxnreg``).

The CPU executor runs the same statements: a TMA load copies its box at once (zeros outside the tensor) and
completes its bytes on the mbarrier, an mbarrier is a counter of arrivals and bytes whose waiters spin (a wait
that can never complete is reported, not hung), and a ``wgmma`` gathers the warpgroup's accumulators through
``tv_layout_C`` and reads A and B through the descriptors' own addressing.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .. import _element_types as et
from ..atoms.gmma_desc import make_gmma_desc
from ..atoms.mma import MMAAtom
from ..atoms.tma import TmaBox, make_tma_box
from ..layout import ComposedLayout, Layout, Swizzle, divisibility_of
from ..layout.values import value_of
from . import atoms_in_kernels as _aik
from . import ir
from .builtins import builtin
from .views import KTensor

__all__ = ["TmaLoad", "make_tma_load", "KTma", "tma_load", "tma_store", "tma_store_commit_group",
           "tma_store_wait_group", "mbarrier_init", "mbarrier_init_fence", "mbarrier_arrive",
           "mbarrier_arrive_and_expect_tx", "mbarrier_wait", "warpgroup_fence", "warpgroup_commit_group",
           "warpgroup_wait_group", "warpgroup_reg_alloc", "warpgroup_reg_dealloc", "fence_proxy_async",
           "block_rank_in_cluster", "cluster_sync",
           "gemm_gmma", "emulate_wgmma", "tma_box_copy", "tma_extent"]

# cuTensorMapEncodeTiled's CUtensorMapDataType, by element type (TMA only moves bits: fp8 as bytes)
_TMA_DTYPE = {et.Uint8: 0, et.Int8: 0, et.Float8E4M3FN: 0, et.Float8E5M2: 0, et.Uint16: 1, et.Int16: 1,
              et.Uint32: 2, et.Int32: 3, et.Uint64: 4, et.Int64: 5, et.Float16: 6, et.Float32: 7, et.TFloat32: 7,
              et.Float64: 8, et.BFloat16: 9}


class TmaLoad:
    """A TMA descriptor of ``tensor`` for boxes laid out in shared memory as ``smem_layout`` (CuTe DSL's
    ``make_tiled_tma_atom``): ``.box`` (:class:`~workbench.atoms.tma.TmaBox`), ``.nbytes`` a box, and, for a
    device tensor, ``.descriptor`` (the 128 bytes the kernel receives).  The tensor is kept alive with it."""

    __slots__ = ("tensor", "element_type", "shape", "stride", "address", "memspace", "box", "_desc", "_key")

    def __init__(self, tensor, smem_layout):
        from .._tensor import Tensor, from_dlpack
        t = tensor
        if type(t) is not Tensor and hasattr(t, "__dlpack__"):   # as kernel arguments are taken
            t = from_dlpack(t)
        if type(t) is not Tensor:
            raise TypeError(f"make_tma_load: expected a tensor (wb.Tensor or any __dlpack__ object), but got "
                            f"{type(tensor).__name__}.")
        e = t.element_type
        if e not in _TMA_DTYPE:
            raise TypeError(f"make_tma_load: TMA moves 8/16/32/64-bit elements, but the tensor holds {e}.")
        shape, stride = value_of(t.layout.shape), value_of(t.layout.stride)
        shape = shape if type(shape) is tuple else (shape,)
        stride = stride if type(stride) is tuple else (stride,)
        if any(type(x) is tuple for x in shape + stride):
            raise ValueError(f"make_tma_load: expected a flat tensor layout (rank <= 5), but got {t.layout}.")
        self.tensor, self.element_type, self.shape, self.stride = t, e, shape, stride
        self.address, self.memspace = t.iterator.address, t.memspace
        self.box = make_tma_box(shape, stride, e.bits, smem_layout)
        nb = e.bits // 8
        if self.address % 16:
            raise ValueError(f"make_tma_load: TMA needs a 16-byte aligned tensor, but its data starts at "
                             f"0x{self.address:x}.")
        for m in self.box.dims[1:]:
            if (stride[m] * nb) % 16 or not 0 < stride[m] * nb < 1 << 40:
                raise ValueError(f"make_tma_load: TMA strides are multiples of 16 bytes below 2**40, but mode {m} has "
                                 f"stride {stride[m]} ({stride[m] * nb} B); pad the rows (e.g. a multiple of "
                                 f"{16 // nb} elements).")
        for m, x in enumerate(shape):
            if not 0 < x < 1 << 32:
                raise ValueError(f"make_tma_load: TMA extents are 1 to 2**32 - 1, but mode {m} has {x}.")
        self._key = ("tma", e.name, self.box.dims, self.box.box, self.box.swizzle_bits, str(smem_layout),
                     self.memspace)
        self._desc = _encode(self) if self.memspace == "gmem" else None

    @property
    def nbytes(self) -> int:
        return self.box.nbytes

    @property
    def smem_layout(self):
        return self.box.smem_layout

    @property
    def descriptor(self) -> bytes | None:
        return self._desc

    def fields(self) -> dict:
        """What the descriptor encodes, in the driver's terms (dimension 0 innermost)."""
        nb = self.element_type.bits // 8
        d = self.box.dims
        return {"data_type": _TMA_DTYPE[self.element_type], "rank": len(d), "global_address": hex(self.address),
                "global_dim": [self.shape[m] for m in d], "global_strides_bytes": [self.stride[m] * nb for m in d[1:]],
                "box_dim": [self.box.box[m] for m in d], "element_strides": [1] * len(d),
                "swizzle": ("NONE", "32B", "64B", "128B")[self.box.swizzle_bits], "oob_fill": "zeros"}

    def __repr__(self):
        return f"TmaLoad({self.element_type} {self.shape}:{self.stride} -> {self.box})"


def make_tma_load(tensor, smem_layout) -> TmaLoad:
    """The TMA descriptor that loads boxes of ``tensor`` into shared tiles laid out as ``smem_layout`` (one box,
    CuTe mode order; e.g. ``wb.tile_to_shape(wb.gmma_smem_atom('Layout_K_SW128_Atom', wb.Float16), (128, 64))``).
    A kernel argument: ``wb.tma_load(tma, dst, coords, bars, i)`` inside.  The same object stores boxes
    (``wb.tma_store``)."""
    return TmaLoad(tensor, smem_layout)


def _encode(t: TmaLoad) -> bytes:
    from .runtime.cupy import error_string, libcuda
    lib = libcuda()
    d = t.box.dims
    nb = t.element_type.bits // 8
    r = len(d)
    dims = (ctypes.c_uint64 * r)(*[t.shape[m] for m in d])
    strides = (ctypes.c_uint64 * max(1, r - 1))(*[t.stride[m] * nb for m in d[1:]])
    box = (ctypes.c_uint32 * r)(*[t.box.box[m] for m in d])
    ones = (ctypes.c_uint32 * r)(*([1] * r))
    out = ctypes.create_string_buffer(128)
    f = lib.cuTensorMapEncodeTiled
    f.restype = ctypes.c_int
    rc = f(out, ctypes.c_int(_TMA_DTYPE[t.element_type]), ctypes.c_uint32(r), ctypes.c_void_p(t.address), dims,
           strides, box, ones, ctypes.c_int(0), ctypes.c_int(t.box.swizzle_bits), ctypes.c_int(2), ctypes.c_int(0))
    if rc:
        raise ValueError(f"make_tma_load: the driver refused the descriptor ({error_string(rc)}, {rc}) for {t.fields()}.")
    return out.raw


class KTma:
    """A TMA descriptor parameter inside a kernel: its IR parameter and the box it moves."""

    __slots__ = ("param", "box", "etype")

    def __init__(self, param, box: TmaBox, etype):
        self.param, self.box, self.etype = param, box, etype


# -- mbarriers ------------------------------------------------------------------------------------------
def _bar(bars, i, what):
    if type(bars) is not KTensor or bars.buf.space != "smem" or bars.etype.bits != 64:
        raise TypeError(f"{what}: expected the mbarriers as a shared tensor of wb.Uint64 (wb.shared_tensor(wb.Uint64, n)) "
                        f"and an index, but got {bars if type(bars) is KTensor else type(bars).__name__}.")
    n = bars.layout.size
    if type(i) is int and not 0 <= i < n:
        raise IndexError(f"{what}: mbarrier index {i} is outside the {n} mbarriers of {bars}.")
    return bars.buf, ir.as_expr(bars.offset_of(i))


def _static_or_expr(cx, v, what):
    cx.scalar(v, what)
    return ir.as_expr(v, ir.Int32)


@builtin
def mbarrier_init(cx, bars, i, count):
    """``mbarrier.init``: mbarrier ``bars[i]`` expects ``count`` arrivals a phase (one thread initializes it; then
    ``wb.mbarrier_init_fence()`` and ``wb.sync_threads()`` before any thread uses it)."""
    buf, off = _bar(bars, i, "mbarrier_init")
    if type(count) is int and not 1 <= count < 1 << 20:
        raise ValueError(f"mbarrier_init: expected an arrival count in [1, 2**20), but got {count}.")
    cx.require_arch(90, "mbarrier")
    cx.emit(ir.MbarInit(buf, off, _static_or_expr(cx, count, "an arrival count")))
    cx.mark_written(buf)
    _ledger(cx).clear()


@builtin
def mbarrier_init_fence(cx):
    """``fence.mbarrier_init``: make the initialized mbarriers visible to the other threads and to the TMA."""
    cx.emit(ir.AsyncOp("mbarrier_init_fence"))


@builtin
def mbarrier_arrive(cx, bars, i, cta=None):
    """One arrival of this thread at ``bars[i]``; with ``cta=r``, at the mbarrier in the same place of block r of the
    cluster (CuTe DSL's ``peer_cta_rank_in_cluster``: a consumer releasing a stage a peer's multicast fills)."""
    buf, off = _bar(bars, i, "mbarrier_arrive")
    cx.require_arch(90, "mbarrier")
    cx.uses_collectives()
    rank = None
    if cta is not None:
        rank = _cluster_rank(cx, cta, "mbarrier_arrive")
    cx.emit(ir.MbarArrive(buf, off, None, rank))


def _cluster_rank(cx, r, what):
    n = cx.cluster[0] * cx.cluster[1] * cx.cluster[2]
    cx.scalar(r, "a block rank in the cluster")
    if type(r) is int and not 0 <= r < n:
        raise ValueError(f"{what}: expected a block rank in the cluster, 0 to {n - 1}, but got {r}.")
    if n == 1:
        raise ValueError(f"{what}: the kernel has no cluster; declare one with @wb.kernel(cluster=(2, 1, 1)).")
    return ir.as_expr(ir.cast(r, ir.Int32) if isinstance(r, ir.Expr) else r, ir.Int32)


@builtin
def block_rank_in_cluster(cx):
    """This block's rank in its cluster (``%cluster_ctarank``, CuTe DSL's ``block_idx_in_cluster`` flattened):
    0 to cluster size - 1, x fastest."""
    return ir.Special("clusterCtaRank.x")


@builtin
def cluster_sync(cx):
    """``barrier.cluster.arrive`` + ``wait``: every thread of every block of the cluster meets here (after the
    mbarriers are initialized, before any block uses a peer's; and before a block exits while a peer may still
    reach its shared memory)."""
    if cx.cluster == (1, 1, 1):
        raise ValueError("cluster_sync: the kernel has no cluster; declare one with @wb.kernel(cluster=(2, 1, 1)).")
    cx.uses_sync = True
    cx.emit(ir.ClusterSync())


@builtin
def mbarrier_arrive_and_expect_tx(cx, bars, i, nbytes):
    """One arrival at ``bars[i]`` that also makes its phase wait for ``nbytes`` more bytes (the TMA loads issued on
    it next, by this thread, in this block of code: their boxes must add up to nbytes, checked while tracing)."""
    buf, off = _bar(bars, i, "mbarrier_arrive_and_expect_tx")
    if type(nbytes) is not int or not 0 < nbytes < 1 << 20:
        raise ValueError(f"mbarrier_arrive_and_expect_tx: expected a static byte count in [1, 2**20) (the TMA boxes' "
                         f"bytes: tma.nbytes), but got {nbytes!r}.")
    cx.require_arch(90, "mbarrier")
    cx.uses_collectives()
    _ledger(cx).open(cx, (buf.name, str(off)), nbytes)
    cx.emit(ir.MbarArrive(buf, off, nbytes))


@builtin
def mbarrier_wait(cx, bars, i, phase):
    """Wait until the phase of parity ``phase`` (0 or 1) of ``bars[i]`` has completed (every arrival and byte)."""
    buf, off = _bar(bars, i, "mbarrier_wait")
    if type(phase) is int and phase not in (0, 1):
        raise ValueError(f"mbarrier_wait: expected a phase parity 0 or 1, but got {phase}.")
    cx.require_arch(90, "mbarrier")
    cx.uses_collectives()
    cx.emit(ir.MbarWait(buf, off, ir.binop("&", _static_or_expr(cx, phase, "a phase parity"), 1)))


class _TxLedger:
    """The bytes an ``arrive_and_expect_tx`` announced and the TMA loads issued on that mbarrier after it, in the
    same block of code: they must match, or the phase never completes (a hang on the GPU)."""

    def __init__(self):
        self.open_tx: dict = {}     # (buffer, offset text) -> [announced, loaded, line, region]

    def clear(self):
        self.open_tx.clear()

    def open(self, cx, key, nbytes):
        self.close(cx, key)
        self.open_tx[key] = [nbytes, 0, getattr(cx.node, "lineno", 0), id(cx.out)]

    def load(self, cx, key, nbytes, what):
        e = self.open_tx.get(key)
        if e is None or e[3] != id(cx.out):
            raise ValueError(f"{what}: a TMA load completes its bytes on an mbarrier whose phase expects them: call "
                             f"wb.mbarrier_arrive_and_expect_tx on the same mbarrier (same index expression) just before, "
                             "in the same block of code.")
        e[1] += nbytes
        if e[1] > e[0]:
            raise ValueError(f"{what}: the TMA loads on this mbarrier move {e[1]} bytes, but arrive_and_expect_tx "
                             f"announced {e[0]}; announce the boxes' bytes (tma.nbytes each).")

    def close(self, cx, key=None):
        keys = [key] if key is not None else [k for k, e in self.open_tx.items() if e[3] == id(cx.out)]
        for k in keys:
            e = self.open_tx.pop(k, None)
            if e is not None and e[1] != e[0]:
                raise ValueError(f"mbarrier_arrive_and_expect_tx (line {e[2]}) announced {e[0]} bytes, but the TMA loads "
                                 f"on that mbarrier after it move {e[1]}: the phase would never complete (a hang on the "
                                 "GPU); announce exactly the boxes' bytes (tma.nbytes each).")


def _ledger(cx) -> _TxLedger:
    led = getattr(cx, "tx_ledger", None)
    if led is None:
        led = cx.tx_ledger = _TxLedger()
    return led


def close_tx_ledger(cx):
    """End of a block of code (the frontend calls it): every announcement in it must be matched."""
    led = getattr(cx, "tx_ledger", None)
    if led is not None:
        led.close(cx)


# -- TMA ------------------------------------------------------------------------------------------------
def _tma_tile(tma, t, what):
    """The element offset of shared tile t's aligned base, proven to be a box of tma's layout."""
    if type(tma) is not KTma:
        raise TypeError(f"{what}: expected a TMA descriptor parameter (a wb.make_tma_load(...) kernel argument), "
                        f"but got {type(tma).__name__}.")
    if type(t) is not KTensor or t.buf.space != "smem":
        raise TypeError(f"{what}: expected a shared tensor (one box), but got {t if type(t) is KTensor else type(t).__name__}.")
    if t.etype.bits != tma.etype.bits:
        raise TypeError(f"{what}: the descriptor moves {tma.etype} ({tma.etype.bits} bits), but the tile holds {t.etype}.")
    want = tma.box.smem_layout
    lay = t.layout
    inner_off = 0
    if type(lay) is ComposedLayout:
        inner_off = lay.offset
        if type(want) is not ComposedLayout or lay.inner != want.inner:
            raise ValueError(f"{what}: the tile {lay} is not laid out as the descriptor's box {want}.")
        lay = lay.outer
        want_outer = want.outer
    elif type(want) is ComposedLayout and want.inner.bits:
        raise ValueError(f"{what}: the descriptor swizzles ({want}), but the tile {lay} is not swizzled.")
    else:
        want_outer = want.outer if type(want) is ComposedLayout else want
    if type(lay) is not Layout or not lay.is_static or lay.size != want_outer.size or \
            not np.array_equal(lay.offsets(), want_outer.offsets()):
        raise ValueError(f"{what}: the tile {t.layout} is not laid out as the descriptor's box {want} (element by "
                         "element); slice one box of the shared tensor the descriptor was made for.")
    align = tma.box.alignment
    nb = t.etype.bits // 8
    base = ir.binop("+", t.offset, inner_off)
    for x in (t.offset, inner_off):
        d = divisibility_of(x) if x != 0 else 1 << 30
        if (d * nb) % align:
            raise ValueError(f"{what}: the TMA writes boxes at {align}-byte aligned shared addresses "
                             f"({'the swizzle repeats every ' + str(align) + ' bytes' if tma.box.swizzle_bits else 'TMA'}), "
                             f"but the tile's offset {x} is only known to be a multiple of {d * nb} bytes.")
    if t.buf.align < align:
        raise ValueError(f"{what}: the TMA needs a {align}-byte aligned shared buffer, but {t} is {t.buf.align}-byte "
                         "aligned; make the shared tensor with the box's swizzled layout (or at least 1 KiB).")
    return base


def _coords(cx, tma, coords, what):
    r = len(tma.box.box)
    if type(coords) is not tuple:
        coords = (coords,)
    if len(coords) != r:
        raise ValueError(f"{what}: expected {r} element coordinates (one per tensor mode) for the box origin, but got "
                         f"{len(coords)}.")
    out = []
    for c in coords:
        cx.scalar(c, "an element coordinate")
        if type(c) is int and not -(1 << 31) <= c < 1 << 31:
            raise ValueError(f"{what}: TMA coordinates are 32-bit, but got {c}.")
        out.append(ir.as_expr(ir.cast(c, ir.Int32) if isinstance(c, ir.Expr) else c, ir.Int32))
    return tuple(out[m] for m in tma.box.dims)


@builtin
def tma_load(cx, tma, dst, coords, bars, i, multicast=None):
    """One TMA box of the tensor at element coordinates ``coords`` (its modes' order; outside the tensor: zeros)
    into the shared tile ``dst``, asynchronously: its bytes complete on mbarrier ``bars[i]`` (announced by an
    ``mbarrier_arrive_and_expect_tx`` just before).  One thread issues it.

    ``multicast=mask`` (a static bit mask of block ranks in the cluster): the box lands at the same place in each of
    those blocks' shared memory and completes its bytes on each one's ``bars[i]``.  Every block of the cluster is
    taken to issue the same pattern (one slice of a shared operand each), so each block's mbarrier counts
    ``popcount(mask)`` such boxes: that is what ``arrive_and_expect_tx`` must announce for it."""
    what = "tma_load"
    base = _tma_tile(tma, dst, what)
    crd = _coords(cx, tma, coords, what)
    buf, off = _bar(bars, i, what)
    copies = 1
    if multicast is not None:
        n = cx.cluster[0] * cx.cluster[1] * cx.cluster[2]
        if type(multicast) is not int or not 0 < multicast < 1 << n:
            raise ValueError(f"{what}: expected multicast as a static bit mask of the cluster's {n} block ranks (1 to "
                             f"{(1 << n) - 1}), but got {multicast!r}" + ("; the kernel has no cluster: declare one with "
                                                                          "@wb.kernel(cluster=(2, 1, 1))." if n == 1 else "."))
        copies = bin(multicast).count("1")
    _ledger(cx).load(cx, (buf.name, str(off)), tma.box.nbytes * copies, what)
    cx.require_arch(90, "TMA (cp.async.bulk.tensor)")
    cx.emit(ir.TmaCopy(tma.param, tma.box, dst.buf, ir.as_expr(base), crd, buf, off, tma.box.nbytes, multicast))
    cx.mark_written(dst.buf)


@builtin
def tma_store(cx, tma, src, coords):
    """The shared tile ``src`` (one box) into the tensor at element coordinates ``coords`` (elements outside the
    tensor are not written), asynchronously: call ``wb.fence_proxy_async()`` and a barrier after the threads write
    ``src``; ``wb.tma_store_commit_group()`` / ``wb.tma_store_wait_group(n)`` before reusing it."""
    what = "tma_store"
    base = _tma_tile(tma, src, what)
    crd = _coords(cx, tma, coords, what)
    cx.require_arch(90, "TMA (cp.async.bulk.tensor)")
    cx.emit(ir.TmaCopy(tma.param, tma.box, src.buf, ir.as_expr(base), crd, None, None, tma.box.nbytes))


@builtin
def tma_store_commit_group(cx):
    """``cp.async.bulk.commit_group``: the TMA stores this thread issued form one group."""
    cx.emit(ir.AsyncOp("bulk_commit"))


@builtin
def tma_store_wait_group(cx, n):
    """``cp.async.bulk.wait_group.read n``: at most n groups still read their shared tiles."""
    cx.emit(ir.AsyncOp("bulk_wait", _aik.static_group_count(n, "tma_store_wait_group")))


@builtin
def fence_proxy_async(cx):
    """``fence.proxy.async.shared::cta``: shared memory written by threads becomes visible to the asynchronous
    units (a TMA store, a wgmma reading it)."""
    cx.emit(ir.AsyncOp("fence_proxy_async"))


# -- warpgroups ------------------------------------------------------------------------------------------
@builtin
def warpgroup_fence(cx):
    """``wgmma.fence``: registers written before it are what the next wgmma reads (``wb.gemm`` with a GMMA atom
    also issues it)."""
    cx.uses_collectives()
    cx.emit(ir.AsyncOp("wgmma_fence"))


@builtin
def warpgroup_commit_group(cx):
    """``wgmma.commit_group``: the wgmma this warpgroup issued since the last commit form one group."""
    cx.emit(ir.AsyncOp("wgmma_commit"))


@builtin
def warpgroup_wait_group(cx, n):
    """``wgmma.wait_group n``: at most n groups in flight; the accumulators of the others are final."""
    cx.emit(ir.AsyncOp("wgmma_wait", _aik.static_group_count(n, "warpgroup_wait_group")))


def _regs(cx, n, what):
    if type(n) is not int or n % 8 or not 24 <= n <= 256:
        raise ValueError(f"{what}: expected a static register count, a multiple of 8 in [24, 256], but got {n!r}.")
    if cx.launch_bounds is None:   # ptxas cannot know the count at entry and drops setmaxnreg (warning C7508)
        raise ValueError(f"{what}: setmaxnreg needs the block's size at compile time; declare it with "
                         f"@wb.kernel(launch_bounds=THREADS) (CUDA's __launch_bounds__), as CUTLASS's kernels do.")
    return n


@builtin
def warpgroup_reg_alloc(cx, n):
    """``setmaxnreg.inc``: this warpgroup may use up to n registers a thread (consumers of a warp-specialized
    kernel)."""
    cx.require_arch(90, "setmaxnreg")
    cx.emit(ir.AsyncOp("setmaxnreg_inc", _regs(cx, n, "warpgroup_reg_alloc")))


@builtin
def warpgroup_reg_dealloc(cx, n):
    """``setmaxnreg.dec``: this warpgroup gives registers back, keeping n a thread (a producer)."""
    cx.require_arch(90, "setmaxnreg")
    cx.emit(ir.AsyncOp("setmaxnreg_dec", _regs(cx, n, "warpgroup_reg_dealloc")))


# -- wb.gemm with a GMMA atom --------------------------------------------------------------------------------
def _smem_operand(t: KTensor, which, atom):
    """(inner swizzle or None, base element offset expression, [mode layouts V, MN, K]) of a GMMA operand."""
    if type(t) is not KTensor or t.buf.space != "smem":
        raise ValueError(f"gemm({atom.name}): an SS GMMA atom reads {which} from shared memory through a descriptor: pass "
                         f"thr_mma.partition_{which}(shared tile), but got {t}.")
    lay = t.layout
    sw, inner_off = None, 0
    if type(lay) is ComposedLayout:
        sw, inner_off, lay = lay.inner, lay.offset, lay.outer
    r = lay.rank if type(lay.shape) is tuple else 1
    if r > 3:
        raise ValueError(f"gemm({atom.name}): expected {which} of rank <= 3 (V, {'M' if which == 'A' else 'N'}, K), but got {t}.")
    modes = [lay[i] for i in range(r)] if r > 1 else [lay]
    modes += [Layout(1, 0)] * (3 - r)
    return sw, inner_off, modes


def gemm_gmma(cx, tiled_mma, atom: MMAAtom, d, a, b, c):
    """wb.gemm with an SM90 GMMA atom: one wgmma.mma_async per (m, n, k) of the partitions, accumulating in place."""
    _modes3, _register_offsets, _same_type = _aik._modes3, _aik._register_offsets, _aik._same_type
    rs = atom.a_source == "rmem"      # an RS atom: A from the warpgroup's registers, B through a descriptor
    if rs and a.buf.space != "rmem":
        raise ValueError(f"gemm({atom.name}): an RS atom reads A from registers: pass a fragment "
                         f"(tiled_mma.make_fragment_A, filled from shared memory), but got {a}.")
    if d.buf is not c.buf or d.offset != c.offset or str(d.layout) != str(c.layout):
        raise ValueError(f"gemm({atom.name}): wgmma accumulates in place: pass the same fragment as d and c "
                         "(wb.gemm(tiled_mma, acc, a, b, acc)); start from acc.fill(0.0).")
    _same_type(c, atom.c_type, atom, "C")
    if rs:
        swa, offa, am = None, 0, _modes3(a, "a", "V, M, K")
    else:
        swa, offa, am = _smem_operand(a, "A", atom)
    swb, offb, bm = _smem_operand(b, "B", atom)
    for t, w in ((a, "A"), (b, "B")):
        want = atom.a_type if w == "A" else atom.b_type
        if t.etype.bits != want.bits or (t.etype is not want and not (want is et.TFloat32 and t.etype is et.Float32)):
            raise TypeError(f"gemm({atom.name}): the atom's {w} operand is {want}, but the "
                            f"{'fragment' if rs and w == 'A' else 'shared tile'} holds {t.etype}.")
    M_atom, N_atom, K_atom = atom.shape_mnk
    cm = _modes3(c, "c", "V, M, N")
    M, N, K = am[1].size, bm[1].size, am[2].size
    if bm[2].size != K:
        raise ValueError(f"gemm({atom.name}): A has {K} k-blocks but B has {bm[2].size}.")
    vc = atom.tv_layout_C[1].size
    va = atom.tv_layout_A[1].size if rs else M_atom * K_atom     # a thread's A values, or the whole tile
    for modes, want, w in ((am, (va, M, K), "a"), (bm, (N_atom * K_atom, N, K), "b"),
                           (cm, (vc, M, N), "c")):
        got = tuple(x.size for x in modes)
        if got != want:
            raise ValueError(f"gemm({atom.name}): expected {w} of shape (V, ...) = {want}, but got {got}; partition the "
                             f"shared tiles with thr_mma.partition_A/B and the accumulator with make_fragment_C.")
    bits = a.etype.bits
    ops = {}
    for t, sw, inner_off, w in ((a, swa, offa, "A"), (b, swb, offb, "B")) if not rs else ((b, swb, offb, "B"),):
        period = sw.size * (bits // 8) if sw is not None and sw.bits else 16
        outer_dyn, outer_static = _peel(t.offset)
        inner_dyn, inner_static = _peel(inner_off)
        for x, what in ((outer_dyn, "offset"), (outer_static, "offset"), (inner_dyn, "offset inside the swizzle")):
            dv = divisibility_of(x) if x != 0 else 1 << 30
            if (dv * bits // 8) % period:
                raise ValueError(f"gemm({atom.name}): the {w} tile's {what} {x} must be a multiple of the swizzle's "
                                 f"period ({period} bytes) so that the descriptor's swizzle is the tile's, but it is only "
                                 f"known to be a multiple of {dv * bits // 8} bytes; pass a whole stage "
                                 f"(tCs{w}[None, None, None, stage]) and let wb.gemm walk its k-blocks.")
        if t.buf.align < period:
            raise ValueError(f"gemm({atom.name}): the {w} tile's buffer must be {period}-byte aligned for the "
                             f"descriptor's swizzle, but it is {t.buf.align}-byte aligned.")
        ops[w] = (t, sw, ir.as_expr(ir.binop("+", t.offset, inner_dyn)), inner_static)
    cx.require_arch(90, atom.name)
    cx.uses_collectives()
    cx.emit(ir.AsyncOp("wgmma_fence"))
    for k in range(K):
        for m in range(M):
            for n in range(N):
                descs = []
                if rs:   # the thread's A values of this call, 32-bit registers of contiguous values
                    ao = _register_offsets(a, am[0], am[1](m) + am[2](k), "a")
                    _aik._check_register_pairs(atom, a.buf, ao, "A")
                    descs.append((a.buf, tuple(ao), None))
                for w, modes, mn, idx in (("A", am, M_atom, m), ("B", bm, N_atom, n))[1 if rs else 0:]:
                    t, sw, base, static = ops[w]
                    off = static + modes[1](idx) + modes[2](k)
                    tile = ComposedLayout(sw, off, modes[0]) if sw is not None else \
                        (ComposedLayout(_NOSWIZZLE, off, modes[0]) if off else modes[0])
                    major = atom.major_a if w == "A" else atom.major_b
                    try:
                        desc = make_gmma_desc(tile, bits, major, mn, K_atom)
                    except ValueError as e:
                        raise ValueError(f"gemm({atom.name}), operand {w} (call m={m}, n={n}, k={k}): {e}") from None
                    descs.append((t.buf, base, desc))
                co = _register_offsets(c, cm[0], cm[1](m) + cm[2](n), "c")
                cx.emit(ir.Wgmma(atom, (c.buf, co), descs[0], descs[1]))
    cx.mark_written(c.buf)


def _peel(x):
    """(dynamic part, static int) of an offset expression x == dynamic + static (constants of its sums)."""
    if type(x) is int:
        return 0, x
    if type(x) is ir.Const and type(x.value) is int:
        return 0, x.value
    if type(x) is ir.BinOp and x.op == "+":
        da, sa = _peel(x.a)
        db, sb = _peel(x.b)
        return ir.binop("+", da, db), sa + sb
    return x, 0


_NOSWIZZLE = Swizzle(0, 4, 3)   # an identity swizzle: carries a static offset into an unswizzled tile
_aik.WARPGROUP_GEMM[:] = [gemm_gmma]


def wgmma_ptx(atom: MMAAtom) -> tuple:
    """(instruction, operands after the descriptors) of a GMMA atom's wgmma."""
    m, n, k = atom.shape_mnk
    d, a, b = (_aik._PTX_TYPE[x] for x in atom.type_codes[:3])
    sat = ".satfinite" if atom.name.endswith("_SATURATE") else ""
    head = f"wgmma.mma_async.sync.aligned.m{m}n{n}k{k}{sat}.{d}.{a}.{b}"
    if a in ("f16", "bf16") and atom.a_source == "rmem":   # A from registers is K-major: no transpose bit for it
        tail = f"1, 1, {int(atom.major_b == 'MN')}"
    elif a in ("f16", "bf16"):
        tail = f"1, 1, {int(atom.major_a == 'MN')}, {int(atom.major_b == 'MN')}"
    elif a in ("s8", "u8"):
        tail = ""
    else:
        tail = "1, 1"
    return head, tail


# -- what the CPU executor runs --------------------------------------------------------------------------------
def emulate_wgmma(stmt, lanes):
    """One wgmma of a warpgroup: lanes[l] = (A array, A base, B array, B base, accumulators) of thread l.  A and B
    are read through the descriptors' addressing (``GmmaDescriptor.address``, the hardware's walk), the tile
    D = A B^T + C computed exactly and rounded once, the accumulators gathered and scattered through
    ``tv_layout_C`` (what the views draw)."""
    atom = stmt.atom
    M, N, K = atom.shape_mnk
    dcode, acode, bcode = atom.type_codes[:3]
    arrA, baseA, arrB, baseB = lanes[0][:4]
    rs = stmt.a[2] is None        # A is each thread's registers (lanes[l][0]: its values), gathered via tv_layout_A
    for lane, op in enumerate(lanes):
        if (not rs and (op[0] is not arrA or op[1] != baseA)) or op[2] is not arrB or op[3] != baseB:
            raise ValueError(f"{atom.name}: the threads of a warpgroup must pass the same A and B tiles to a wgmma, but "
                             f"thread {lane} of the warpgroup differs (its A at {op[1]}, B at {op[3]}; thread 0's at "
                             f"{baseA}, {baseB})")
    (_, _, da), (_, _, db) = stmt.a, stmt.b
    if rs:
        ia = np.asarray(_aik._tv_indices(atom.tv_layout_A, 128, atom.tv_layout_A[1].size), dtype=np.int64)
        flat = np.zeros(M * K, dtype=object if acode in ("S8", "U8") else np.float64)
        flat[ia.reshape(-1)] = [_register_value(acode, x) for op in lanes for x in op[0]]
        A = flat.reshape(K, M).T                          # tile index i = m + M * k
    else:
        A = _gather(arrA, baseA, da, M, K, acode)
    B = _gather(arrB, baseB, db, N, K, bcode)
    is_int = dcode == "S32"
    ic = np.asarray(_aik._tv_indices(atom.tv_layout_C, 128, atom.tv_layout_C[1].size), dtype=np.int64)
    C = np.zeros(M * N, dtype=object if is_int else np.float64)
    C[ic.reshape(-1)] = [x for op in lanes for x in op[4]]
    C = C.reshape(N, M).T                                # tile index i = m + M * n
    if is_int:   # exact integers, wrapped to 32 bits
        D = C + np.asarray(A, dtype=object) @ np.asarray(B, dtype=object).T
        lo = -(1 << 31)
        D = np.vectorize(lambda x: ((int(x) - lo) % (1 << 32)) + lo, otypes=[object])(D)
    else:        # exact products of <= 16-bit inputs, summed in float64, rounded once to D's type
        D = C + A @ B.T
        if dcode == "F32":
            D = D.astype(np.float32).astype(np.float64)
    flat = D.T.reshape(-1)
    return [tuple(flat[i].item() if hasattr(flat[i], "item") else flat[i] for i in row) for row in ic]


def _register_value(code, x):
    if code in ("S8", "U8"):
        return int(x)
    if code in ("F16", "F32"):
        return float(x)
    return _aik._decode(code, x)


_WALKS: dict = {}


def _gather(arr, base, desc, mn, k, code):
    """The (mn, k) operand tile as float64 (or exact ints), read where the descriptor's walk puts each element."""
    key = (desc.major, desc.swizzle_bits, desc.lbo, desc.sbo, desc.start, desc.element_bits, mn, k)
    rel = _WALKS.get(key)
    if rel is None:   # the descriptor's walk, once per distinct descriptor
        e = desc.element_bits // 8
        rel = _WALKS[key] = np.array([[desc.address(x, y) // e for y in range(k)] for x in range(mn)], dtype=np.int64)
    idx = base + rel
    if idx.min() < 0 or idx.max() >= arr.shape[0]:
        raise IndexError(f"wgmma reads shared elements {int(idx.min())}..{int(idx.max())} (descriptor {desc}), outside "
                         f"the buffer of {arr.shape[0]}")
    raw = arr[idx]
    if code in ("S8", "U8", "S32"):
        return raw.astype(object)
    if code in ("F16", "F32"):
        return raw.astype(np.float64)
    return np.vectorize(lambda x: _aik._decode(code, x), otypes=[np.float64])(raw)


def tma_box_copy(tma: TmaLoad, g, smem, smem_off, coords, load: bool):
    """The CPU executor's TMA: one box between the tensor (``g``: a host view of its elements from offset 0) and
    shared memory, coordinates in the descriptor's order; a load reads zeros outside the tensor, a store skips
    those elements."""
    box = tma.box
    d = box.dims
    shape = [tma.shape[m] for m in d]
    stride = [tma.stride[m] for m in d]
    bx = [box.box[m] for m in d]
    grids = np.meshgrid(*[np.arange(b, dtype=np.int64) + c for b, c in zip(bx, coords)], indexing="ij")
    # the descriptor's linear order: dimension 0 fastest
    pos = [gr.transpose(tuple(range(len(bx)))[::-1]).reshape(-1) for gr in grids]
    inside = np.ones(pos[0].shape, bool)
    for p, sz in zip(pos, shape):
        inside &= (p >= 0) & (p < sz)
    goff = np.zeros(pos[0].shape, np.int64)
    for p, st in zip(pos, stride):
        goff += np.where(inside, p, 0) * st
    dst = smem_off + box.element_offsets()
    if dst.min() < 0 or dst.max() >= smem.shape[0]:
        raise IndexError(f"TMA box of {box.nbytes} B at shared element {smem_off} lies outside the buffer of "
                         f"{smem.shape[0]}")
    if load:
        smem[dst] = np.where(inside, g[goff], 0).astype(smem.dtype)
    else:
        g[goff[inside]] = smem[dst[inside]]


def tma_extent(tma: TmaLoad) -> int:
    """Elements of the tensor a box may touch, from its first: 1 + the largest offset."""
    return sum((sz - 1) * st for sz, st in zip(tma.shape, tma.stride)) + 1
