"""``from_cute``: what CuTe DSL builds while tracing (its static parts) as the workbench's objects.

Inside ``@cute.jit`` a CuTe DSL user writes ``views.append(wb.from_cute(tiled_mma))`` and draws it after.
Layouts, composed layouts, swizzles and identity tensors are read by ``workbench.layout.cute_text.from_cute_layout``
(duck-typed: nothing here imports ``cutlass``); this module adds tensors, MMA and copy atoms and the tiled ones.
An atom is found in the workbench's catalog by its CuTe DSL op and checked against the layouts CuTe DSL gives
(a mismatch raises: it would be a wrong object).  Dynamic values (known only at run time) are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import _element_types as et
from ..atoms import MMAAtom, TiledCopy, copy_atom, make_tiled_mma, mma_atom
from ..layout import Layout, complement, tiled_product
from ..layout.cute_text import from_cute_layout, is_cute_object

__all__ = ["from_cute", "as_workbench", "TracedTensor"]


@dataclass(frozen=True)
class TracedTensor:
    """A CuTe DSL memory tensor seen while tracing: its layout, element type, memory space and alignment (its
    address is a run-time value, so there is no memory here to read).  Views draw its layout."""

    layout: object
    element_type: et.ElementType
    memspace: str
    assumed_align: int | None

    def __str__(self):
        align = f", align<{self.assumed_align}>" if self.assumed_align else ""
        return f"tensor<ptr<{self.element_type.short}, {self.memspace}{align}> o {self.layout}>"


def _element_type(t, what):
    name = getattr(t, "__name__", None) or str(t)
    try:
        return et.by_name(name)
    except (KeyError, ValueError):
        raise ValueError(f"from_cute: {what} has the element type {name}, which the workbench has no type for.") from None


def _layout(x, what):
    out = from_cute_layout(x)
    if type(out) is not Layout:
        raise TypeError(f"from_cute: expected a layout for {what}, but got {out}.")
    return out


def _same_function(a, b):
    return a.size == b.size and (a.size == 0 or bool((a.offsets() == b.offsets()).all()))


def _check(ours, theirs, what, name):
    if not _same_function(ours, theirs):
        raise ValueError(f"from_cute: the workbench's {name} has {what} {ours}, CuTe DSL's is {theirs}; "
                         f"they differ as functions (please report this).")


_MMA_CODES = {et.Float16: "F16", et.BFloat16: "BF16", et.Float32: "F32", et.Float64: "F64", et.Int8: "S8",
              et.Uint8: "U8", et.Int32: "S32", et.Float8E4M3FN: "E4M3", et.Float8E5M2: "E5M2"}


def _mma_atom(op, thr_id, mnk, a, b, c):
    kind = type(op).__name__
    mnk = tuple(int(v) for v in mnk)
    if kind == "MmaUniversalOp":
        t = _element_type(op.abacc_dtype, "MmaUniversalOp")
        atom = mma_atom("UniversalFMA", t)
    elif ".warpgroup" in type(op).__module__ and hasattr(op, "a_src"):   # SM90 GMMA (wgmma)
        atom = _gmma_atom(op, mnk)
    elif kind == "MmaF16BF16Op" and ".warp." in type(op).__module__ + ".":
        ab, acc = _element_type(op.ab_dtype, kind), _element_type(op.acc_dtype, kind)
        m, n, k = mnk
        name = f"SM80_{m}x{n}x{k}_{_MMA_CODES[acc]}{_MMA_CODES[ab]}{_MMA_CODES[ab]}{_MMA_CODES[acc]}_TN"
        try:
            atom = mma_atom(name)
        except ValueError:
            atom = None
    else:
        atom = None
    if atom is None:   # an op the catalog does not name: the atom as CuTe DSL lays it out, named generically
        return MMAAtom("MMA_Atom", mnk, thr_id, a, b, c, (None,) * 4, None)
    for what, ours, theirs in (("thr_id", atom.thr_id, thr_id), ("tv_layout_A", atom.tv_layout_A, a),
                               ("tv_layout_B", atom.tv_layout_B, b), ("tv_layout_C", atom.tv_layout_C, c)):
        _check(ours, theirs, what, atom.name)
    return atom


def _gmma_atom(op, mnk):
    """The SM90 GMMA atom of a CuTe DSL warpgroup op: SM90_64xNxK_<D><A><B>_<SS|RS>[_TN], with its majors."""
    a, b = _element_type(op.a_dtype, "the GMMA op"), _element_type(op.b_dtype, "the GMMA op")
    d = _element_type(op.acc_dtype, "the GMMA op")
    codes = {**_MMA_CODES, et.Float32: "TF32" if a is et.Float32 else "F32"}
    src = "RS" if "RMEM" in str(op.a_src).upper() else "SS"
    m, n, k = mnk
    base = f"SM90_{m}x{n}x{k}_{_MMA_CODES[d]}{codes[a]}{codes[b]}_{src}"
    majors = {"major_a": "MN" if str(op.a_major_mode).endswith("MN") else "K",
              "major_b": "MN" if str(op.b_major_mode).endswith("MN") else "K"}
    for name in (base, base + "_TN"):
        try:
            return mma_atom(name, **majors)
        except ValueError:
            continue
    return None


def _copy_atom(op, vt, src, dst):
    kind = type(op).__name__
    bits = src[1].size * vt.bits
    if kind == "LdMatrix8x8x16bOp":
        n = int(op.num_matrices)
        name = f"SM75_U16x{2 * n}_LDSM_T" if op.transpose else f"SM75_U32x{n}_LDSM_N"
    elif kind == "StMatrix8x8x16bOp":
        n = int(op.num_matrices)
        name = f"SM90_U16x{2 * n}_STSM_T" if op.transpose else f"SM90_U32x{n}_STSM_N"
    elif kind == "CopyUniversalOp":
        name = f"UniversalCopy_U{bits}"
    elif kind == "CopyG2SOp":
        mode = "GLOBAL" if "GLOBAL" in str(getattr(op, "cache_mode", "")) else "ALWAYS"
        name = f"SM80_CP_ASYNC_CACHE{mode}_U{bits}"
    else:
        raise ValueError(f"from_cute: the copy op {kind} has no atom in the workbench's catalog (accepted: "
                         f"LdMatrix8x8x16bOp, StMatrix8x8x16bOp, CopyUniversalOp, cpasync.CopyG2SOp).")
    atom = copy_atom(name, vt)
    _check(atom.layout_src_tv, src, "layout_src_tv", name)
    _check(atom.layout_dst_tv, dst, "layout_dst_tv", name)
    return atom


def _atom_layout(thr_id, vmnk):
    """make_tiled_mma's atom layout: the (M,N,K) modes of ThrLayoutVMNK = tiled_product(thr_id, atom_layout)."""
    modes = [vmnk[i] for i in range(1, 4)]
    comp = complement(thr_id, thr_id.size * max(1, vmnk.size) * 64)
    offs = {int(o): i for i, o in enumerate(comp.offsets())}

    def back(d):
        if type(d) is tuple:
            return tuple(back(e) for e in d)
        return 0 if d == 0 else offs[d]
    atom_layout = Layout(tuple(m.shape for m in modes), tuple(back(m.stride) for m in modes))
    if not _same_function(tiled_product(thr_id, atom_layout), vmnk):
        raise ValueError(f"from_cute: the TiledMma's thr_layout_vmnk {vmnk} is not tiled_product(thr_id, atom_layout).")
    return atom_layout


