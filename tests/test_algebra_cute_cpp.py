"""The layout algebra with dynamic extents and strides against CuTe C++ itself: CUTLASS's own CuTe unit-test inputs
(test/unit/cute/core: coalesce, complement, composition, logical_divide, right_inverse; tests/cute/algebra_dynamic.cpp)
built with g++ against the nvidia-cutlass wheel's headers (tests/cxx_harness.py caches the executable) and printed.

A run-time ``int`` in the C++ is a ``wb.Dyn`` here (its value the same), a ``_N`` a static int.  Each result must have
CuTe's hierarchy: the same shape and stride trees with ``?`` exactly where CuTe prints a run-time value (the workbench
may know more, a static stride where CuTe's is a run-time one, never less), and the same offset at every index.
Where CuTe C++ 4.2 and CuTe DSL 4.8.1 print different hierarchies (the DSL coalesces each leaf of a composition's
result, C++ does not), the workbench follows CuTe DSL: those cases are listed with the DSL's print, which
tests/test_algebra_cute_dsl.py checks against CuTe DSL itself where it is installed.
"""

from __future__ import annotations

import pathlib
import re

import pytest
from cxx_harness import CUDA_INCLUDE, build_harnesses, cute_toolchain, run_harness

import workbench as wb
from workbench.layout.values import value_of

SOURCE = pathlib.Path(__file__).parent / "cute" / "algebra_dynamic.cpp"
D = wb.Dyn


def M(s, d=None):
    return wb.make_layout(s) if d is None else wb.make_layout(s, stride=d)


def RM(s):
    return wb.make_layout(s, stride=wb.compact_row_major(s))


# the workbench's build of each case of tests/cute/algebra_dynamic.cpp, by the name the harness prints
CASES = {
    "coalesce (2,_4,_6):colmajor": lambda: wb.coalesce(M((D(2), 4, 6))),
    "coalesce (_2,4,_6):colmajor": lambda: wb.coalesce(M((2, D(4), 6))),
    "coalesce (_2,_4,6):colmajor": lambda: wb.coalesce(M((2, 4, D(6)))),
    "coalesce (2,_4,_6):rowmajor": lambda: wb.coalesce(RM((D(2), 4, 6))),
    "coalesce (_2,4,_6):rowmajor": lambda: wb.coalesce(RM((2, D(4), 6))),
    "coalesce (_2,_4,6):rowmajor": lambda: wb.coalesce(RM((2, 4, D(6)))),
    "coalesce (_2,1,_3):rowmajor": lambda: wb.coalesce(RM((2, D(1), 3))),
    "coalesce (_2,1,_3):(_2,4,_4)": lambda: wb.coalesce(M((2, D(1), 3), (2, D(4), 4))),
    "coalesce (_2,_1,_6):(_1,7,_2)": lambda: wb.coalesce(M((2, 1, 6), (1, D(7), 2))),
    "coalesce (_2,_1,_6):(_4,7,_8)": lambda: wb.coalesce(M((2, 1, 6), (4, D(7), 8))),
    "composition 12:1 o _4:_1": lambda: wb.composition(M(D(12), D(1)), M(4, 1)),
    "composition 12:1 o _4:1": lambda: wb.composition(M(D(12), D(1)), M(4, D(1))),
    "composition 12:_1 o _4:1": lambda: wb.composition(M(D(12), 1), M(4, D(1))),
    "composition 12:_1 o _4:_1": lambda: wb.composition(M(D(12), 1), M(4, 1)),
    "composition (12,3):(1,24) o _4:_1": lambda: wb.composition(M((D(12), D(3)), (D(1), D(24))), M(4, 1)),
    "composition 16:2 o 4:2": lambda: wb.composition(M(D(16), D(2)), M(D(4), D(2))),
    "composition (128,24,5):(1,128,3072) o 64:2":
        lambda: wb.composition(M((D(128), D(24), D(5)), (D(1), D(128), D(3072))), M(D(64), D(2))),
    "composition (128,24,5):(1,128,3072) o 480:_32":
        lambda: wb.composition(M((D(128), D(24), D(5)), (D(1), D(128), D(3072))), M(D(480), 32)),
    "composition 3:_1 o _4:_1": lambda: wb.composition(M(D(3), 1), M(4, 1)),
    "composition (48,24,5):(_1,128,3072) o 32:_1":
        lambda: wb.composition(M((D(48), D(24), D(5)), (1, D(128), D(3072))), M(D(32), 1)),
    "logical_divide 2:_1 / _32:_1": lambda: wb.logical_divide(M(D(2)), M(32)),
    "logical_divide 48:_1 / _32:_1": lambda: wb.logical_divide(M(D(48)), M(32)),
    "logical_divide 96:_1 / _32:_2": lambda: wb.logical_divide(M(D(96)), M(32, 2)),
    "logical_divide 32:_1 / _48:_1": lambda: wb.logical_divide(M(D(32)), M(48)),
    "logical_divide (_32,_4,4) / _64:_1": lambda: wb.logical_divide(M((32, 4, D(4))), M(64)),
    "right_inverse (_4,_2):(_1,4)": lambda: wb.right_inverse(M((4, 2), (1, D(4)))),
    "right_inverse (_4,2):(_1,4)": lambda: wb.right_inverse(M((4, D(2)), (1, D(4)))),
    "right_inverse (4,2):(_1,4)": lambda: wb.right_inverse(M((D(4), D(2)), (1, D(4)))),
    "right_inverse (_2,_4):(4,_1)": lambda: wb.right_inverse(M((2, 4), (D(4), 1))),
    "right_inverse (2,_4):(4,_1)": lambda: wb.right_inverse(M((D(2), 4), (D(4), 1))),
    "right_inverse (2,4):(4,_1)": lambda: wb.right_inverse(M((D(2), D(4)), (D(4), 1))),
    "complement (3,6):(_1,_3)": lambda: wb.complement(M((D(3), D(6)), (1, 3))),
    "complement (3,6):(_1,_9)": lambda: wb.complement(M((D(3), D(6)), (1, 9))),
    "complement (3,6):(_1,_10)": lambda: wb.complement(M((D(3), D(6)), (1, 10))),
    "complement ((2,2),(2,2)):((_1,_4),(_8,_32))":
        lambda: wb.complement(M(((D(2), D(2)), (D(2), D(2))), ((1, 4), (8, 32)))),
    "complement _64 (_32,_4,4)": lambda: wb.complement(M(64), (32, 4, D(4))),
    "complement _1:_2 (_2,2)": lambda: wb.complement(M(1, 2), (2, D(2))),
    "complement _4:_2 (_2,2)": lambda: wb.complement(M(4, 2), (2, D(2))),
    "complement _4:_4 (_2,2)": lambda: wb.complement(M(4, 4), (2, D(2))),
    "composition (_8,3):(_1,_8) o _64:_1": lambda: wb.composition(M((8, D(3))), M(64)),
    "logical_divide (_8,3):(_1,_8) / _64:_1": lambda: wb.logical_divide(M((8, D(3))), M(64)),
    "logical_divide (_4,_4,3):(_1,_8,_64) / _64:_1": lambda: wb.logical_divide(M((4, 4, D(3)), (1, 8, 64)), M(64)),
    "composition (_32,3,_3):(_1,_32,96) o _64:_1": lambda: wb.composition(M((32, D(3), 3), (1, 32, D(96))), M(64)),
    "coalesce (_8,3):(_1,_8)": lambda: wb.coalesce(M((8, D(3)))),
}
for _stride, _c in (("_1", lambda: M(D(12))), ("1", lambda: M(D(12), D(1))), ("_2", lambda: M(D(12), 2)),
                    ("2", lambda: M(D(12), D(2)))):
    for _cot in ("1", "", "53", "128"):
        CASES[f"complement 12:{_stride}{' ' + _cot if _cot else ''}"] = \
            (lambda c, t: lambda: wb.complement(c(), D(int(t))) if t else wb.complement(c()))(_c, _cot)

