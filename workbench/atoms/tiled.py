"""TiledMMA and TiledCopy: atoms replicated over threads and tiles, as CuTe builds them.

Every layout here is computed with the layout core exactly as CuTe's ``TiledMMA::thrfrg_A/B/C``,
``get_layoutA/B/C_TV`` and ``TiledCopy::tile2thrfrg`` compute them (mma_atom.hpp, copy_atom.hpp),
so ``tv_layout_C_tiled`` etc. are CuTe's layouts as functions.
"""

from __future__ import annotations

from ..layout import (
    ComposedLayout,
    Layout,
    coalesce,
    complement,
    composition,
    logical_divide,
    logical_product,
    make_layout,
    make_layout_tv,
    product_each,
    right_inverse,
    slice_,
    tiled_product,
    zipped_divide,
)
from ..layout.values import Symbolic
from .copy import CopyAtom, upcast
from .mma import MMAAtom

__all__ = ["TiledMMA", "TiledCopy", "ThrMMA", "ThrCopy", "make_tiled_mma", "make_tiled_copy",
           "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C"]


# ---- small layout helpers (mode surgery the core has no public name for) ------------------------

def _modes(L):
    return [L[i] for i in range(L.rank)] if type(L.shape) is tuple else [L]


def _cat(*ls):
    return Layout(tuple(x.shape for x in ls), tuple(x.stride for x in ls))


def _zip2(L):
    """CuTe's ``zip`` of ((a,b),(c,d)) -> ((a,c),(b,d))."""
    (a, b), (c, d) = _modes(L[0]), _modes(L[1])
    return _cat(_cat(a, c), _cat(b, d))


def _unfold0(L):
    """CuTe's ``L(make_coord(_,_), _)``: ((x,y),z...) -> (x,y,z...)."""
    m = _modes(L)
    return _cat(*_modes(m[0]), *m[1:])


def _zip2_by(L, guide):
    """CuTe's ``zip2_by``: split each mode (already (tile, rest)) into ((tiles...), (rests...))."""
    if type(guide) is tuple:
        ms = _modes(L)
        parts = [_zip2_by(m, g) for m, g in zip(ms, guide)]
        rest = ms[len(guide):]
        return _cat(*[p[0] for p in parts]), _cat(*[p[1] for p in parts], *rest)
    m = _modes(L)
    if len(m) != 2:
        return L, Layout(1, 0)
    return m[0], m[1]


def _zipped_divide(L, tiler):
    """CuTe's ``zipped_divide`` = ``tile_unzip(logical_divide(L, tiler), tiler)``.

    Differs from the core's zipped_divide where the tiler has a ``_`` (None) over a rank-2 mode:
    CuTe splits that mode's own two submodes into (tile, rest), as ``TiledMMA::thrfrg_*`` rely on.
    """
    t, r = _zip2_by(logical_divide(L, tiler), tiler)
    return _cat(t, r)


def _with_shape(L, shape):
    """CuTe's ``L.with_shape(shape)``: ``composition(L, make_layout(shape))``."""
    return composition(L, make_layout(shape))


def _as_tiler_mode(p, i):
    """One mode of a CuTe permutation: None (CuTe's ``_``), an int (identity of that size) or a Layout."""
    if p is None or isinstance(p, Layout):
        return p
    if type(p) is int and p > 0:
        return make_layout(p)
    if type(p) is tuple:
        return make_layout(p)  # a shape: its compact layout, as CuTe's make_tile(Shape) would
    raise TypeError(f"make_tiled_mma: permutation mode {i} must be None, a positive int or a Layout, but got {p!r}.")


# ---- TiledMMA -------------------------------------------------------------------------------------