def from_cute(x):
    """The workbench's object for a CuTe DSL object built while tracing (inside ``@cute.jit``): ``Layout``,
    ``ComposedLayout``, ``Swizzle``, identity layouts and tensors, memory tensors (a :class:`TracedTensor`),
    ``MmaAtom``, ``CopyAtom``, ``TiledMma``, ``TiledCopy``.  Equal as functions and in hierarchy to what CuTe DSL
    prints.  A dynamic value (``Int32(?)``) raises ValueError: it exists only at run time."""
    if not is_cute_object(x):
        raise TypeError(f"from_cute: expected a CuTe DSL object (cute.Layout, cute.ComposedLayout, a TiledMma ...), "
                        f"but got {type(x).__name__}.")
    kind = type(x).__name__
    if kind in ("MmaAtom", "TiledMma"):
        thr = _layout(x.thr_id, "thr_id")
        atom = _mma_atom(x.op, thr, x.shape_mnk, _layout(x.tv_layout_A, "tv_layout_A"),
                         _layout(x.tv_layout_B, "tv_layout_B"), _layout(x.tv_layout_C, "tv_layout_C"))
        if kind == "MmaAtom":
            return atom
        vmnk = _layout(x.thr_layout_vmnk, "thr_layout_vmnk")
        perm = tuple(None if p is None else from_cute_layout(p) for p in x.permutation_mnk)
        tiled = make_tiled_mma(atom, _atom_layout(atom.thr_id, vmnk), perm)
        for f in ("tv_layout_A_tiled", "tv_layout_B_tiled", "tv_layout_C_tiled"):
            _check(getattr(tiled, f), _layout(getattr(x, f), f), f, repr(tiled))
        return tiled
    if kind in ("CopyAtom", "TiledCopy"):
        vt = _element_type(x.value_type, kind)
        atom = _copy_atom(x.op, vt, _layout(x.layout_src_tv, "layout_src_tv"), _layout(x.layout_dst_tv, "layout_dst_tv"))
        if kind == "CopyAtom":
            return atom
        tiler = tuple(from_cute_layout(t) for t in x.tiler_mn)
        tiler = tuple(t.shape if type(t) is Layout and t.stride == 1 and type(t.shape) is int else t for t in tiler)
        return TiledCopy(atom, _layout(x.layout_tv_tiled, "layout_tv_tiled"), tiler)
    if kind.endswith("Tensor") and type(x.iterator).__name__.endswith("Pointer"):   # a memory tensor
        it = x.iterator
        return TracedTensor(from_cute_layout(x.layout), _element_type(x.element_type, "the tensor"),
                            str(getattr(x.memspace, "name", x.memspace)), getattr(it, "alignment", None))
    return from_cute_layout(x)


def as_workbench(x):
    """``from_cute(x)`` for a CuTe DSL object, ``x`` itself otherwise: the one hook the views call."""
    return from_cute(x) if is_cute_object(x) else x
