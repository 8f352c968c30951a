"""TMA (``cp.async.bulk.tensor``): ``wb.make_tma_load(tensor, smem_layout)`` on the host (a :class:`TmaLoad`: the box
proven against the shared layout, ``workbench.atoms.tma``, and for a device tensor the 128-byte descriptor the
driver encodes with ``cuTensorMapEncodeTiled``, passed as a ``__grid_constant__`` parameter); in kernels
``wb.tma_load(tma, dst, coords, bars, i, multicast=None)``, ``wb.tma_store(tma, src, coords)``,
``wb.tma_store_commit_group()`` / ``wb.tma_store_wait_group(n)`` (``cp.async.bulk.commit_group`` /
``wait_group.read``).

A 4-bit shared tile (``wb.Float4E2M1FN``, two values a byte: kind::mxf4 operands) is loaded as its packed bytes:
``wb.make_tma_load`` of a ``wb.Uint8`` tensor of them ((MN, K/2) for a K-major tile) with the tile's layout recast to
bytes (``wb.recast_layout(8, 4, layout)``), and ``wb.tma_load`` into the 4-bit tile proves, value by value, that each
byte of the box holds the two neighbouring values the tile maps there (the even one in the low nibble).  This
departs from CuTe's spelling only: CuTe's ``make_tma_atom`` takes the 4-bit tensor itself; here the descriptor is
of the bytes, since kernels take no 4-bit global tensors.

CPU semantics: a load copies its box at once (zeros outside the tensor) and completes its bytes on the mbarrier
(``mbarrier.py``), into every block its multicast mask names; a store writes the box's elements inside the tensor;
bulk groups complete at issue.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ...atoms.tma import TmaBox, make_tma_box
from ...layout import ComposedLayout, Layout, divisibility_of
from ...layout.values import value_of
from .. import ir
from ..backends.cpu import KernelRuntimeError, host_view, pyexpr
from ..backends.cuda import expr, saddr
from ..builtins import builtin, static_group_count
from ..views import KTensor, packed_bytes
from .mbarrier import bar_key, bar_operand, expr_identity, mb_complete_tx, mb_index, peer, tx_ledger


class TmaLoad:
    """A TMA descriptor of ``tensor`` for boxes laid out in shared memory as ``smem_layout`` (CuTe DSL's
    ``make_tiled_tma_atom``): ``.box`` (:class:`~workbench.atoms.tma.TmaBox`), ``.nbytes`` a box, and, for a
    device tensor, ``.descriptor`` (the 128 bytes the kernel receives).  The tensor is kept alive with it."""

    __slots__ = ("tensor", "element_type", "shape", "stride", "address", "memspace", "box", "_desc", "_key",
                 "read_only")

    def __init__(self, tensor, smem_layout):
        from ..._tensor import Tensor, from_dlpack
        t = tensor
        if type(t) is not Tensor and hasattr(t, "__dlpack__"):   # as kernel arguments are taken
            t = from_dlpack(t)
        if type(t) is not Tensor:
            raise TypeError(f"make_tma_load: expected a tensor (wb.Tensor or any __dlpack__ object), but got "
                            f"{type(tensor).__name__}.")
        e = t.element_type
        if e.tma_code is None:
            raise TypeError(f"make_tma_load: TMA moves 8/16/32/64-bit elements, but the tensor holds {e}.")
        shape, stride = value_of(t.layout.shape), value_of(t.layout.stride)
        shape = shape if type(shape) is tuple else (shape,)
        stride = stride if type(stride) is tuple else (stride,)
        if any(type(x) is tuple for x in shape + stride):
            raise ValueError(f"make_tma_load: expected a flat tensor layout (rank <= 5), but got {t.layout}.")
        self.tensor, self.element_type, self.shape, self.stride = t, e, shape, stride
        self.address, self.memspace = t.iterator.address, t.memspace
        self.read_only = t.read_only     # a kernel that tma_stores through it is refused at launch
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
                     self.memspace, self.read_only)
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
        return {"data_type": self.element_type.tma_code, "rank": len(d), "global_address": hex(self.address),
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
    from ..runtime.cupy import error_string, libcuda
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
    rc = f(out, ctypes.c_int(t.element_type.tma_code), ctypes.c_uint32(r), ctypes.c_void_p(t.address), dims,
           strides, box, ones, ctypes.c_int(0), ctypes.c_int(t.box.swizzle_bits), ctypes.c_int(2), ctypes.c_int(0))
    if rc:
        raise ValueError(f"make_tma_load: the driver refused the descriptor ({error_string(rc)}, {rc}) for {t.fields()}.")
    return out.raw


class KTma:
    """A TMA descriptor parameter inside a kernel: its IR parameter and the box it moves."""

    __slots__ = ("param", "box", "etype")

    def __init__(self, param, box: TmaBox, etype):
        self.param, self.box, self.etype = param, box, etype




class TmaCopy(ir.Instruction):
    """``cp.async.bulk.tensor``: one TMA box between the tensor of descriptor parameter ``tma`` (a Param) at
    element coordinates ``coords`` (the descriptor's dimension order) and shared memory smem_buf[smem_off].
    A load (``bar_buf`` set) completes its ``nbytes`` on the mbarrier; a store (``bar_buf`` None) joins the
    thread's bulk group."""

    __slots__ = ("tma", "box", "smem_buf", "smem_off", "coords", "bar_buf", "bar_off", "nbytes", "multicast")

    def __init__(self, tma, box, smem_buf, smem_off, coords, bar_buf, bar_off, nbytes, multicast=None):
        self.tma, self.box, self.smem_buf, self.smem_off, self.coords = tma, box, smem_buf, smem_off, coords
        self.bar_buf, self.bar_off, self.nbytes = bar_buf, bar_off, nbytes
        self.multicast = multicast   # a load to the same place in each block of the cluster this mask names

    def cuda(self, em, d):
        r = len(self.coords)
        crd = ", ".join(f"%{i + 2}" for i in range(r))
        coords = "".join(f', "r"((int)({expr(c)}))' for c in self.coords)
        smem = saddr(self.smem_buf, self.smem_off)
        desc = f"reinterpret_cast<unsigned long long>(&{self.tma.name})"
        if self.bar_buf is not None and self.multicast:
            em.w(d, f'asm volatile("cp.async.bulk.tensor.{r}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes'
                      f'.multicast::cluster [%0], [%1, {{{crd}}}], [%{r + 2}], %{r + 3};\\n" :: "r"({smem}), "l"({desc})'
                      f'{coords}, "r"({saddr(self.bar_buf, self.bar_off)}), "h"((unsigned short){self.multicast}) : "memory");')
        elif self.bar_buf is not None:
            em.w(d, f'asm volatile("cp.async.bulk.tensor.{r}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes '
                      f'[%0], [%1, {{{crd}}}], [%{r + 2}];\\n" :: "r"({smem}), "l"({desc}){coords}, '
                      f'"r"({saddr(self.bar_buf, self.bar_off)}) : "memory");')
        else:
            em.w(d, f'asm volatile("cp.async.bulk.tensor.{r}d.global.shared::cta.tile.bulk_group [%1, {{{crd}}}], [%0];\\n" '
                      f':: "r"({smem}), "l"({desc}){coords} : "memory");')

    def python(self, em, d):
        crd = "(" + "".join(f"{pyexpr(c)}, " for c in self.coords) + ")"
        load = self.bar_buf is not None
        if self.multicast:   # the same box into each named block of the cluster, its bytes on each one's mbarrier
            ranks = tuple(r for r in range(16) if self.multicast >> r & 1)
            em.w(d, f"for _rk in {ranks}:")
            em.w(d + 1, f"_tma_box_copy({self.tma.name}, _peer(_CS, _rk)['{self.smem_buf.name}'], {pyexpr(self.smem_off)}, "
                        f"{crd}, True)")
            em.w(d + 1, f"_mb_tx(_CMB[_rk], {bar_key(self)}, {self.nbytes})")
        else:
            if not load:     # the executor stores at issue, and remembers what the box read until a wait retires it
                em.prologue.append(_BULK_QUEUE)
                em.w(d, f"_bkq_cur.append(_bulk_read({self.tma.name}, {self.smem_buf.name}, {pyexpr(self.smem_off)}))")
            em.w(d, f"_tma_box_copy({self.tma.name}, {self.smem_buf.name}, {pyexpr(self.smem_off)}, {crd}, {load})")
            if load:
                em.w(d, f"_mb_tx(_MB, {bar_key(self)}, {self.nbytes})")


# A thread's TMA stores: committed bulk groups (oldest first) and the stores since its last commit, each the shared
# elements its box read and their bytes then.  The GPU's store may read them any time before a wait retires its group,
# so the executor checks at retirement that they are unchanged: a write into a staging buffer whose store is still in
# flight (a race the GPU shows only sometimes, and compute-sanitizer does not see) is an error here.
_BULK_QUEUE = "_bkq = []; _bkq_cur = []"


def _bulk_read(tma, smem, off):
    idx = off + tma.box.element_offsets()
    return smem, idx, smem[idx].tobytes()


def _bulk_retire(group):
    for smem, idx, seen in group:
        if smem[idx].tobytes() != seen:
            raise KernelRuntimeError(
                f"shared memory elements {int(idx.min())}..{int(idx.max())} that a TMA store was reading were written "
                f"before its bulk group was retired: call tma_store_wait_group (``cp.async.bulk.wait_group.read``) so "
                f"that the store has read them before they are reused")


class BulkCommit(ir.Instruction):
    """``cp.async.bulk.commit_group``: the thread's TMA stores since the last commit form one group."""

    __slots__ = ()

    def cuda(self, em, d):
        em.w(d, 'asm volatile("cp.async.bulk.commit_group;\\n" ::: "memory");')

    def python(self, em, d):
        em.prologue.append(_BULK_QUEUE)
        em.w(d, "_bkq.append(_bkq_cur); _bkq_cur = []")


class BulkWait(ir.Instruction):
    """``cp.async.bulk.wait_group.read n``: at most n groups still read their shared tiles."""

    __slots__ = ("n",)

    def __init__(self, n):
        self.n = n

    def cuda(self, em, d):
        em.w(d, f'asm volatile("cp.async.bulk.wait_group.read {self.n};\\n" ::: "memory");')

    def python(self, em, d):
        em.prologue.append(_BULK_QUEUE)
        em.w(d, f"while len(_bkq) > {self.n}: _bulk_retire(_bkq.pop(0))")


# -- TMA ------------------------------------------------------------------------------------------------
def _tma_tile(tma, t, what):
    """The element offset of shared tile t's aligned base, proven to be a box of tma's layout."""
    if type(tma) is not KTma:
        raise TypeError(f"{what}: expected a TMA descriptor parameter (a wb.make_tma_load(...) kernel argument), "
                        f"but got {type(tma).__name__}.")
    if type(t) is not KTensor or t.buf.space != "smem":
        raise TypeError(f"{what}: expected a shared tensor (one box), but got {t if type(t) is KTensor else type(t).__name__}.")
    packed = t.etype.bits == 4 and tma.etype.bits == 8    # a 4-bit tile moved as its packed bytes
    if t.etype.bits != tma.etype.bits and not packed:
        raise TypeError(f"{what}: the descriptor moves {tma.etype} ({tma.etype.bits} bits), but the tile holds {t.etype}"
                        + (" (a 4-bit tile is moved as its packed bytes: make the descriptor of a wb.Uint8 tensor of "
                           "them, with the tile's layout recast to bytes, wb.recast_layout(8, 4, layout))."
                           if t.etype.bits == 4 else "."))
    want = tma.box.smem_layout
    offset, lay = t.offset, t.layout
    if packed:
        offset, lay = packed_bytes(t, what)
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
        raise ValueError(f"{what}: the tile {t.layout}{' (as bytes: ' + str(lay) + ')' if packed else ''} is not laid "
                         f"out as the descriptor's box {want} (element by element); slice one box of the shared tensor "
                         "the descriptor was made for.")
    align = tma.box.alignment
    nb = max(1, t.etype.bits // 8)
    base = ir.binop("+", offset, inner_off)
    for x in (offset, inner_off):
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
        if not isinstance(c, ir.Expr) and type(c) is not int or isinstance(c, ir.Expr) and not ir.is_int_type(c.type):
            raise TypeError(f"{what}: expected integer element coordinates (TMA coordinates are 32-bit ints), but got "
                            f"{c!r} ({c.type if isinstance(c, ir.Expr) else type(c).__name__}).")
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
    buf, off = bar_operand(bars, i, what)
    copies = 1
    if multicast is not None:
        n = cx.cluster[0] * cx.cluster[1] * cx.cluster[2]
        if type(multicast) is not int or not 0 < multicast < 1 << n:
            raise ValueError(f"{what}: expected multicast as a static bit mask of the cluster's {n} block ranks (1 to "
                             f"{(1 << n) - 1}), but got {multicast!r}" + ("; the kernel has no cluster: declare one with "
                                                                          "@wb.kernel(cluster=(2, 1, 1))." if n == 1 else "."))
        copies = bin(multicast).count("1")
    tx_ledger(cx).load(cx, (buf.name, expr_identity(off)), tma.box.nbytes * copies, what)
    cx.require_arch(90, "TMA (cp.async.bulk.tensor)")
    cx.emit(TmaCopy(tma.param, tma.box, dst.buf, ir.as_expr(base), crd, buf, off, tma.box.nbytes, multicast))
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
    cx.written_args.add(tma.param.arg_index)     # the descriptor's tensor is written: a read-only one is refused
    cx.emit(TmaCopy(tma.param, tma.box, src.buf, ir.as_expr(base), crd, None, None, tma.box.nbytes))


@builtin
def tma_store_commit_group(cx):
    """``cp.async.bulk.commit_group``: the TMA stores this thread issued form one group."""
    cx.emit(BulkCommit())


@builtin
def tma_store_wait_group(cx, n):
    """``cp.async.bulk.wait_group.read n``: at most n groups still read their shared tiles."""
    cx.emit(BulkWait(static_group_count(n, "tma_store_wait_group")))


# -- what the CPU executor runs ----------------------------------------------------------------------
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
        if tma.read_only:
            raise IndexError("tma_store: expected a writable tensor, but the descriptor's tensor is read-only")
        g[goff[inside]] = smem[dst[inside]]


def tma_extent(tma: TmaLoad) -> int:
    """Elements of the tensor a box may touch, from its first: 1 + the largest offset."""
    return sum((sz - 1) * st for sz, st in zip(tma.shape, tma.stride)) + 1


def _tma_box_copy(tma, smem, off, coords, load):
    try:
        tma_box_copy(tma, host_view(tma.address, tma.element_type, 0, tma_extent(tma)), smem, off, coords, load)
    except IndexError as e:
        raise KernelRuntimeError(str(e)) from None


TmaCopy.cpu_helpers = {"_tma_box_copy": _tma_box_copy, "_mb_tx": mb_complete_tx, "_peer": peer, "_mb_ix": mb_index,
                       "_bulk_read": _bulk_read}
BulkWait.cpu_helpers = {"_bulk_retire": _bulk_retire}
