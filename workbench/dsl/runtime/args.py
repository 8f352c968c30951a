"""Kernel arguments: how each one is described in a specialization key and passed at launch.

* a wb.Tensor: element type, memory space, the layout's static values and dynamic markers
  (``('?', width, divisibility)``), assumed alignment.  Static modes become compile-time constants,
  dynamic modes kernel parameters.
* any other ``__dlpack__`` object (torch, cupy, numpy...): converted implicitly as CuTe DSL does,
  ``wb.from_dlpack(x).mark_layout_dynamic()``.
* a wb.Pointer (``wb.make_ptr``): element type, memory space, alignment (the bypass: no layout).
* a Python int (Int32, or Int64 when it does not fit), float (Float32), bool; numpy scalars by dtype.
* a parameter annotated ``wb.Constexpr``: its value is part of the key and compiled in.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from ..._element_types import Boolean, ElementType, Float32, Int32, Int64, by_name
from ..._tensor import Pointer, Tensor, from_dlpack, mark_stride_divisibility
from ...layout import Dyn, Layout
from ...layout.inttuple import flatten
from .. import ir
from ..names import c_name
from . import _launch

_I32 = (-(1 << 31), (1 << 31) - 1)


class TensorSpec:
    __slots__ = ("etype", "memspace", "shape", "stride", "align", "key")

    def __init__(self, etype, memspace, shape, stride, align):
        self.etype, self.memspace, self.shape, self.stride, self.align = etype, memspace, shape, stride, align
        self.key = ("T", etype.name, memspace, shape, stride, align)

    def __str__(self):
        return f"{self.etype.name}@{self.memspace} o {_fmt(self.shape)}:{_fmt(self.stride)} align={self.align}"


class PointerSpec:
    __slots__ = ("etype", "memspace", "align", "key")

    def __init__(self, etype, memspace, align):
        self.etype, self.memspace, self.align = etype, memspace, align
        self.key = ("P", etype.name, memspace, align)

    def __str__(self):
        return f"Ptr<{self.etype.name}@{self.memspace} align={self.align}>"


class ScalarSpec:
    __slots__ = ("etype", "key")

    def __init__(self, etype):
        self.etype = etype
        self.key = ("S", etype.name)

    def __str__(self):
        return self.etype.name


class TmaSpec:
    """A TMA descriptor argument (wb.make_tma_load): its box, element type and memory space are the
    specialization; the descriptor's 128 bytes are the parameter."""

    __slots__ = ("key", "box", "etype", "memspace", "smem_layout")

    def __init__(self, tma):
        self.key, self.box, self.etype, self.memspace = tma._key, tma.box, tma.element_type, tma.memspace
        self.smem_layout = tma.box.smem_layout

    def __str__(self):
        return f"tma<{self.etype} box {self.box.box}>"


def const_key(v):
    """A Constexpr value as a cache key that tells apart what == confuses: (7, 2) vs (7.0, 2.0) vs
    (7, True), 0.0 vs -0.0; floats by their bits (so a NaN is one key, not a new kernel per call)."""
    t = type(v)
    if t is tuple:
        return ("tuple", tuple(const_key(e) for e in v))
    if t is float:
        return ("float", v.hex())
    return (t.__name__, v)


class ConstSpec:
    __slots__ = ("value", "key")

    def __init__(self, value):
        self.value = value
        try:
            hash(value)
        except TypeError:
            raise TypeError(f"Expected a hashable Constexpr value (int, float, bool, tuple, Layout), but got {type(value).__name__}.") from None
        self.key = ("C", const_key(value))

    def __str__(self):
        return f"Constexpr={self.value!r}"


def _fmt(t):
    if type(t) is tuple and (len(t) != 3 or t[0] != "?"):
        return "(" + ",".join(_fmt(e) for e in t) + ")"
    if type(t) is tuple:
        return repr(Dyn(None, t[1], t[2]))
    return str(t)


def _scalar_type(v):
    t = type(v)
    if t is bool or t is np.bool_:
        return Boolean
    if t is int:
        return Int32 if _I32[0] <= v <= _I32[1] else Int64
    if t is float:
        return Float32
    if isinstance(v, np.generic):
        try:
            return by_name({"float32": "Float32", "float64": "Float64", "int32": "Int32", "int64": "Int64",
                            "uint32": "Uint32", "uint64": "Uint64", "int16": "Int16", "int8": "Int8",
                            "uint8": "Uint8", "uint16": "Uint16"}[v.dtype.name])
        except KeyError:
            pass
    return None


ALIGN_KEY = 16   # bytes: _launch.c's ALIGN_KEY
# the kinds of launcher spec tuple: _launch.c's enum, exported by the extension (one definition)
SpecKind = IntEnum("SpecKind", _launch.SPEC_KINDS)