class TiledMMA:
    """CuTe's ``TiledMMA<atom, AtomLayoutMNK, PermutationMNK>``."""

    def __init__(self, atom: MMAAtom, atom_layout_mnk: Layout, permutation_mnk):
        self.atom = atom
        self.atom_layout_mnk = atom_layout_mnk
        self.permutation_mnk = permutation_mnk
        self.thr_layout_vmnk = tiled_product(atom.thr_id, atom_layout_mnk)
        for i in range(3):
            p = permutation_mnk[i]
            core = atom.shape_mnk[i] * self.thr_layout_vmnk[i + 1].size
            if p is not None and p.size % core:
                raise ValueError(
                    f"make_tiled_mma({atom.name}): permutation mode {'MNK'[i]} has size {p.size}, which the "
                    f"tiled atom's extent {core} ({atom.shape_mnk[i]} x {self.thr_layout_vmnk[i + 1].size} atoms) "
                    f"does not divide; accepted: a multiple of {core}.")

    # CuTe: size(tiled_mma) is the number of threads
    @property
    def size(self) -> int:
        return self.thr_layout_vmnk.size

    @property
    def num_threads(self) -> int:
        return self.size

    def _perm(self, i):
        p = self.permutation_mnk[i]
        return p if p is not None else self.atom.shape_mnk[i] * self.thr_layout_vmnk[i + 1].size

    def get_tile_size(self, i: int) -> int:
        if i not in (0, 1, 2):
            raise ValueError(f"get_tile_size: expected a mode 0 (M), 1 (N) or 2 (K), but got {i!r}.")
        p = self._perm(i)
        return p if type(p) is int else p.size

    @property
    def tile_shape_mnk(self):
        return tuple(self.get_tile_size(i) for i in range(3))

    def _thrfrg(self, tensor, mi, ki, atom_tv, vi, vj):
        t_tensor = logical_divide(tensor, (self._perm(mi), self._perm(ki)))
        a_tile = (make_layout(self.atom.shape_mnk[mi]), make_layout(self.atom.shape_mnk[ki]))
        a_tensor = zipped_divide(t_tensor, a_tile)
        tv_tensor = composition(a_tensor, (atom_tv, None))
        thr_tile = (None, (make_layout(self.thr_layout_vmnk[vi].size), make_layout(self.thr_layout_vmnk[vj].size)))
        return _zipped_divide(tv_tensor, thr_tile)

    def thrfrg_A(self, layout):
        """(M,K) -> ((ThrV,(ThrM,ThrK)),(FrgV,(RestM,RestK)))."""
        return self._thrfrg(layout, 0, 2, self.atom.tv_layout_A, 1, 3)

    def thrfrg_B(self, layout):
        return self._thrfrg(layout, 1, 2, self.atom.tv_layout_B, 2, 3)

    def thrfrg_C(self, layout):
        return self._thrfrg(layout, 0, 1, self.atom.tv_layout_C, 1, 2)

    def _thridx_2_thrid(self):
        v = self.thr_layout_vmnk
        inv = right_inverse(_cat(v, complement(v)))
        return composition(Layout((v.size, 1), (1, 0)), inv)

    @property
    def tv_layout_C_tiled(self) -> Layout:
        """(thread index, value) -> column-major index in the (M, N) tile."""
        ref = make_layout((self.get_tile_size(0), self.get_tile_size(1)))
        return composition(self.thrfrg_C(ref), (self._thridx_2_thrid(), None))

    def _ab(self, thrfrg, mn, keep_m):
        v = self.thr_layout_vmnk
        ref = make_layout((self.get_tile_size(mn), self.get_tile_size(2)))
        stride = (1, 0) if keep_m else (0, 1)
        tile = (None, (Layout((v[1].size, v[2].size), stride), None))
        return composition(composition(thrfrg(ref), (tile, None)), (self._thridx_2_thrid(), None))

    @property
    def tv_layout_A_tiled(self) -> Layout:
        """(thread index, value) -> column-major index in the (M, K) tile."""
        return self._ab(self.thrfrg_A, 0, True)

    @property
    def tv_layout_B_tiled(self) -> Layout:
        """(thread index, value) -> column-major index in the (N, K) tile."""
        return self._ab(self.thrfrg_B, 1, False)

    def get_slice(self, thr_idx: int) -> ThrMMA:
        _check_thread_index(thr_idx, self.size)
        return ThrMMA(self, thr_idx)

    get_thread_slice = get_slice

    def __repr__(self):
        perm = ", ".join("_" if p is None else str(p) for p in self.permutation_mnk)
        return f"TiledMMA({self.atom.name}, atom_layout={self.atom_layout_mnk}, permutation=({perm}))"


