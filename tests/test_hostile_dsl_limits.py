"""Hostile input, round 2 (issue 20): unbounded work in the kernel DSL meets a bound with a located error.

Each bound of workbench/dsl/limits.py is exercised at a lowered value (monkeypatched, so that the suite stays
fast; the mechanism is the one the real value uses) and, where cheap, at its real value; under each bound the
kernel still runs on the CPU executor and its CUDA compiles with NVRTC.
"""

import importlib.util
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.dsl import compile_ptx
from workbench.dsl.backends.cpu import KernelRuntimeError
from workbench.dsl.frontend import KernelError
from workbench.dsl.runtime import limits


def _kernel_from(src, name):
    d = Path(tempfile.mkdtemp(prefix="wb_limits_"))
    f = d / f"k{abs(hash(src))}.py"
    f.write_text("import workbench as wb\n\n" + textwrap.dedent(src))
    spec = importlib.util.spec_from_file_location(f.stem, f)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name), f


def _refused(k, args, match, line=None):
    """Both backends refuse while tracing (the same lowering), with a located error."""
    for call in (lambda: k[1, 1](*args), lambda: wb.show_code(k, *args)):
        with pytest.raises(KernelError, match=match) as e:
            call()
        assert isinstance(e.value, ValueError)
        if line is not None:
            assert f"line {line}" in str(e.value), str(e.value)


# -- static unrolling and inlining ------------------------------------------------------------------------------
def test_nested_static_loops_stop_at_the_statement_bound(monkeypatch):
    monkeypatch.setattr(limits, "MAX_STATEMENTS", 3000)
    k, _ = _kernel_from("""
    @wb.kernel
    def unrolled(x):
        s = x[0]
        for i in range(64):
            for j in range(64):
                for m in range(64):
                    s = s + x[(i + j + m) % 4]
        x[1] = s
    """, "unrolled")
    _refused(k, (np.zeros(4, np.float32),), "at most 3000 statements.*MAX_STATEMENTS", line=10)


def test_static_loops_that_emit_nothing_stop_at_the_trace_bound(monkeypatch):
    monkeypatch.setattr(limits, "MAX_TRACE_STEPS", 20000)
    k, _ = _kernel_from("""
    @wb.kernel
    def spins(x):
        s = 0
        for i in range(64):
            for j in range(64):
                for m in range(64):
                    for n in range(64):
                        s = s + 1
        x[0] = s
    """, "spins")
    _refused(k, (np.zeros(4, np.int32),), "at most 20000 steps.*MAX_TRACE_STEPS")


def test_device_function_fan_out_stops_at_the_trace_bound(monkeypatch):
    monkeypatch.setattr(limits, "MAX_TRACE_STEPS", 20000)
    levels = ["@wb.kernel\ndef f0(x):\n    x[0] = x[0] + 1.0\n"]
    for d in range(1, 13):
        levels.append(f"@wb.kernel\ndef f{d}(x):\n    f{d - 1}(x)\n    f{d - 1}(x)\n")
    levels.append("@wb.kernel\ndef top(x):\n    f12(x)\n")
    k, _ = _kernel_from("\n".join(levels), "top")
    _refused(k, (np.zeros(2, np.float32),), "MAX_TRACE_STEPS")
    small, _ = _kernel_from("\n".join(levels[:4]) + "@wb.kernel\ndef top3(x):\n    f3(x)\n", "top3")
    x = np.zeros(2, np.float32)
    small[1, 1](x)
    assert x[0] == 8.0                                    # 2**3 inlined bodies, each adds one


def test_a_static_integer_that_explodes_is_refused_before_it_is_computed():
    k, _ = _kernel_from("""
    @wb.kernel
    def squares(x):
        v = 3
        for i in range(64):
            v = v * v
        x[0] = v % 7
    """, "squares")
    _refused(k, (np.zeros(2, np.int32),), "MAX_STATIC_INT_BITS", line=8)
    for expr in ("10 ** 10 ** 10", "1 << 2 ** 40"):
        k, _ = _kernel_from(f"""
        @wb.kernel
        def power(x):
            x[0] = ({expr}) % 7
        """, "power")
        _refused(k, (np.zeros(2, np.int32),), "MAX_STATIC_INT_BITS")


# -- what the CPU executor's Python could not compile --------------------------------------------------------
def _nested_loops(n, name):
    body = "".join("    " * (d + 1) + f"for i{d} in range(n):\n" for d in range(n))
    return f"@wb.kernel\ndef {name}(x, n):\n{body}" + "    " * (n + 1) + "x[0] = x[0] + 1\n"


