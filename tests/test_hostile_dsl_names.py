"""Hostile input, round 2 (issue 20), the CPU executor and CUDA agreeing on what a name and a constant mean.

Every identifier a user can write (parameters, locals, loop variables, the kernel's own name) is drawn against
the backends' internal names, the generated helpers' names and both languages' reserved words; each kernel runs
on the CPU executor against numpy and its CUDA compiles with NVRTC.  Constants and static offsets that the
element type cannot hold are a located error while tracing, the same for both backends.
"""

import importlib.util
import itertools
import keyword
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.dsl import compile_ptx
from workbench.dsl.frontend import KernelError
from workbench.dsl.names import RESERVED, c_name

# what the backends call things themselves (the CPU executor's closure and helpers, codegen's temporaries,
# the dynamic extents of a tensor named X) and names a naive mangling would produce
_INTERNAL = ["_tx", "_ty", "_bx", "_bdx", "_gdx", "_P", "_S", "_IX", "_AL", "_make", "_thread", "_ix_X", "_al_X",
             "_dtype_X", "_r0", "_v0", "_o1", "_cdiv", "_math", "_oob", "_INF", "_NAN", "_zeros", "_pk", "_up", "_",
             "__x", "smem", "frag", "off", "crd", "X_shape0", "X_stride0", "X_shape0_1", "u_tx", "int_", "threadIdx_"]
# minus the names the generated kernel's own body reads (a parameter called `range` would shadow the loop's range
# in Python itself, which is the user's bug, not a name clash): drawing one made the test flaky
_POOL = sorted({n for n in RESERVED | set(_INTERNAL)
                if n.isidentifier() and not keyword.iskeyword(n)} - {"range", "wb", "math"})
_names = st.lists(st.sampled_from(_POOL), min_size=6, max_size=6, unique=True)


def _kernel_from(src, name):
    """A @wb.kernel defined in a real file (the frontend reads the source), as a user module would."""
    d = Path(tempfile.mkdtemp(prefix="wb_names_"))
    f = d / f"{abs(hash(src))}.py"
    f.write_text("import math\n\nimport workbench as wb\n\n" + textwrap.dedent(src))
    spec = importlib.util.spec_from_file_location(f.stem, f)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


@settings(max_examples=40)
@given(_names)
def test_user_names_never_meet_backend_names_or_reserved_words(names):
    kname, x, p, q, loop, acc = names
    src = f"""
    @wb.kernel
    def {kname}({x}, {p}, {q}):
        {acc} = {p}
        for {loop} in range(wb.thread_idx().x):
            {acc} = {acc} + {q}
        if wb.thread_idx().x < wb.size({x}):
            {x}[wb.thread_idx().x] = {acc}
    """
    k = _kernel_from(src, kname)
    out = np.zeros(6, np.int32)
    k[1, 8](out, 5, 3)
    assert out.tolist() == [5 + 3 * i for i in range(6)], (names, k.specialize((out, 5, 3)).python_source)
    code = wb.show_code(k, out, 5, 3)
    assert ".entry" in compile_ptx(code), code


def test_the_examples_of_the_issue():
    @wb.kernel
    def reads_tx(x, _tx):
        i = wb.thread_idx().x
        if i < wb.size(x):
            x[i] = _tx

    @wb.kernel
    def helper_name(x, x_shape0):
        i = wb.thread_idx().x
        if i < wb.size(x):
            x[i] = x_shape0

    @wb.kernel
    def cxx_words(x, threadIdx):
        int = threadIdx + 1                                  # noqa: A001
        auto = int * 2
        x[0] = auto

    x = np.zeros(4, np.int32)
    reads_tx[1, 4](x, 7)
    assert x.tolist() == [7] * 4                              # was the thread index on the CPU
    helper_name[1, 4](x, 2)
    assert x.tolist() == [2] * 4                              # was wb.size(x) == 2 on the CPU, a duplicate in CUDA
    code = wb.show_code(helper_name, x, 2)
    assert "int x_shape0_1, int x_shape0)" in code and "< x_shape0_1" in code
    cxx_words[1, 1](x, 2)
    assert x[0] == 6
    for k, args in ((reads_tx, (x, 7)), (helper_name, (x, 2)), (cxx_words, (x, 2))):
        assert ".entry" in compile_ptx(wb.show_code(k, *args))


def test_plain_names_are_kept_and_mangling_is_injective():
    used = set()
    assert [c_name(n, used) for n in ("a", "a_shape0", "i", "int", "_tx", "u_tx", "int_")] == \
        ["a", "a_shape0", "i", "int_", "u_tx", "u_tx_1", "int__1"]
    for n in itertools.islice(RESERVED, 50):
        m = c_name(n)
        assert m not in RESERVED and not m.startswith("_") and m.isidentifier()