class ThrMMA:
    """One thread's view of a TiledMMA (CuTe's ``ThrMMA``): partitions of A, B and C."""

    def __init__(self, tiled: TiledMMA, thr_idx: int):
        self.tiled, self.thr_idx = tiled, thr_idx
        # CuTe's get_flat_coord: one integer per top mode (V, M, N, K), colexicographic
        self.thr_vmnk, idx = [], thr_idx
        for i in range(4):
            n = tiled.thr_layout_vmnk[i].size
            self.thr_vmnk.append(idx % n)
            idx //= n

    def _part(self, x, thrfrg, a, b):
        thr = _thrfrg_of(x, thrfrg)
        rest_rank = thr[1][1].rank if type(thr[1][1].shape) is tuple else 1
        crd = ((self.thr_vmnk[0], (self.thr_vmnk[a], self.thr_vmnk[b])), (None, (None,) * rest_rank))
        if isinstance(x, (Layout, ComposedLayout)):
            return slice_(thr, crd)
        return _tensor_slice(x, thr, crd)

    def partition_A(self, x):
        """This thread's (FrgV, (RestM, RestK)) of an (M, K) layout or tensor."""
        return self._part(x, self.tiled.thrfrg_A, 1, 3)

    def partition_B(self, x):
        return self._part(x, self.tiled.thrfrg_B, 2, 3)

    def partition_C(self, x):
        return self._part(x, self.tiled.thrfrg_C, 1, 2)


def _check_thread_index(thr_idx, n):
    """A thread index: an int in [0, n), or a symbolic one (a kernel's thread index, CuTe DSL's dynamic slice)."""
    if isinstance(thr_idx, Symbolic):
        return
    if type(thr_idx) is not int or not 0 <= thr_idx < n:
        raise ValueError(f"get_slice: expected a thread index in [0, {n}), but got {thr_idx!r}.")


def _thrfrg_of(x, thrfrg):
    """thrfrg applied to the layout of x (a Layout, a swizzled ComposedLayout, or a tensor's layout).  A swizzle
    ``sw o off o L`` is partitioned as CuTe does: the thread/value split is a composition with L, so it is
    ``sw o off o thrfrg(L)`` (the swizzle stays outermost, applied to the partition's offsets)."""
    if isinstance(x, (Layout, ComposedLayout)):
        lay = x
    elif hasattr(x, "_with_layout"):
        lay = x.layout
    else:
        raise TypeError(f"partition: expected a Layout or a tensor, but got {type(x).__name__}.")
    if type(lay) is ComposedLayout:
        return ComposedLayout(lay.inner, lay.offset, thrfrg(lay.outer))
    return thrfrg(lay)


def _tensor_slice(x, thr_layout, crd):
    """A wb.Tensor partition: the tensor re-laid out by ``thr_layout`` and sliced at ``crd``."""
    from ..layout import slice_and_offset  # local: keeps the tensor dependency at the edge
    if not hasattr(x, "_with_layout"):
        raise TypeError(f"partition: expected a Layout or a wb.Tensor, but got {type(x).__name__}.")
    sub, off = slice_and_offset(thr_layout, crd)
    return x._with_layout(sub, off)


def make_tiled_mma(atom: MMAAtom, atom_layout_mnk=None, permutation_mnk=None) -> TiledMMA:
    """CuTe's ``make_tiled_mma(atom, atom_layout_mnk, permutation_mnk)``.

    ``atom_layout_mnk``: a Layout (or a shape) of rank <= 3 laying atoms out over M, N, K
    (default one atom).  ``permutation_mnk``: None or a 3-tuple whose modes are None (CuTe's
    ``_``), an int (a tile of that size) or a Layout (a permutation of that mode).
    """
    if not isinstance(atom, MMAAtom):
        raise TypeError(f"make_tiled_mma: expected an MMA atom (wb.mma_atom(...)), but got {type(atom).__name__}.")
    if atom_layout_mnk is None:
        atom_layout_mnk = Layout((1, 1, 1), (0, 0, 0))
    if type(atom_layout_mnk) is tuple:
        atom_layout_mnk = make_layout(atom_layout_mnk)
    if not isinstance(atom_layout_mnk, Layout):
        raise TypeError(f"make_tiled_mma: expected a Layout or a shape for atom_layout_mnk, but got "
                        f"{type(atom_layout_mnk).__name__}.")
    r = atom_layout_mnk.rank if type(atom_layout_mnk.shape) is tuple else 1
    if r > 3:
        raise ValueError(f"make_tiled_mma: expected an atom layout of rank <= 3 (M, N, K), but got {atom_layout_mnk} of rank {r}.")
    if r < 3:  # CuTe appends size-1 modes (append<3>(layout, Layout<_1,_0>))
        ms = _modes(atom_layout_mnk) + [Layout(1, 0)] * (3 - r)
        atom_layout_mnk = _cat(*ms)
    if permutation_mnk is None:
        permutation_mnk = (None, None, None)
    if type(permutation_mnk) not in (tuple, list) or len(permutation_mnk) != 3:
        raise ValueError(f"make_tiled_mma: expected permutation_mnk as a 3-tuple (M, N, K), but got {permutation_mnk!r}.")
    perm = tuple(_as_tiler_mode(p, i) for i, p in enumerate(permutation_mnk))
    return TiledMMA(atom, atom_layout_mnk, perm)


