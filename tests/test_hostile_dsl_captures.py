"""Hostile input, round 2 (issue 20): what a kernel captured.  One rule (workbench/dsl/captures.py): a global,
closure variable or user-module attribute a kernel reads is a compile-time constant, and a launch after it
changed re-specializes with the new value (as Triton does); nothing keeps an old value silently."""

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.dsl.frontend import KernelError

SCALE = 2
OFFSETS = (1, 2)
cfg = types.ModuleType("wb_test_cfg")      # a user module: its attributes are captured like globals
cfg.BIAS = 10


@wb.kernel
def scaled(x):
    i = wb.thread_idx().x
    if i < wb.size(x):
        x[i] = i * SCALE + OFFSETS[1] + cfg.BIAS


def _run(k, n=4, dtype=np.int32):
    x = np.zeros(n, dtype)
    k[1, n](x)
    return x.tolist()


def test_a_changed_global_re_specializes_and_an_equal_rebinding_does_not():
    global SCALE, OFFSETS
    try:
        assert _run(scaled) == [12, 14, 16, 18]
        low = scaled.stats.lowerings
        SCALE = 3
        assert _run(scaled) == [12, 15, 18, 21]            # the old specialization kept 2 before the fix
        assert scaled.stats.lowerings == low + 1 and len(scaled.specializations) == 1
        OFFSETS = (1, 2 + 0)                               # another tuple, equal: kept
        SCALE = int("3")
        assert _run(scaled) == [12, 15, 18, 21] and scaled.stats.lowerings == low + 1
        cfg.BIAS = -5                                      # an attribute of a user module
        assert _run(scaled) == [-3, 0, 3, 6] and scaled.stats.lowerings == low + 2
    finally:
        SCALE, OFFSETS, cfg.BIAS = 2, (1, 2), 10


def test_a_closure_variable_is_read_when_lowering_not_when_decorating():
    step = 1

    @wb.kernel
    def add_step(x):
        x[0] = x[0] + step   # noqa: F821 (deleted below on purpose)

    x = np.zeros(1, np.int32)
    step = 5                                               # after decoration: the decorator snapshotted 1
    add_step[1, 1](x)
    assert x[0] == 5
    step = 7
    add_step[1, 1](x)
    assert x[0] == 12
    del step
    with pytest.raises(KernelError, match="free variable 'step'") as e:
        add_step[1, 1](x)
    assert isinstance(e.value, NameError) and "x[0] = x[0] + step" in str(e.value)


@wb.kernel
def _one(x):
    x[0] = 1


@wb.kernel
def _two(x):
    x[0] = 2


helper = _one


@wb.kernel
def calls_helper(x):
    helper(x)


def test_a_rebound_device_function_is_a_change():
    global helper
    try:
        assert _run(calls_helper, 1) == [1]
        helper = _two
        assert _run(calls_helper, 1) == [2]
        assert wb.show_code(calls_helper, np.zeros(1, np.int32)).count("= 2;") == 1
    finally:
        helper = _one


def test_a_global_deleted_after_lowering_is_a_located_name_error():
    mod = types.ModuleType("wb_test_vanishing")
    mod.__file__ = __file__
    exec("import workbench as wb\nK = 3\n", mod.__dict__)
    g = mod.__dict__                                  # the source of scaled, its globals in g
    k = wb.kernel(types.FunctionType(scaled.__wrapped__.__code__, g, "scaled"))
    g.update(SCALE=4, OFFSETS=(0, 0), cfg=cfg)
    assert _run(k) == [10, 14, 18, 22]
    del g["SCALE"]
    with pytest.raises(KernelError, match="SCALE") as e:
        _run(k)
    assert isinstance(e.value, NameError)


def test_a_kernel_that_reads_only_the_library_watches_nothing():
    assert _run(_one, 1) == [1]
    assert _one._watch == ()                              # no per-launch cost
    _run(scaled)
    assert {c.name for c in scaled.specializations[0].captures} == {"SCALE", "OFFSETS", "cfg", "BIAS"} - {"cfg"}


@settings(max_examples=30)
@given(st.lists(st.one_of(st.integers(-2**31, 2**31 - 1), st.booleans(),
                          st.tuples(st.integers(-100, 100), st.integers(-100, 100))), min_size=1, max_size=6))
def test_every_launch_sees_the_current_global(values):
    global SCALE, OFFSETS
    try:
        for v in values:
            if type(v) is tuple:
                OFFSETS = v
            else:
                SCALE = v
            want = [(i * SCALE + OFFSETS[1] + cfg.BIAS + 2**31) % 2**32 - 2**31 for i in range(4)]
            assert _run(scaled) == want, (SCALE, OFFSETS)
    finally:
        SCALE, OFFSETS = 2, (1, 2)
