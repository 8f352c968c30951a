"""CuTe's layout algebra, derived step by step: ``explain(op, *args)``.

Each step names an intermediate of CuTe's definition of ``op`` (``B*``, ``(B, B*)``, ``A ∘ (B, B*)``, ...),
states it as one formula with the actual layouts, and holds its value.  Every value is computed by
calling this core's own functions on the parts (composition, complement, coalesce, filter_, select,
append, the divides and products): the explanation re-implements no operation.  The core op is called
first, so a refusal is the core's own error; the last step's value is the core op's result, and the
derivation is checked against it as a function (:class:`ExplainInternalError` if they ever differ).

Notation (CuTe's docs, 02_layout_algebra.md): ``s:d`` a layout, ``∘`` composition, ``A / d`` the layout of
every d-th element of A, ``L % s`` its first s elements, ``B*`` a complement, ``⊘`` the logical divide,
``⊗`` the logical product, ``<L0,L1>`` a tiler by mode, ``_`` a mode a tiler keeps, ``X[k]`` mode k of X.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

from . import inttuple as it
from .algebra import (
    LayoutAlgebraError,
    _rest_shape,
    append,
    coalesce,
    complement,
    composition,
    filter_,
    flatten,
    nullspace,
    recast_layout,
    select,
)
from .cute_text import from_cute_layout, is_cute_object, parse_layout
from .layout import Layout, compact_col_major, cosize, crd2idx, idx2crd, make_layout
from .tiling import (
    _divide_cotarget,
    blocked_product,
    flat_divide,
    flat_product,
    logical_divide,
    logical_product,
    raked_product,
    tiled_divide,
    tiled_product,
    zipped_divide,
    zipped_product,
)
from .values import Symbolic, ceil_div, known_value

__all__ = ["explain", "Explanation", "Step", "ExplainInternalError", "OPERATIONS"]

# name -> (core function, (required, optional) parameter names); composition's B and the divides' tilers
# may be tuples by mode, complement's M an int or a shape
OPERATIONS = {
    "composition": (composition, ("A", "B"), ()),
    "complement": (complement, ("A",), ("M",)),
    "logical_divide": (logical_divide, ("A", "B"), ()),
    "zipped_divide": (zipped_divide, ("A", "B"), ()),
    "tiled_divide": (tiled_divide, ("A", "B"), ()),
    "flat_divide": (flat_divide, ("A", "B"), ()),
    "logical_product": (logical_product, ("A", "B"), ()),
    "zipped_product": (zipped_product, ("A", "B"), ()),
    "tiled_product": (tiled_product, ("A", "B"), ()),
    "flat_product": (flat_product, ("A", "B"), ()),
    "blocked_product": (blocked_product, ("A", "B"), ()),
    "raked_product": (raked_product, ("A", "B"), ()),
    "nullspace": (nullspace, ("A",), ()),
    "recast_layout": (recast_layout, ("new_type_bits", "old_type_bits", "A"), ()),
}
_ENUMERATED = 1 << 20   # equality as functions enumerates up to this size, then samples evenly
_SAMPLES = 4097


class ExplainInternalError(RuntimeError):
    """The derivation disagrees with the core op: a bug in this module, never a property of the operands."""


@dataclass(frozen=True)
class Step:
    """One intermediate: ``name`` (``"B*"``), ``formula`` (``"B* = complement(B, size(A)) = ... = (2,3):(1,8)"``,
    the name first and the value last), ``value`` (a Layout or an int) and ``why`` (CuTe's reason, one sentence)."""

    name: str
    formula: str
    value: object
    why: str


@dataclass(frozen=True)
class Explanation:
    """``op`` (its name), ``args`` (as the op took them, layout strings parsed), ``steps`` and ``result``
    (the core op's result, equal to the last step's value)."""

    op: str
    args: tuple
    steps: tuple
    result: object

    def step(self, name: str) -> Step:
        """The step called ``name``."""
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(f"Expected one of the steps {', '.join(repr(s.name) for s in self.steps)}, but got {name!r}.")

    def __iter__(self):
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def __str__(self) -> str:
        params = _params(self.op, len(self.args))
        given = ", ".join(f"{p} = {it.format_inttuple(a) if p == 'c' else _fmt(a)}" for p, a in zip(params, self.args))
        lines = [f"{self.op}({', '.join(params)}) with {given}"]
        w = len(str(len(self.steps)))
        for k, s in enumerate(self.steps, 1):
            lines.append(f"{k:>{w}}. {s.formula}")
            lines.append(f"{'':>{w}}  {s.why}")
        lines.append(f"result: {_fmt(self.result)}")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_pretty_(self, p, cycle) -> None:   # IPython's pretty printer, without importing it
        p.text(str(self))


# -- the entry point -------------------------------------------------------------------------
def explain(op, *args) -> Explanation:
    """Derive ``op(*args)`` step by step, as CuTe defines it.

    ``op`` is one of the core functions (``wb.composition``, ``wb.complement``, the divides and the products,
    ``wb.nullspace``, ``wb.recast_layout``) or its name, or ``"evaluate"`` for ``L(c)`` (a Layout or an F2 layout at
    a coordinate or index: ``wb.explain("evaluate", wb.make_f2_layout((8, 8), ([8, 17, 34], 1)), (3, 5))``); ``args`` are what the op takes (layouts or CuTe strings such as ``"(4,2):(2,1)"``, ints, tilers by
    mode).  Returns an :class:`Explanation` whose ``result`` is the core op's result.
    """
    if op == "evaluate":   # L(c): a coordinate's offset, for a Layout or an F2 (XOR-strided) layout
        return _explain_evaluate(*args)
    name = _op_name(op)
    fn, required, optional = OPERATIONS[name]
    if not len(required) <= len(args) <= len(required) + len(optional):
        raise TypeError(f"explain({name}, ...): expected the arguments {name}({', '.join(_params(name, 9))}), "
                        f"but got {len(args)} argument{'s' if len(args) != 1 else ''}.")
    # layout strings in layout positions (complement's M is a count or a shape)
    args = tuple(_parse(it.check_nesting(x, "tuple")) if k == 0 or name != "complement" else x
                 for k, x in enumerate(args))
    result = fn(*args)   # the core decides first: a refusal is its own error, unchanged
    out = _Steps(name)
    if name == "recast_layout":
        _recast(out, *args)
        return _finish(name, args, out, result)
    A = _operand(args[0], name)
    if name == "nullspace":
        _nullspace(out, A)
    elif name == "complement":
        _complement(out, A, args[1] if len(args) > 1 else None, "A")
    else:
        B = _tiler(args[1], name)
        if name == "composition":
            _composition(out, A, B, "A", "B")
        elif name in ("logical_divide", "logical_product"):
            _LOGICAL[name](out, A, B, "A", "B")
        elif name in ("blocked_product", "raked_product"):
            _rank_product(out, name, A, B)
        else:
            _regroup(out, name, A, B)
    return _finish(name, args, out, result)


def _finish(name, args, out, result) -> Explanation:
    last = out.steps[-1].value
    if not _same_function(last, result):
        raise ExplainInternalError(f"explain({name}): the last step gives {_fmt(last)}, but wb.{name} gives "
                                   f"{_fmt(result)}; this is a bug in workbench.layout.explanation.")
    return Explanation(name, args, tuple(out.steps), result)


# -- nullspace, recast_layout, evaluation ---------------------------------------------------------
def _nullspace(out, A) -> None:
    """N: the flat modes of stride 0, each with the index stride of its coordinate (compact column-major)."""
    F = flatten(A)
    out.add("flat(A)", [f"flatten({A})"], F, "Each flat mode is one digit of the 1-D index (colexicographic).")
    shp = F.shape if type(F.shape) is tuple else (F.shape,)
    std = F.stride if type(F.stride) is tuple else (F.stride,)
    I = out.add("I", [f"compact_col_major({it.format_inttuple(F.shape)})"],
                Layout(F.shape, compact_col_major(F.shape)),
                "The index stride of each flat mode: how far the 1-D index moves when its coordinate moves by 1.")
    istd = I.stride if type(I.stride) is tuple else (I.stride,)
    keep = [k for k, d in enumerate(std) if type(d) is int and d == 0]
    derived = (Layout(tuple(shp[k] for k in keep), tuple(istd[k] for k in keep)) if len(keep) > 1 else
               Layout(shp[keep[0]], istd[keep[0]]) if keep else Layout(1, 0))
    which = ", ".join(str(k) for k in keep) or "none"
    out.final("N", [f"I at the stride-0 modes of A (flat modes {which})"], nullspace(A), derived,
              "A mode of stride 0 sends every coordinate to offset 0: its indices, at their index strides, are the "
              "indices A maps to 0 (1:0 when there are none).")


def _recast(out, new_bits, old_bits, A) -> None:
    """recast = downcast<den>(upcast<num>(A)) with new/old = num/den in lowest terms."""
    from math import gcd

    g = gcd(new_bits, old_bits)
    num, den = new_bits // g, old_bits // g
    ratio = f"r = {new_bits}/{old_bits} = {num}/{den}"
    up_why = (f"Every stride divided by {num} (a stride-1 mode holds ceil(s/{num}) new elements; stride 0 stays; a "
              f"swizzle's base moves down by log2 {num}).")
    if den == 1:   # a wider type: upcast only
        out.final(f"upcast<{num}>(A)", [f"{ratio}; upcast<{num}>({A})"], recast_layout(new_bits, old_bits, A),
                  recast_layout(num, 1, A), up_why)
        return
    U = A
    if num > 1:
        U = out.add(f"upcast<{num}>(A)", [f"{ratio}; upcast<{num}>({A})"], recast_layout(num, 1, A), up_why)
        ratio = "U"
    out.final(f"downcast<{den}>({'U' if num > 1 else 'A'})", [f"{ratio}; downcast<{den}>({U})" if num == 1 else
                                                             f"downcast<{den}>({U})"],
              recast_layout(new_bits, old_bits, A), recast_layout(1, den, U),
              f"Every stride multiplied by {den} (a stride-1 mode holds s*{den} new elements; a swizzle's base moves "
              f"up by log2 {den}): the layout over {new_bits}-bit elements.")


def _explain_evaluate(L, c) -> Explanation:
    """L(c) step by step: the 1-D index, then (a Layout) the natural coordinate and the sum of coordinate times stride,
    or (an F2 layout) the index's bits and the XOR of their bases."""
    L = _parse(L)
    result = L(c)   # the core decides first
    out = _Steps("evaluate")
    i = out.add("i", [f"crd2idx({it.format_inttuple(c)}, {it.format_inttuple(L.shape)})"], crd2idx(c, L.shape),
                "The 1-D (colexicographic) index of the coordinate.")
    if getattr(L, "_is_f2", False):
        bits = [j for j in range(len(L.flat_bases)) if i >> j & 1]
        out.add("bits", [f"bits of {i} = 0b{i:b}"], ",".join(map(str, bits)) or "none",
                "An F2 layout's modes have power-of-two extents, so each bit of the index is one bit of one mode.")
        terms = " ^ ".join(f"B[{j}]" for j in bits) or "0"
        vals = " ^ ".join(str(L.flat_bases[j]) for j in bits) or "0"
        x = 0
        for j in bits:
            x ^= L.flat_bases[j]
        out.final("L(c)", [terms, vals], result, x,
                  "The offset is the XOR of the bases of the bits that are set (the layout is linear over GF(2)).")
    else:
        crd = idx2crd(i, L.shape)
        out.add("coordinate", [f"idx2crd({i}, {it.format_inttuple(L.shape)})"], it.format_inttuple(crd),
                "The natural coordinate: one digit per flat mode, in the radices of the shape.")
        cs, ds = it.flatten(crd), it.flatten(L.stride)
        terms = " + ".join(f"{a}*{d}" for a, d in zip(cs, ds))
        out.final("L(c)", [terms], result, sum(a * d for a, d in zip(cs, ds)),
                  "The offset is the inner product of the coordinate and the stride.")
    return Explanation("evaluate", (L, c), tuple(out.steps), result)


def _op_name(op) -> str:
    names = ", ".join(OPERATIONS)
    if isinstance(op, str):
        if op in OPERATIONS:
            return op
        raise ValueError(f"explain: expected op to be one of {names} (the function or its name), but got {op!r}.")
    for name, (fn, _, _) in OPERATIONS.items():
        if op is fn:
            return name
    if inspect.isroutine(op):
        raise ValueError(f"explain: expected op to be one of {names} (the function or its name), but got the "
                         f"function {getattr(op, '__name__', op)!r}, which explain does not derive.")
    raise TypeError(f"explain: expected op to be one of {names} (the function or its name), but got "
                    f"{type(op).__name__}.")


def _params(name: str, n: int) -> list:
    if name == "evaluate":
        return ["L", "c"]
    _, required, optional = OPERATIONS[name]
    return [*required, *optional][:max(n, len(required))]


def _parse(x):
    if isinstance(x, str):
        return parse_layout(x)
    if is_cute_object(x):   # a CuTe DSL layout, traced: its static values
        return from_cute_layout(x)
    if type(x) is tuple:
        return tuple(_parse(e) for e in x)
    return x


def _operand(x, op) -> Layout:
    """The left operand as a Layout: an int n is n:1, as the core reads it."""
    if type(x) is Layout:
        return x
    if type(x) is int or isinstance(x, Symbolic):
        return Layout(x, 1)
    raise TypeError(f"explain({op}): derives steps for wb.Layout operands (or layout strings), but got "
                    f"{type(x).__name__}; call wb.{op} directly for it.")


def _tiler(x, op):
    """A Layout, an int, a symbolic value, None or a tuple of them (checked: the core may accept more)."""
    if type(x) is tuple:
        return tuple(_tiler(e, op) for e in x)
    if x is None or type(x) is Layout or type(x) is int or isinstance(x, Symbolic):
        return x
    raise TypeError(f"explain({op}): derives steps for a Layout, an int, None or a tuple of them as the right "
                    f"operand, but got {type(x).__name__}; call wb.{op} directly for it.")


# -- steps and checks ------------------------------------------------------------------------
def _fmt(x) -> str:
    """CuTe notation: a layout as shape:stride, a tiler as <L0,L1>, None as _ ."""
    if type(x) is tuple:
        return "<" + ",".join(_fmt(e) for e in x) + ">"
    return "_" if x is None else str(x)


class _Steps:
    def __init__(self, op: str):
        self.op = op
        self.steps = []

    def add(self, name: str, chain: list, value, why: str):
        """Record ``name = chain[0] = chain[1] = ... = value`` (a link equal to the one before it is left out)."""
        links = [name]
        for x in [*chain, _fmt(value)]:
            if x != links[-1]:
                links.append(x)
        if len(links) == 1:
            links.append(_fmt(value))
        self.steps.append(Step(name, " = ".join(links), value, why))
        return value

    def final(self, name: str, chain: list, value, derived, why: str):
        """As add, for a value the core op returned: the derivation must give the same function."""
        self.check(name, derived, value)
        return self.add(name, chain, value, why)

    def check(self, name: str, derived, value) -> None:
        if not _same_function(derived, value):
            raise ExplainInternalError(f"explain({self.op}): the step {name!r} derives {_fmt(derived)}, but the core "
                                       f"gives {_fmt(value)}; this is a bug in workbench.layout.explanation.")

    def value(self, name: str):
        """The value of the latest step called ``name``."""
        return next(s.value for s in reversed(self.steps) if s.name == name)


def _same_function(x, y) -> bool:
    """Equal as functions of the 1-D index: same size and L(i) for every i (evenly sampled above 2^20)."""
    if type(x) is not Layout or type(y) is not Layout:
        return x == y
    if x == y:
        return True
    n, m = known_value(it.product(x.shape)), known_value(it.product(y.shape))
    if n is None or n != m:
        return False
    try:
        if n <= _ENUMERATED:
            return bool(np.array_equal(x.offsets(), y.offsets()))
        return all(x(i) == y(i) for i in np.unique(np.linspace(0, n - 1, _SAMPLES).astype(np.int64)).tolist())
    except ValueError:   # symbolic extents with no runtime value: only the same layout is known to be equal
        return False


def _modes(L: Layout) -> list:
    """The top-level modes (an integral layout is its own one mode)."""
    return [L[i] for i in range(L.rank)]


def _cat(layouts) -> Layout:
    """The layouts as the top-level modes of one layout (CuTe's make_layout(L0, L1, ...), one mode included)."""
    return Layout(tuple(x.shape for x in layouts), tuple(x.stride for x in layouts))


def _static(*xs) -> bool:
    return all(type(x) is int for x in xs)


# -- composition -----------------------------------------------------------------------------
def _divides_out(A, nA, d) -> bool:
    """Whether A / d (A ∘ ceil(size(A)/d):d) is defined: the step the derivation shows."""
    try:
        composition(A, Layout(ceil_div(nA, d), d))
    except LayoutAlgebraError:
        return False
    return True


def _composition(out, A, B, a, b) -> str:
    """Steps of A ∘ B; returns the name of the step holding the result."""
    if B is None:
        out.add(f"{a} ∘ _", [f"{A} ∘ _"], composition(A, None), "An underscore in a tiler keeps this mode as it is.")
        return f"{a} ∘ _"
    if type(B) is tuple:
        return _by_mode(out, composition, _composition, A, B, a, b, "∘",
                        "A tiler composes mode by mode, A ∘ <B0,B1> = (A[0] ∘ B0, A[1] ∘ B1); as in CuTe, A's modes "
                        "past the tiler are dropped (the divides keep them).", keep_rest=False)
    if type(B) is not Layout:
        B = Layout(B, 1)   # an int n is the tiler n:1
    Ac = out.add(f"coalesce({a})", [f"coalesce({A})"], coalesce(A),
                 "Composition reads A as a function of one index: coalescing keeps that function and merges modes.")
    nA = it.product(A.shape)
    leaves = list(zip(it.flatten(B.shape), it.flatten(B.stride)))
    one = len(leaves) == 1 and type(B.shape) is not tuple
    names, parts = [], []
    for i, (s, d) in enumerate(leaves):
        bi, di, si = (b, "d", "s") if one else (f"{b}_{i}", f"d_{i}", f"s_{i}")
        Bi = Layout(s, d)
        rname = f"{a} ∘ {b}" if one else f"{a} ∘ {bi}"
        Ri = composition(A, Bi)
        past = (f" {bi} reaches index {(s - 1) * d} ≥ size({a}) = {nA}: {a} continues along its last mode, as in CuTe."
                if _static(s, d, nA) and (s - 1) * d >= nA else "")
        if _static(d) and d == 0:
            # A ∘ s:0 = s:0
            out.add(rname, [f"{Ac} ∘ {Bi}"], Ri,
                    f"Stride 0: every coordinate of {bi} maps to {a}(0); the mode broadcasts.")
        elif _static(s) and s == 1:   # A ∘ 1:d = 1:0
            out.add(rname, [f"{Ac} ∘ {Bi}"], Ri, f"{bi} has one element, {a}(0) = 0: a mode of size 1.")
        elif _static(nA, d) and d >= nA:   # A / d leaves one element: A's last mode extended past size(A)
            out.add(rname, [f"{Ac} ∘ {Bi}"], Ri, f"Stride {d} ≥ size({a}) = {nA}: past index 0 every element lies "
                    f"beyond {a}, which continues along its last mode, as in CuTe.")
        elif not _divides_out(A, nA, d):
            out.add(rname, [f"{Ac} ∘ {Bi}"], Ri,
                    f"The divisibility conditions fail for {bi} (its stride does not divide {a}'s modes), yet CuTe's "
                    f"unchecked composition is {a} ∘ {bi} at every index of {bi}: CuTe's answer, checked.")
        else:
            n = ceil_div(nA, d)
            # A / d = A ∘ ceil(size(A)/d):d: A's shape divided by d from the left (shape_div), its strides scaled
            Ad = out.add(f"{a} / {di}", [f"{Ac} / {d}", f"{Ac} ∘ {n}:{d}"], composition(A, Layout(n, d)),
                         f"Divide out the stride: the elements of {a} at indices 0, {d}, {2 * d}, ..., "
                         f"⌈{nA}/{d}⌉ = {n} of them (stride divisibility: each mode of {a} and the stride left "
                         f"divide one another).")
            # A ∘ s:d = (A / d) % s: the first s elements of A / d, so the result is compatible with this mode of B
            out.add(rname, [f"({a} / {di}) % {si}", f"{Ad} % {s}", f"{Ac} ∘ {Bi}"], Ri,
                    f"Mod out the shape: keep the first {s} elements of {a} / {d} (shape divisibility: each kept "
                    f"mode divides {s} or holds all that is left).{past}")
        names.append(rname)
        parts.append(Ri)
    R = composition(A, B)
    if one:   # B is the one mode s:d: the step above is A ∘ B itself
        out.check(f"{a} ∘ {b}", parts[0], R)
        return f"{a} ∘ {b}"
    # A ∘ (B_0, B_1, ...) = (A ∘ B_0, A ∘ B_1, ...), in B's nesting
    cat = Layout(it.unflatten([p.shape for p in parts], B.shape), it.unflatten([p.stride for p in parts], B.stride))
    tname = _tuple_text(names, B.shape)
    out.add(tname, [_tuple_text([str(p) for p in parts], B.shape)], cat,
            "B is the concatenation of its modes and composition distributes over it, in B's nesting.")
    out.final(f"{a} ∘ {b}", [tname, f"{A} ∘ {B}"], R, cat,
              "R(i) = A(B(i)) for every index of B, and R has B's shape (compatible with B).")
    return f"{a} ∘ {b}"


def _tuple_text(items: list, profile) -> str:
    """Items nested as profile's leaves: ["x", "y", "z"] over (2,(3,4)) is "(x, (y, z))"."""
    nested = it.unflatten(items, profile)

    def show(t):
        return "(" + ", ".join(show(e) for e in t) + ")" if type(t) is tuple else t

    return show(nested)


def _by_mode(out, op, derive, A, B, a, b, sym, why, keep_rest=True) -> str:
    """A tuple tiler: each mode's own derivation, then the modes side by side (A's untiled modes kept by the divides
    and products, dropped by composition, as CuTe does)."""
    modes = _modes(A)
    names = [derive(out, m, t, f"{a}[{k}]", f"{b}[{k}]") for k, (m, t) in enumerate(zip(modes, B))]
    values = [out.value(n) for n in names]
    rest = modes[len(B):] if keep_rest else []
    names += [f"{a}[{k}]" for k in range(len(B), len(modes))] if keep_rest else []
    R = op(A, B)
    out.final(f"{a} {sym} {b}", [f"({', '.join(names)})", f"({', '.join(map(str, values + rest))})"], R,
              _cat(values + rest), why)
    return f"{a} {sym} {b}"


# -- complement ------------------------------------------------------------------------------
def _complement(out, A, M, a) -> str:
    """Steps of complement(A, M): A's modes sorted by stride, the hole below each, the repetition up to M."""
    R = complement(A, M)
    if M is None:
        m, mtext = cosize(A), f"M = cosize({a}) = {cosize(A)}, the default cotarget"
    elif type(M) is tuple:
        m, mtext = it.product(M), f"M = the shape {it.format_inttuple(M)}, divided mode by mode as CuTe does"
    else:
        m, mtext = M, f"M = {M}"
    F = out.add(f"filter({a})", [f"filter({A})"], filter_(A),
                "Only A's image matters: drop the modes that add no offsets (stride 0 or size 1), merge "
                "contiguous ones.")
    flat = flatten(F)
    leaves = [(s, d) for s, d in zip(it.flatten(F.shape), it.flatten(F.stride))
              if not ((type(s) is int and s == 1) or d == 0)]   # filter_ leaves 1:0 when A has no such mode
    order = sorted(range(len(leaves)), key=lambda i: leaves[i][1])   # modes by increasing stride d_0 < d_1 < ...
    if len(leaves) > 1:
        out.add(f"sort({a})", [f"{flat} sorted by stride"], select(flat, order),
                "The complement is where the copies of A start: it walks the gaps between A's modes from the "
                "smallest stride up (its offsets are not the ones A misses: complement(4:2, 24) = (2,3):(1,8) "
                "starts copies at 0, 1, 8, 9, 16, 17).")
    names, parts, cur, below, prev, rounded = [], [], 1, "", "", False
    for i, k in enumerate(order):
        # R_0 = d_0 : 1, R_i = (d_i / (s_{i-1} d_{i-1})) : (s_{i-1} d_{i-1}), the hole below mode i
        s, d = leaves[k]
        n = d // cur
        name = f"R_{i}"
        if i == 0:
            chain = [f"d_{i} : 1", f"{d} : 1"]
            why = (f"The hole below the smallest stride {d}: {n} offsets of stride 1." if n != 1 else
                   "No hole below the smallest stride 1.")
        else:
            chain = [f"(d_{i} / ({below})) : ({below})", f"({d} / ({prev})) : {cur}"]
            if _static(d, cur) and d % cur:
                rounded = True
                why = (f"{d} / {cur} is not an integer: rounded down to {n}, as CuTe and pycute do, so the "
                       f"complement is not disjoint from A past offset {n * cur}.")
            elif _static(n) and n == 1:
                why = f"No hole: stride {d} starts where the modes below it end ({cur})."
            else:
                why = f"The hole between the modes: {d} is a multiple of {cur} (CuTe's condition), {n} steps of {cur}."
        names.append(name)
        parts.append(out.add(name, chain, Layout(n, cur), why))
        below, prev = f"s_{i}·d_{i}", f"{s}·{d}"
        cur = s * d
    # R_n = ceil(M / (s_{n-1} d_{n-1})) : (s_{n-1} d_{n-1}), everything so far repeated up to M
    name = f"R_{len(order)}"
    # a shape cotarget is divided mode by mode (CuTe's ceil_div of a shape): the extents' product, not size(M)'s
    n = it.product(tuple(_rest_shape(M, cur))) if type(M) is tuple else ceil_div(m, cur)
    top = it.format_inttuple(M) if type(M) is tuple else m
    if order:
        chain = [f"⌈M / ({below})⌉ : ({below})", f"⌈{top} / ({prev})⌉ : {cur}"]
    else:
        chain = ["⌈M / 1⌉ : 1", f"⌈{top} / 1⌉ : 1"]
    past = (f"; {n}·{cur} = {n * cur} > {m}: the complement reaches past M (CuTe's ceil division)"
            if _static(m, cur) and n * cur > m else "")
    names.append(name)
    parts.append(out.add(name, chain, Layout(n, cur),
                         f"Repeat everything so far until the cotarget, {mtext}{past}."))
    if len(parts) > 1:
        tname = f"({', '.join(names)})"
        cat = out.add(tname, [f"({', '.join(map(str, parts))})"], _cat(parts),
                      "The gaps from the smallest stride up, then the repetition: ordered, and the copies of A "
                      "started there " + ("overlap where a gap was rounded down." if rounded else
                                          "do not overlap (together with A they tile the cotarget)."))
    else:
        tname, cat = names[0], parts[0]
    out.final(f"complement({a}, M)", [f"coalesce({tname})", f"coalesce({cat})"], R, coalesce(cat),
              "Coalesce drops the size-1 modes and merges contiguous ones: R is ordered (strides positive and "
              "increasing) and cosize((A, R)) ≥ M.")
    return f"complement({a}, M)"


# -- divides ---------------------------------------------------------------------------------
def _logical_divide(out, A, B, a, b) -> str:
    """Steps of A ⊘ B = A ∘ (B, B*) with B* = complement(B, size(A))."""
    if B is None:
        out.add(f"{a} ⊘ _", [str(A)], logical_divide(A, None), "An underscore in a tiler keeps this mode as it is.")
        return f"{a} ⊘ _"
    if type(B) is tuple:
        return _by_mode(out, logical_divide, _logical_divide, A, B, a, b, "⊘",
                        "A tiler divides mode by mode, A ⊘ <B0,B1> = (A[0] ⊘ B0, A[1] ⊘ B1), keeping A's other modes.")
    given = "" if type(B) is Layout else f" (the tiler {B} is the layout {B}:1)"
    B = B if type(B) is Layout else Layout(B, 1)
    n = _divide_cotarget(A)
    nt = it.format_inttuple(n)
    # B* = complement(B, shape(coalesce(A))): where the tiles start
    Bs = out.add(f"{b}*", [f"complement({b}, shape(coalesce({a})))", f"complement({B}, {nt})"], complement(B, n),
                 f"The layout of the tiles: where each copy of {b} starts (B picks indices of A, not offsets), so that "
                 f"{b} and its copies cover the indices of {a}, shape(coalesce({a})) = {nt}{given}.")
    n = it.product(n) if type(n) is tuple else n
    BB = make_layout(B, Bs)   # (B, B*): a tile, then tile after tile; size >= size(A) (ceil division)
    nBB = it.product(BB.shape)
    past = (f" size(({b}, {b}*)) = {nBB} > size({a}) = {n}: {b} does not divide {a}, so the last tile reaches past "
            f"{a} (CuTe's ceil division; predicate it with make_identity_tensor and elem_less)."
            if _static(nBB, n) and nBB > n else "")
    out.add(f"({b}, {b}*)", [f"({B}, {Bs})"], BB, f"Mode 0 walks one tile, mode 1 walks from tile to tile.{past}")
    # A ⊘ B = A ∘ (B, B*), checked against the core's logical_divide
    name = f"{a} ∘ ({b}, {b}*)"
    out.final(name, [f"{A} ∘ {BB}"], logical_divide(A, B), composition(A, BB),
              f"{a} ⊘ {b} = {a} ∘ ({b}, {b}*): mode 0 is the tile, {a} ∘ {b}; mode 1 iterates over the tiles.")
    return name


# -- products --------------------------------------------------------------------------------
def _logical_product(out, A, B, a, b) -> str:
    """Steps of A ⊗ B = (A, A* ∘ B) with A* = complement(A, size(A)·cosize(B))."""
    if B is None:
        out.add(f"{a} ⊗ _", [str(A)], logical_product(A, None), "An underscore in a tiler keeps this mode as it is.")
        return f"{a} ⊗ _"
    if type(B) is tuple:
        return _by_mode(out, logical_product, _logical_product, A, B, a, b, "⊗",
                        "A tiler multiplies mode by mode, A ⊗ <B0,B1> = (A[0] ⊗ B0, A[1] ⊗ B1), keeping A's other "
                        "modes.")
    B = B if type(B) is Layout else Layout(B, 1)
    nA, cB = it.product(A.shape), cosize(B)
    # A* = complement(A, size(A) cosize(B)): the repetitions of A that B may choose from
    As = out.add(f"{a}*", [f"complement({a}, size({a})·cosize({b}))", f"complement({A}, {nA}·{cB})"],
                 complement(A, nA * cB),
                 f"The layout of the repetitions of {a}: where each copy of {a} starts, so that {a} and its "
                 f"copies cover the offsets up to {nA}·{cB} = {nA * cB}.")
    AsB = out.add(f"{a}* ∘ {b}", [f"{As} ∘ {B}"], composition(As, B),
                  f"{b} picks which repetitions of {a} to use, in the order it gives: the layout of the tiles.")
    # A ⊗ B = (A, A* ∘ B), checked against the core's logical_product
    name = f"({a}, {a}* ∘ {b})"
    out.final(name, [f"({A}, {AsB})"], logical_product(A, B), make_layout(A, AsB),
              f"{a} ⊗ {b} = ({a}, {a}* ∘ {b}): mode 0 is {a} itself, mode 1 places its copies as {b} says.")
    return name


_LOGICAL = {"logical_divide": _logical_divide, "logical_product": _logical_product}
_FAMILY = {  # family -> (the logical op's derivation, its symbol, the zipped op)
    "divide": (_logical_divide, "⊘", zipped_divide),
    "product": (_logical_product, "⊗", zipped_product),
}
_FLAVOURS = {"zipped_divide": zipped_divide, "tiled_divide": tiled_divide, "flat_divide": flat_divide,
             "zipped_product": zipped_product, "tiled_product": tiled_product, "flat_product": flat_product}


def _regroup(out, op, A, B) -> None:
    """zipped/tiled/flat: the logical op (by mode for a tuple tiler), then its modes regrouped."""
    flavour, family = op.split("_")
    derive, sym, zipped = _FAMILY[family]
    lname = derive(out, A, B, "A", "B")
    Lg = out.value(lname)
    Z = zipped(A, B)
    zname = f"zipped_{family}(A, B)"
    if type(B) is not tuple:
        out.final(zname, [lname], Z, Lg, f"A layout tiler: A {sym} B already is (tile, rest), CuTe's zipped form.")
    else:
        # zip(L) = ((L[0][0], L[1][0], ...), (L[0][1], L[1][1], ..., A's untiled modes)) for L = A ⊘ B (or A ⊗ B);
        # a mode kept by _ is (1:0, A[k]), or (A[k][0], A[k][1]) when A[k] has rank 2 (CuTe's zip2_by reads it as a
        # (tile, rest) pair); a nested tiler's mode is itself zipped
        tiles, rests, tnames, rnames = [], [], [], []
        for k, (m, t) in enumerate(zip(_modes(A), B)):
            if t is None:
                pair = _modes(m) if type(m.shape) is tuple and len(m.shape) == 2 else [Layout(1, 0), m]
            else:
                pair = _modes(zipped(m, t)) if type(t) is tuple else _modes(Lg[k])
            tiles.append(pair[0])
            rests.append(pair[1])
            tnames.append(f"(A {sym} B)[{k}][0]")
            rnames.append(f"(A {sym} B)[{k}][1]")
        extra = _modes(A)[len(B):]
        rests += extra
        rnames += [f"A[{k}]" for k in range(len(B), len(B) + len(extra))]
        out.final(zname, [f"(({', '.join(tnames)}), ({', '.join(rnames)}))",
                          f"(({', '.join(map(str, tiles))}), ({', '.join(map(str, rests))}))"], Z,
                  _cat([_cat(tiles), _cat(rests)]),
                  "Zip: every mode's tile into mode 0 and every mode's rest, then A's untiled modes, into mode 1.")
    if flavour == "zipped":
        return
    R = _FLAVOURS[op](A, B)
    z0, z1 = Z[0], Z[1]
    # tiled: (Z[0], Z[1][0], Z[1][1], ...); flat: (Z[0][0], Z[0][1], ..., Z[1][0], Z[1][1], ...)
    if flavour == "tiled":
        parts, chain = [z0, *_modes(z1)], "(Z[0], Z[1][0], Z[1][1], ...)"
        why = "Unpack the rest: ((TileM,TileN), RestM, RestN, L, ...), so each rest mode can be indexed on its own."
    else:
        parts, chain = [*_modes(z0), *_modes(z1)], "(Z[0][0], Z[0][1], ..., Z[1][0], Z[1][1], ...)"
        why = "Unpack tile and rest: (TileM, TileN, RestM, RestN, L, ...), every mode at the top level."
    out.final(f"{op}(A, B)", [f"{chain} with Z = {zname}", f"({', '.join(map(str, parts))})"], R, _cat(parts), why)


def _rank_product(out, op, A, B) -> None:
    """blocked/raked: the 1-D logical product of A and B at one rank, then like modes paired (and, for raked,
    coalesced: CuTe 4.x leaves the blocked product's pairs as they are)."""
    raked = op == "raked_product"
    B = B if type(B) is Layout else Layout(B, 1)
    r = max(A.rank, B.rank)
    ops = []
    for x, name in ((A, "A"), (B, "B")):
        xp = append(x, up_to_rank=r)
        if r == 1 and type(x.shape) is not tuple:
            xp = select(x, 0)   # a rank-1 tuple: the product's modes keep one mode each
        if xp != x:
            out.add(f"{name}'", [f"append({name}, up_to_rank={r})" if r > 1 else f"({name})", f"({x})"], xp,
                    f"Rank-sensitive: both operands get rank {r} (a missing mode is 1:0), so like modes can pair up.")
            name += "'"
        ops.append((xp, name))
    (Ap, a), (Bp, b) = ops
    pname = _logical_product(out, Ap, Bp, a, b)
    P = out.value(pname)
    pa, pb = _modes(P[0]), _modes(P[1])   # blocked: ((P[0][i], P[1][i]))_i; raked: ((P[1][i], P[0][i]))_i
    pairs = [_cat([y, x] if raked else [x, y]) for x, y in zip(pa, pb)]
    zname = "(" + ", ".join(f"(P[1][{i}], P[0][{i}])" if raked else f"(P[0][{i}], P[1][{i}])" for i in range(r)) + ")"
    Zr = out.add(zname, [f"({', '.join(map(str, pairs))})"], _cat(pairs),
                 f"With P = {pname}, the step before: "
                 + ("each mode is (copy, element), so A's elements interleave across the copies (cyclic)."
                    if raked else "each mode is (element, copy), so every copy of A stays one contiguous block."))
    profile = it.format_inttuple((1,) * r)
    if not raked:
        out.final(f"{op}(A, B)", [zname, f"{Zr}"], blocked_product(A, B), Zr,
                  "CuTe 4.x (CuTe DSL 4.8.1, CUTLASS 4.2) keeps these pairs as they are: the blocked product is the "
                  "zip itself, uncoalesced, so each mode slices as (element, copy).")
        return
    out.final(f"{op}(A, B)", [f"coalesce({zname}, {profile})", f"coalesce({Zr}, {profile})"],
              (raked_product if raked else blocked_product)(A, B), coalesce(Zr, (1,) * r),
              f"Coalesce each mode on its own ({profile}): rank {r} in, rank {r} out.")