# -- constants and static offsets the type cannot hold ---------------------------------------------------------
@pytest.mark.parametrize("dtype, value, what", [
    (np.int64, "2**64 + 3", "Int64"), (np.int64, "-2**63 - 1", "Int64"), (np.int8, "200", "Int8"),
    (np.int32, "2**31", "Int32"), (np.uint32, "2**32", "Uint32"), (np.float32, "1e39", "Float32"),
    (np.float32, "-3.5e38", "Float32"), (np.uint8, "256", "Uint8")])
def test_a_constant_outside_the_element_type_is_a_located_error_on_both_backends(dtype, value, what):
    k = _kernel_from(f"""
    @wb.kernel
    def store_const(x):
        x[0] = {value}
    """, "store_const")
    x = np.zeros(2, dtype)
    for call in (lambda: k[1, 1](x), lambda: wb.show_code(k, x)):
        with pytest.raises(KernelError, match=f"range of {what}") as e:
            call()
        assert isinstance(e.value, ValueError) and f"x[0] = {value}" in str(e.value)
    assert x.tolist() == [0, 0]


def test_constants_at_the_edges_of_the_type_store_the_same_value_on_both_backends():
    k = _kernel_from("""
    @wb.kernel
    def edges(a, b, c, f):
        a[0] = 9223372036854775807
        a[1] = -9223372036854775808
        b[0] = -1
        c[0] = 255
        f[0] = 3.4028234663852886e38
        f[1] = -math.inf
    """, "edges")
    a, b, c, f = np.zeros(2, np.int64), np.zeros(1, np.uint32), np.zeros(1, np.uint8), np.zeros(2, np.float32)
    k[1, 1](a, b, c, f)
    assert a.tolist() == [2**63 - 1, -2**63] and b.tolist() == [2**32 - 1] and c.tolist() == [255]
    assert f.tolist() == [np.finfo(np.float32).max, -np.inf]
    code = wb.show_code(k, a, b, c, f)
    assert "4294967295u" in code and ".entry" in compile_ptx(code)


def test_a_static_offset_past_int64_is_refused_while_tracing():
    @wb.kernel
    def huge(p):
        a = wb.make_tensor(p, wb.make_layout((2,), stride=(2**64 + 1,)))
        a[1] = 1.0

    buf = np.zeros(4, np.float32)
    p = wb.make_ptr(wb.Float32, buf.ctypes.data)
    for call in (lambda: huge[1, 1](p), lambda: wb.show_code(huge, p)):
        with pytest.raises((KernelError, ValueError), match="18446744073709551617"):
            call()
    assert buf.tolist() == [0.0] * 4


# -- no user string (a function's __name__, __qualname__, __module__, docstring) can change the generated code -----
def _with_names(text, kernel_text):
    def helper(x, i):
        x[i] = x[i] + 1
    for attr in ("__name__", "__qualname__", "__doc__"):
        setattr(helper, attr, text)
    helper.__module__ = text
    dev = wb.kernel(helper)

    def bump(x):
        dev(x, wb.thread_idx().x)
    bump.__doc__, bump.__qualname__, bump.__module__ = kernel_text, kernel_text, kernel_text
    return wb.kernel(bump)


_HOSTILE = st.lists(st.sampled_from(list("ab_\n\r\\*/\"'{}();#\t\x00\u2028\u0085 ") + ["*/", "\\\n", "}\n__global__"]),
                    min_size=1, max_size=12).map("".join)


@settings(max_examples=60, deadline=None)
@given(_HOSTILE, _HOSTILE)
def test_user_strings_reach_generated_code_only_as_inert_comment_text(text, kernel_text):
    """The CUDA of a kernel whose device function carries any __name__/__qualname__/__module__/docstring is the plain
    one's, line for line, except inside the '// inlined ...()' comment, whose text stays printable ASCII on its one
    line (no newline, backslash continuation or '*/')."""
    x = np.zeros(32, np.int32)
    plain = wb.show_code(_with_names("helper", "bump"), x).splitlines()
    got = wb.show_code(_with_names(text, kernel_text), x).splitlines()
    assert len(got) == len(plain)
    for g, p in zip(got, plain):
        if g != p:
            assert p.strip().startswith("// inlined helper()"), (g, p)
            body = g.strip()[len("// "):]
            assert g.strip().startswith("// inlined ") and all(" " <= ch <= "~" for ch in body) and "\\" not in body, g
    k = _with_names(text, kernel_text)
    k[1, 32](x)                                     # and it still runs
    assert (x == 1).all()