# ---- TiledCopy ------------------------------------------------------------------------------------

class TiledCopy:
    """CuTe's ``TiledCopy<Copy_Atom, LayoutCopy_TV, Tiler_MN>``."""

    def __init__(self, atom: CopyAtom, layout_tv: Layout, tiler_mn):
        self.atom, self.layout_tv, self.tiler_mn = atom, layout_tv, tuple(tiler_mn)
        nt, nv = layout_tv[0].size, layout_tv[1].size
        at, av = atom.layout_ref_tv[0].size, atom.layout_ref_tv[1].size
        if nt % at or nv % av:
            raise ValueError(
                f"make_tiled_copy({atom}): the tiled layout {layout_tv} has {nt} threads x {nv} values, but the "
                f"atom needs a multiple of {at} threads and of {av} values per thread (it moves {av} values of "
                f"{atom.value_type} a thread); accepted: thread counts k*{at}, value counts k*{av}.")

    @property
    def size(self) -> int:
        return self.layout_tv[0].size

    num_threads = size

    def _ref2(self, trg):
        return composition(right_inverse(self.atom.layout_ref_tv), trg)

    def _tile2thrfrg(self, tensor, ref2trg):
        at, av = self.atom.layout_ref_tv[0].size, self.atom.layout_ref_tv[1].size
        atom_layout_tv = zipped_divide(self.layout_tv, (make_layout(at), make_layout(av)))
        trg_layout_tv = composition(atom_layout_tv, (ref2trg, None))
        thrval2mn = coalesce(_zip2(trg_layout_tv), (1, (1, 1)))
        tv_tensor = composition(tensor, (thrval2mn, None))
        return _unfold0(tv_tensor)

    def _tv(self, trg):
        ref = make_layout((self.tiler_mn, 1))
        full = self._tile2thrfrg(ref, self._ref2(trg))
        return _cat(full[0], full[1])

    @property
    def layout_src_tv_tiled(self) -> Layout:
        """(thread, value) -> column-major index in the tiler_mn tile (CuTe's get_layoutS_TV)."""
        return self._tv(self.atom.layout_src_tv)

    @property
    def layout_dst_tv_tiled(self) -> Layout:
        """(thread, value) -> column-major index in the tile (CuTe's get_layoutD_TV)."""
        return self._tv(self.atom.layout_dst_tv)

    def tidfrg_S(self, layout):
        return self._tile2thrfrg(zipped_divide(layout, self._tiler_tuple()), self._ref2(self.atom.layout_src_tv))

    def tidfrg_D(self, layout):
        return self._tile2thrfrg(zipped_divide(layout, self._tiler_tuple()), self._ref2(self.atom.layout_dst_tv))

    def _tiler_tuple(self):
        return tuple(make_layout(t) if type(t) is int else t for t in self.tiler_mn)

    def retile(self, x):
        """CuTe's ``TiledCopy::retile``: a thread's (V, Rest...) fragment re-expressed per copy atom (a layout
        for a layout, the same memory re-laid out for a tensor)."""
        if hasattr(x, "_with_layout"):
            return x._with_layout(self.retile(x.layout), 0)
        lay = x
        r = lay.rank if type(lay.shape) is tuple else 1
        v = lay[0].size if r > 1 else lay.size
        nt = self.size
        frg_layout_mn = upcast(_with_shape(right_inverse(self.layout_tv), self.tiler_mn), nt * v, "retile")
        av = self.atom.layout_ref_tv[1].size
        frg_layout_v = zipped_divide(logical_product(make_layout(v), right_inverse(frg_layout_mn)), make_layout(av))
        t_tensor = zipped_divide(lay, (make_layout(v), *[make_layout(s) for s in product_each(frg_layout_mn.shape)]))
        v_tensor = composition(t_tensor, (frg_layout_v, None))
        return slice_(v_tensor, (None, (0,) + (None,) * (r - 1))) if r > 1 else slice_(v_tensor, (None, 0))

    def get_slice(self, thr_idx: int) -> ThrCopy:
        _check_thread_index(thr_idx, self.size)
        return ThrCopy(self, thr_idx)

    get_thread_slice = get_slice

    def __repr__(self):
        return f"TiledCopy({self.atom}, layout_tv={self.layout_tv}, tiler_mn={self.tiler_mn})"