# CuTe C++ 4.2 leaves a composition's leaf results uncoalesced where a dynamic extent kept A's modes apart; CuTe DSL
# 4.8.1 coalesces them (static merges only).  The workbench prints as CuTe DSL (its print here, ? for run-time values).
CPP_DIFFERS_FROM_DSL = {
    "composition (12,3):(1,24) o _4:_1": "(?,?):(?,?)",              # C++ ((4,1)):((1,24)): rank 1 holding a pair
    "composition (_8,3):(_1,_8) o _64:_1": "64:1",                    # C++ (_8,_8):(_1,_8)
    "logical_divide (_8,3):(_1,_8) / _64:_1": "(64,?):(1,64)",        # C++ ((_8,_8),1):((_1,_8),_64)
    "logical_divide (_4,_4,3):(_1,_8,_64) / _64:_1": "((4,4,4),?):((1,8,64),256)",   # C++ ((_4,_4,_4),1):...
}


def _cpp_structure(text):
    """CuTe C++'s print with run-time values as ? and static _N as N."""
    return re.sub(r"(?<![_\d])\d+", "?", text).replace("_", "")


def _ours_structure(text):
    return re.sub(r"\?(\{[^}]*\})?", "?", text)


def _at_least_as_static(ours, cpp):
    """Our structure equals CuTe's with a static value allowed where CuTe prints a run-time one."""
    o, c = re.findall(r"\?|\d+|[^?\d]+", ours), re.findall(r"\?|\d+|[^?\d]+", cpp)
    return len(o) == len(c) and all(a == b or b == "?" and a.isdigit() for a, b in zip(o, c))


@pytest.fixture(scope="module")
def cpp_results():
    cutlass, cccl = cute_toolchain("the dynamic-algebra differential test against CuTe C++")
    exes, _ = build_harnesses([SOURCE], [cutlass, cccl, CUDA_INCLUDE])
    return dict(line.split("|", 1) for line in run_harness(exes[SOURCE.stem]).splitlines())


def test_every_harness_case_is_built_here(cpp_results):
    assert set(cpp_results) == set(CASES), set(cpp_results) ^ set(CASES)
    assert len(CASES) == 60


def test_dynamic_algebra_has_cutes_hierarchy_and_function(cpp_results):
    same = dsl = 0
    for name, build in CASES.items():
        ours, cpp = build(), cpp_results[name]
        o = _ours_structure(str(ours))
        if name in CPP_DIFFERS_FROM_DSL:
            assert o == CPP_DIFFERS_FROM_DSL[name], (name, str(ours), cpp)
            dsl += 1
        else:
            assert _at_least_as_static(o, _cpp_structure(cpp)), (name, str(ours), cpp)
            same += 1
        # the same function: CuTe's print read back with its run-time values, evaluated at every index
        theirs = wb.parse_layout(cpp.replace("_", ""))
        n = value_of(wb.size(ours))
        assert n == wb.size(theirs), (name, str(ours), cpp)
        assert [value_of(ours(i)) for i in range(n)] == [theirs(i) for i in range(n)], (name, str(ours), cpp)
    assert (same, dsl) == (56, 4)
