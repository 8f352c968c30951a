"""What a ``@wb.kernel`` function may call, recognized by identity (Triton's ``@builtin``).

Three kinds of callables mean something inside a kernel:

* DSL builtins (``wb.thread_idx``, ``wb.sync_threads``, ``wb.shared_tensor``, ``wb.copy`` ...),
  defined here with :func:`builtin`: the decorated body *is* the in-kernel lowering (it gets the
  lowering context ``cx`` first); the public function raises when called from ordinary Python,
  where there is no thread, block or shared memory.
* Functions of other modules with an in-kernel meaning of their own (``wb.make_tensor`` on a
  pointer parameter, ``wb.elem_less`` as an IR and-chain), registered with :func:`lowers`.
* The layout core (every public function of ``workbench.layout``): run as is while tracing, on
  ints and IR expressions (which implement the core's integer protocol), as CuTe DSL does.

:func:`lowering` and :func:`is_trace_time` answer by identity, never by module or name.
"""

from __future__ import annotations

import functools
import inspect

from .. import layout as _layout
from .._element_types import ElementType
from .._tensor import make_tensor as _make_tensor
from ..layout import ComposedLayout, IdentityTensor, Layout, Swizzle, cosize, elem_less, make_layout
from ..layout.identity import elem_pairs
from . import ir
from .views import KPointer, KTensor

__all__ = ["thread_idx", "block_idx", "block_dim", "grid_dim", "shared_tensor", "make_fragment", "Constexpr",
           "range_dynamic", "static_group_count", "on_region_end",
           "Triple", "builtin", "lowers", "lowering", "is_trace_time"]

_LOWERINGS: dict = {}    # id(public function) -> (public function, lowering)


def builtin(lower):
    """Make ``lower(cx, *args, **kw)`` a kernel builtin: returns the public function (same name,
    docstring and signature without ``cx``) that raises outside kernels; the frontend finds the
    lowering by the public function's identity."""
    name = lower.__name__

    @functools.wraps(lower)
    def public(*args, **kw):
        raise RuntimeError(f"wb.{name}() only has a meaning inside a @wb.kernel function, but was called from Python.")

    sig = inspect.signature(lower)
    public.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])
    _LOWERINGS[id(public)] = (public, lower)
    return public


def lowers(fn):
    """Register the decorated ``lower(cx, *args, **kw)`` as fn's meaning inside kernels (fn keeps its meaning outside)."""
    def register(lower):
        _LOWERINGS[id(fn)] = (fn, lower)
        return lower
    return register


_REGION_END: list = []  # fn(cx) called as each block of kernel code ends (registered by op modules)


def on_region_end(fn):
    """Register ``fn(cx)``, called when a block of kernel code (a branch, a loop body, the kernel) has been lowered:
    an op module checks there that what the block opened is closed (the TMA byte announcements of mbarrier.py)."""
    _REGION_END.append(fn)
    return fn


def region_end(cx):
    """The frontend's call at the end of each block of code."""
    for fn in _REGION_END:
        fn(cx)


_METHODS: dict = {}     # (class, method name) -> lowering(cx, obj, *args, **kw)
ATOM_COPIES: dict = {}  # class of wb.copy's first of three arguments (a copy atom, a tiled copy) -> its lowering
ATTRIBUTES: dict = {}   # class -> attribute names a kernel may read (static values: layouts, sizes, types)


def method(cls, name):
    """Register the decorated ``lower(cx, obj, *args, **kw)`` as what ``obj.name(...)`` means in a kernel for
    objects of exactly ``cls`` (the atoms' partitions, a fragment's fill): the frontend finds it by the pair."""
    def register(lower):
        _METHODS[(cls, name)] = lower
        return lower
    return register


class BoundMethod:
    """``obj.name`` read inside a kernel, for a registered method: called, it lowers."""

    __slots__ = ("obj", "name", "lower")

    def __init__(self, obj, name, lower):
        self.obj, self.name, self.lower = obj, name, lower

    def __repr__(self):
        return f"<{type(self.obj).__name__}.{self.name}>"


def bound_method(obj, name):
    """The registered method ``name`` of obj as a BoundMethod, or None."""
    lower = _METHODS.get((type(obj), name))
    return None if lower is None else BoundMethod(obj, name, lower)


def lowering(f):
    """The in-kernel lowering of callable f, or None."""
    entry = _LOWERINGS.get(id(f))
    return entry[1] if entry is not None and entry[0] is f else None


_HOST_ONLY = {"Dyn", "Symbolic", "LayoutAlgebraError"}    # host-side values and the error class
_TRACE_TIME = {id(getattr(_layout, n)): getattr(_layout, n) for n in _layout.__all__
               if n not in _HOST_ONLY and callable(getattr(_layout, n))}


def is_trace_time(f) -> bool:
    """True for the layout core's functions (and classes): evaluated while tracing."""
    return _TRACE_TIME.get(id(f)) is f


class Triple:
    """thread_idx() & co: .x/.y/.z, indexable and unpackable."""

    __slots__ = ("vals",)

    def __init__(self, vals):
        self.vals = tuple(vals)


def _triple(which):
    return Triple(ir.Special(f"{which}.{c}") for c in "xyz")


# -- DSL builtins ------------------------------------------------------------------------------
@builtin
def thread_idx(cx):
    """The thread's index in its block: a triple with .x/.y/.z (unpacks as x, y, z)."""
    return _triple("threadIdx")