class ThrCopy:
    """One thread's view of a TiledCopy (CuTe's ``ThrCopy``)."""

    def __init__(self, tiled: TiledCopy, thr_idx: int):
        self.tiled, self.thr_idx = tiled, thr_idx

    def _part(self, x, fn):
        thr = _thrfrg_of(x, fn)
        crd = (self.thr_idx, None, (None,) * (thr[2].rank if type(thr[2].shape) is tuple else 1))
        if isinstance(x, (Layout, ComposedLayout)):
            return slice_(thr, crd)
        return _tensor_slice(x, thr, crd)

    def partition_S(self, x):
        """This thread's (CopyV, CopyM, CopyN, ...) of a source layout or tensor."""
        return self._part(x, self.tiled.tidfrg_S)

    def partition_D(self, x):
        return self._part(x, self.tiled.tidfrg_D)

    def retile_S(self, x):
        """CuTe C++'s ``retile_S``/``retile_D`` and CuTe DSL's ``ThrCopy.retile``: a thread's fragment re-expressed
        per copy atom (``TiledCopy.retile``)."""
        return self.tiled.retile(x)

    retile_D = retile_S
    retile = retile_S   # CuTe DSL's name


def _check_copy_atom(atom, where):
    if not isinstance(atom, CopyAtom):
        raise TypeError(f"{where}: expected a copy atom (wb.copy_atom(...)), but got {type(atom).__name__}.")


def make_tiled_copy(atom: CopyAtom, thr_layout, val_layout=None) -> TiledCopy:
    """CuTe's ``make_tiled_copy(atom, thr_layout, val_layout)``: threads and values laid over an (M, N) tile."""
    _check_copy_atom(atom, "make_tiled_copy")
    thr_layout = make_layout(thr_layout) if type(thr_layout) in (tuple, int) else thr_layout
    val_layout = Layout(1, 0) if val_layout is None else val_layout
    val_layout = make_layout(val_layout) if type(val_layout) in (tuple, int) else val_layout
    tiler, layout_tv = make_layout_tv(thr_layout, val_layout)
    return TiledCopy(atom, layout_tv, tiler)


def _from_mma(atom, mma, where, tv, mn):
    _check_copy_atom(atom, where)
    if not isinstance(mma, TiledMMA):
        raise TypeError(f"{where}: expected a TiledMMA (wb.make_tiled_mma(...)), but got {type(mma).__name__}.")
    return TiledCopy(atom, tv, tuple(mma.get_tile_size(i) for i in mn))


def make_tiled_copy_A(atom: CopyAtom, mma: TiledMMA) -> TiledCopy:
    """CuTe's ``make_tiled_copy_A``: the copy that fills the MMA's A operand, over the (M, K) tile."""
    return _from_mma(atom, mma, "make_tiled_copy_A", mma.tv_layout_A_tiled if isinstance(mma, TiledMMA) else None, (0, 2))


def make_tiled_copy_B(atom: CopyAtom, mma: TiledMMA) -> TiledCopy:
    return _from_mma(atom, mma, "make_tiled_copy_B", mma.tv_layout_B_tiled if isinstance(mma, TiledMMA) else None, (1, 2))


def make_tiled_copy_C(atom: CopyAtom, mma: TiledMMA) -> TiledCopy:
    return _from_mma(atom, mma, "make_tiled_copy_C", mma.tv_layout_C_tiled if isinstance(mma, TiledMMA) else None, (0, 1))