def normalize(arg):
    """Framework tensors become wb.Tensors (from_dlpack + mark_layout_dynamic), as in CuTe DSL, with one departure:
    alignment is part of the specialization key, as in Triton.  A tensor whose data starts at a multiple of 16
    bytes is taken with ``assumed_align=16`` (so cp.async and 128-bit copies of it are proven without the user
    writing it); another gets its element's natural alignment and its own specialization.  Likewise its dynamic
    strides are marked divisible by 16 bytes where they all are (``mark_stride_divisibility``), so tiles whose rows
    start 16-byte aligned are proven so.  (CuTe DSL assumes the natural alignment and divisibility 1 unless told.)"""
    t = type(arg)
    if t is Tensor or t is Pointer or t is int or t is float or t is bool:
        return arg
    if hasattr(arg, "__dlpack__") and not isinstance(arg, np.generic):
        x = from_dlpack(arg)
        addr = x.iterator.address
        if x.assumed_align < ALIGN_KEY and addr and addr % ALIGN_KEY == 0:
            x = from_dlpack(arg, assumed_align=ALIGN_KEY)
        shape, stride = x.shape, x.stride
        ones = [i for i, d in enumerate(stride) if d == 1]
        # several stride-1 modes, all of extent <= 1 (a 1x1 array): any is the leading one; mark_layout_dynamic asks
        # which (as CuTe DSL), a tensor passed straight in takes the last, as _launch.c's check_modes does
        ld = ones[-1] if len(ones) > 1 and all(shape[i] <= 1 for i in ones) else None
        return mark_stride_divisibility(x.mark_layout_dynamic(ld), ALIGN_KEY)
    return arg


def spec_of(arg, constexpr: bool, pname: str):
    if constexpr:
        return ConstSpec(arg)
    t = type(arg)
    if t is Tensor:
        sig = arg.kernel_signature()
        return TensorSpec(arg.element_type, arg.memspace, sig[0], sig[1], arg.assumed_align)
    if t is Pointer:
        return PointerSpec(arg.element_type, arg.memspace, arg.assumed_align)
    st = _scalar_type(arg)
    if st is not None:
        return ScalarSpec(st)
    from ..ops.tma import TmaLoad
    if t is TmaLoad:
        return TmaSpec(arg)
    raise TypeError(f"Expected a tensor (wb.Tensor or any __dlpack__ object), a wb.Pointer, an int, float or bool for "
                    f"kernel argument '{pname}', but got {t.__name__}.")



def pack_format(params) -> str:
    """struct format of the parameter buffer: one 8-byte slot per kernel parameter, 16 for a TMA descriptor."""
    return "<" + "".join("Q" if p.kind == "ptr" else "128s" if p.kind == "tma" else p.etype.pack for p in params)


def bind(names, specs, constexpr_names):
    """Kernel-side values for the parameters, and the IR parameter list (with how to read each value)."""
    from ..frontend import KPointer
    from ..views import KTensor
    env, params = {}, []
    used: set = set()     # C names: the parameters' own first, then their dynamic extents (names.c_name)
    cname = {n: c_name(n, used) for n, s in zip(names, specs) if type(s) is not ConstSpec}
    for i, (n, s) in enumerate(zip(names, specs)):
        if type(s) is ConstSpec:
            v = s.value
            if type(v) is Layout and not v.is_static:
                raise ValueError(f"Expected a static layout for Constexpr parameter '{n}', but got {v}.")
            env[n] = v
        elif type(s) is ScalarSpec:
            var = ir.Var(cname[n], s.etype, 1)
            params.append(ir.Param(cname[n], "scalar", s.etype, var=var, arg_index=i, source=("scalar", i)))
            env[n] = var
        elif type(s) is TmaSpec:
            from ..ops.tma import KTma
            params.append(ir.Param(cname[n], "tma", s.etype, arg_index=i, source=("tma", i)))
            env[n] = KTma(params[-1], s.box, s.etype)
        elif type(s) is PointerSpec:
            buf = ir.Buffer(cname[n], s.etype, "gmem", s.align, param=i)
            params.append(ir.Param(cname[n], "ptr", s.etype, buf=buf, arg_index=i, source=("ptr", i)))
            env[n] = KPointer(buf)
        else:
            buf = ir.Buffer(cname[n], s.etype, "gmem", s.align, param=i)
            params.append(ir.Param(cname[n], "ptr", s.etype, buf=buf, arg_index=i, source=("ptr", i)))

            def leaves(tree, what, n=n, i=i):
                flat = list(flatten(tree)) if type(tree) is tuple else [tree]
                out = []
                for k, x in enumerate(flat):
                    if isinstance(x, tuple):   # ("?", width, div)
                        et = Int64 if x[1] == 64 else Int32
                        var = ir.Var(c_name(f"{cname[n]}_{what}{k}", used), et, x[2])
                        params.append(ir.Param(var.name, "scalar", et, var=var, arg_index=i, source=(what, i, k)))
                        out.append(var)
                    else:
                        out.append(x)
                return out
            shp = _unflat(leaves(_dyn_as_leaf(s.shape), "shape"), s.shape)
            std = _unflat(leaves(_dyn_as_leaf(s.stride), "stride"), s.stride)
            env[n] = KTensor(buf, 0, Layout(shp, std))
    return env, params


def _dyn_as_leaf(t):
    """A signature marks a dynamic leaf with a ('?', w, d) tuple: make flatten treat it as a leaf."""
    if type(t) is tuple and not (len(t) == 3 and t[0] == "?"):
        return tuple(_dyn_as_leaf(e) for e in t)
    return _Leaf(t) if type(t) is tuple else t


class _Leaf(tuple):
    pass


def _unflat(flat, profile):
    it = iter(flat)

    def build(p):
        if type(p) is tuple and not (len(p) == 3 and p[0] == "?"):
            return tuple(build(e) for e in p)
        return next(it)
    return build(profile)


_ = ElementType