@builtin
def block_idx(cx):
    """The block's index in the grid (.x/.y/.z)."""
    return _triple("blockIdx")


@builtin
def block_dim(cx):
    """Threads per block (.x/.y/.z)."""
    return _triple("blockDim")


@builtin
def grid_dim(cx):
    """Blocks per grid (.x/.y/.z)."""
    return _triple("gridDim")


@builtin
def shared_tensor(cx, element_type, layout):
    """A __shared__ tensor of element_type laid out by a static layout (cosize elements), or by a swizzled one
    (``composition(wb.Swizzle(3, 3, 3), layout)``: offsets in elements, the buffer aligned to the swizzle's period,
    at least 128 bytes, so that the swizzle's bank pattern is the one drawn and wgmma/TMA see the same function).  Beyond 48 KiB in all, the kernel's shared tensors move to dynamic
    shared memory, which every launch then reserves.  ``wb.Float4E2M1FN`` tiles (kind::mxf4 operands) are packed two a
    byte, filled by TMA of their bytes and read by tcgen05.mma only (no element access)."""
    if type(element_type) is not ElementType or (element_type not in ir.STORAGE_TYPES
                                                 and element_type.name != "Float4E2M1FN"):
        raise TypeError(f"Expected an element type such as wb.Float32, but got {element_type!r}.")
    lay = layout if type(layout) in (Layout, ComposedLayout) else make_layout(layout)
    if not lay.is_static or (type(lay) is ComposedLayout and (type(lay.offset) is not int or type(lay.inner) is not Swizzle)):
        raise ValueError(f"Expected a static layout for shared memory (or a swizzle composed with one), but got {lay}.")
    # a swizzle reads absolute address bits: the buffer is aligned to its period (SW128: 1024 bytes), as
    # wgmma descriptors and TMA boxes need; tiles of 1 KiB or more are 128-byte aligned (a TMA destination)
    nbytes = cosize(lay) * element_type.bits // 8
    align = 128 if nbytes >= 1024 else 16
    if type(lay) is ComposedLayout:
        align = max(128, lay.inner.size * element_type.bits // 8)
    return KTensor(cx.declare_shared(element_type, cosize(lay), align=align), 0, lay)


@builtin
def make_fragment(cx, layout, element_type):
    """A per-thread tensor of element_type in registers, laid out by a static layout (CuTe DSL's
    ``cute.make_fragment(layout, dtype)``): what a thread loads into (``wb.copy`` from global or
    shared memory, vectorized where proven), computes on, and stores from."""
    if type(element_type) is not ElementType or element_type not in ir.STORAGE_TYPES:
        raise TypeError(f"Expected an element type such as wb.Float32, but got {element_type!r}.")
    lay = layout if type(layout) is Layout else make_layout(layout)
    if not lay.is_static:
        raise ValueError(f"Expected a static layout for a register fragment, but got {lay}.")
    if cosize(lay) > MAX_FRAGMENT_ELEMENTS:
        raise ValueError(f"Expected a register fragment of at most {MAX_FRAGMENT_ELEMENTS} elements (a thread has "
                         f"255 32-bit registers), but {lay} spans {cosize(lay)}.")
    return KTensor(cx.declare_local(element_type, cosize(lay)), 0, lay)


MAX_FRAGMENT_ELEMENTS = 256


def static_group_count(n, what):
    """The n of a wait_group instruction (cp.async, wgmma, bulk copies): an immediate in [0, 7]."""
    if type(n) is not int or not 0 <= n <= 7:
        raise ValueError(f"Expected a static group count in [0, 7] for {what}, but got {n!r}.")
    return n


# -- other functions with an in-kernel meaning ---------------------------------------------------------
@lowers(_make_tensor)
def _make_tensor_in_kernel(cx, ptr, layout):
    """wb.make_tensor(ptr, layout) on a pointer parameter: the tensor ptr[layout(c)]."""
    if type(ptr) is not KPointer:
        raise TypeError(f"Expected a pointer parameter (wb.make_ptr) for make_tensor inside a kernel, but got {ptr!r}.")
    return KTensor(ptr.buf, 0, layout if type(layout) is Layout else make_layout(layout))


@lowers(elem_less)
def _elem_less_in_kernel(cx, a, b):
    """CuTe's elem_less on kernel values: every coordinate entry below the matching extent (the core's
    pairs of a congruent coordinate and shape), one IR and-chain."""
    if isinstance(a, IdentityTensor) or isinstance(b, IdentityTensor):
        raise TypeError("Expected a coordinate and a shape for elem_less, but got an identity tensor; index it first.")
    acc = True
    for x, y in elem_pairs(a, b):
        c = ir.compare("<", x, y)
        if not isinstance(c, ir.Expr):
            if not c:
                return False
            continue
        acc = c if acc is True else ir.BinOp("&&", acc, c, ir.Boolean)
    return acc


def range_dynamic(*args):
    """``for i in wb.range_dynamic(start, stop, step)``: a loop the kernel runs, never unrolled while tracing, even
    when its bounds are static (CuTe DSL's ``cutlass.range``; a plain ``range`` with static bounds of at most 64
    iterations is unrolled, as ``cutlass.range_constexpr``).  Only a for loop's iterable."""
    raise RuntimeError("wb.range_dynamic() is only the iterable of a for loop inside a @wb.kernel function.")


class Constexpr:
    """Annotate a kernel parameter ``n: wb.Constexpr``: its value is compiled into the kernel
    (part of the specialization key) instead of being passed at launch."""