def test_dynamic_loops_nested_past_python_blocks_are_refused_with_the_line():
    ok, _ = _kernel_from(_nested_loops(limits.MAX_LOOP_NESTING, "deep_ok"), "deep_ok")
    x = np.zeros(2, np.int32)
    ok[1, 1](x, 1)
    assert x[0] == 1
    assert ".entry" in compile_ptx(wb.show_code(ok, x, 1))
    # a kernel's own loops fit Python's 20 blocks, but inlined device functions add theirs
    src = _nested_loops(10, "inner") + "\n@wb.kernel\ndef outer(x, n):\n" + "".join(
        "    " * (d + 1) + f"for j{d} in range(n):\n" for d in range(10)) + "    " * 11 + "inner(x, n)\n"
    k, _ = _kernel_from(src, "outer")
    _refused(k, (x, 1), "nested at most 16 deep.*MAX_LOOP_NESTING")


def test_ifs_nested_past_python_indentation_are_refused():
    def nested_ifs(n, name):
        body = "".join("    " * (d + 1) + f"if n > {d}:\n" for d in range(n))
        return f"@wb.kernel\ndef {name}(x, n):\n{body}" + "    " * (n + 1) + "x[0] = n\n"
    ok, _ = _kernel_from(nested_ifs(limits.MAX_NESTING, "ifs_ok"), "ifs_ok")
    x = np.zeros(2, np.int32)
    ok[1, 1](x, 99)
    assert x[0] == 99 and ".entry" in compile_ptx(wb.show_code(ok, x, 99))
    k, _ = _kernel_from(nested_ifs(limits.MAX_NESTING + 5, "ifs_deep"), "ifs_deep")
    _refused(k, (x, 99), "MAX_NESTING")


def test_an_expression_nested_past_the_parser_is_refused_and_one_under_it_runs():
    terms = " + ".join(f"x[{i % 4}]" for i in range(limits.MAX_EXPR_DEPTH - 1))   # 38 '+' over a load
    ok, _ = _kernel_from(f"@wb.kernel\ndef sum_ok(x):\n    x[0] = {terms}\n", "sum_ok")
    x = np.ones(4, np.float32)
    ok[1, 1](x)
    assert x[0] == limits.MAX_EXPR_DEPTH - 1 and ".entry" in compile_ptx(wb.show_code(ok, x))
    terms = " + ".join(f"x[{i % 4}]" for i in range(150))
    k, _ = _kernel_from(f"@wb.kernel\ndef sum_deep(x):\n    x[0] = {terms}\n", "sum_deep")
    _refused(k, (x,), "MAX_EXPR_DEPTH")


# -- the CPU executor's loop budget ------------------------------------------------------------------------------
_FOREVER = """
@wb.kernel
def forever(x, n):
    i = 0
    for j in range(n):
        i = i + 1
    x[0] = i

@wb.kernel
def spin(x):
    while x[0] >= 0:
        x[1] = x[1] + 1
"""


def test_cpu_loops_spend_a_launch_budget_with_a_located_error(monkeypatch):
    monkeypatch.setattr(limits, "MAX_CPU_LOOP_STEPS", 5000)
    forever, _ = _kernel_from(_FOREVER, "forever")
    spin, _ = _kernel_from(_FOREVER, "spin")
    x = np.zeros(2, np.int64)
    forever[1, 1](x, 5000)                              # within the budget
    assert x[0] == 5000
    with pytest.raises(KernelRuntimeError, match=r"at most 5000 loop iterations.*line 7.*thread \(0, 0, 0\)"):
        forever[1, 1](x, 2**40)
    with pytest.raises(KernelRuntimeError, match="MAX_CPU_LOOP_STEPS"):
        forever[1, 2](x, 2600)                          # two threads of 2600: the budget is the launch's
    with pytest.raises(KernelRuntimeError, match="line 13"):
        spin[1, 1](np.zeros(2, np.int32))
    forever[1, 1](x, 3)
    assert x[0] == 3                                    # each launch starts with the whole budget


# -- the specialization cache -------------------------------------------------------------------------------------
def test_the_specialization_cache_is_a_bounded_lru(monkeypatch):
    monkeypatch.setattr(limits, "MAX_SPECIALIZATIONS", 4)

    @wb.kernel
    def put(x, v: wb.Constexpr):
        x[0] = v

    x = np.zeros(1, np.int32)
    for v in range(10):
        put[1, 1](x, v)
        assert x[0] == v
    assert len(put.specializations) == 4 and put.stats.lowerings == 10
    put[1, 1](x, 6)                                       # a hit refreshes it
    put[1, 1](x, 10)
    kept = sorted(sp.specs[1].value for sp in put.specializations)
    assert kept == [6, 8, 9, 10] and put.stats.lowerings == 11
    info = [k for k in wb.cache_info()["kernels"] if k["kernel"] == "put"]
    assert len(info[0]["specializations"]) == 4
