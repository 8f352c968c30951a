"""Identifiers in generated code: the one place a user's name becomes a C++ and Python name.

Both backends print the IR's names verbatim, so a name must mean the same thing in CUDA C++ and in
the CPU executor's Python, and must not meet a name the backends use themselves.  The namespaces are
kept apart by construction, not by a list of known clashes:

* every name a backend makes up on its own (the executor's ``_tx``, ``_P``, ``_ix_a``, ``_cdiv``,
  the vectorized copy's ``_v0``) begins with ``_``; a user's name never does after :func:`c_name`
  (``_tx`` becomes ``u_tx``), and C++ reserves leading underscores anyway;
* every name derived from a user's (parameters, their dynamic extents ``a_shape0``, locals, shared
  and register arrays, temporaries) is allocated by :func:`c_name` from one set per kernel, so two
  can never be the same (a parameter ``x_shape0`` next to tensor ``x``: the extent is ``x_shape0_1``);
* a name that is a word of either language or that generated code refers to (C++ keywords, CUDA's
  built-in variables and the functions and types codegen emits, the Python built-ins the executor
  calls) gets a trailing ``_`` (``int`` -> ``int_``, ``threadIdx`` -> ``threadIdx_``).

A backend that starts emitting a new identifier other than ``_...`` adds it to ``EMITTED`` below.
"""

from __future__ import annotations

import keyword

# C++20 keywords and alternative tokens (any of them as a variable name breaks the translation unit)
CXX_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class
compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype
default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline
int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch template
this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t
while xor xor_eq restrict
""".split())

# identifiers generated code refers to (shadowing one with a local breaks the code after it): CUDA's
# built-in variables and types, the math functions codegen emits (float and double spellings), the
# vector types of 128-bit copies, and the Python built-ins the CPU executor's code calls
EMITTED = frozenset("""
threadIdx blockIdx blockDim gridDim warpSize dim3 uint1 uint2 uint3 uint4 half half2 nv_bfloat16
sqrt sqrtf exp expf log logf sin sinf cos cosf tan tanf tanh tanhf floor floorf ceil ceilf exp2 exp2f log2 log2f
rsqrt rsqrtf erf erff pow powf abs fabs fabsf llabs min max fmin fminf fmax fmaxf
range float int bool len None True False
""".split())

RESERVED = CXX_KEYWORDS | EMITTED | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)


def c_name(base: str, used: set | None = None, counters: dict | None = None) -> str:
    """``base`` as an identifier that is legal and means itself in CUDA C++ and in Python, outside the
    backends' ``_`` namespace and the reserved words, and (when ``used`` is given) not in ``used``;
    the result is added to ``used``.  Plain names (``a``, ``i``, ``a_shape0``) come back unchanged.  ``counters``
    (one dict per ``used``) remembers the last suffix of each name, so that a name bound again and again (an
    unrolled ``s = s + ...``) costs one probe, not one per earlier binding."""
    name = "".join(ch if ch.isascii() and (ch.isalnum() or ch == "_") else "_" for ch in base) or "t"
    if name[0].isdigit():
        name = "v" + name
    if name[0] == "_":
        name = "u" + name
    if name in RESERVED:
        name += "_"
    if used is None:
        return name
    n = counters.get(name, 0) if counters is not None else 0
    out = name if n == 0 else f"{name}_{n}"
    while out in used:
        n += 1
        out = f"{name}_{n}"
    used.add(out)
    if counters is not None:
        counters[name] = n
    return out
