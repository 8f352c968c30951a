"""Kernel DSL without a GPU: the CPU executor against numpy, NVRTC compiles for sm_90, the JIT
cache keys, argument validation and compile errors that point at the user's line."""

from __future__ import annotations

import math

import numpy as np
import pytest

import workbench as wb
from workbench import host_buffers
from workbench.dsl import compile_ptx
from workbench.dsl.backends.cpu import KernelRuntimeError
from workbench.dsl.frontend import KernelError
from workbench.kernels import examples as E

EXAMPLES = E.make_examples("small")


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_example_on_cpu_executor_matches_numpy(name):
    ex = EXAMPLES[name]
    xs = ex.make(np.random.default_rng(3))
    ex.launch(xs)
    for i, ref in zip(ex.outputs, ex.reference(xs)):
        assert E.rel_error(xs[i], ref) <= ex.rtol


def _args_for(name):
    ex = EXAMPLES[name]
    xs = ex.make(np.random.default_rng(0))
    return ex.kernel, xs + list(ex.extra)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_example_codegen_compiles_to_ptx_for_sm90(name):
    k, xs = _args_for(name)
    ptx = compile_ptx(wb.show_code(k, *xs), "sm_90")
    assert f".entry {k.__name__}(" in ptx


def test_pointer_bypass_kernel_compiles_and_runs_on_cpu():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.ones((3, 4), np.float32)
    z = np.full((3, 4), np.nan, np.float32)
    ps = [wb.make_ptr(wb.Float32, a.ctypes.data, "generic") for a in (x, y, z)]
    with host_buffers(x, y, z):       # a bare address has no extent: declare the memory it points into
        E.add_ptr[(1, 1, 1), (32, 1, 1)](*ps, 3, 4)
    assert np.array_equal(z, x + y)
    assert ".entry add_ptr(" in compile_ptx(wb.show_code(E.add_ptr, *ps, 3, 4))


def _aligned16(n):
    buf = np.zeros(n + 8, np.float32)
    off = (-buf.ctypes.data % 16) // 4
    return buf[off:off + n]


def test_vectorized_copy_emits_128bit_loads_and_stores():
    a = wb.from_dlpack(_aligned16(1024), assumed_align=16).mark_layout_dynamic()
    b = wb.from_dlpack(_aligned16(1024), assumed_align=16).mark_layout_dynamic()
    code = wb.show_code(E.vcopy, a, b, 8)
    assert "uint4" in code
    ptx = compile_ptx(code)
    assert "ld.global.v4.u32" in ptx and "st.global.v4.u32" in ptx


def test_vectorized_copy_falls_back_when_alignment_is_not_proven():
    a = wb.from_dlpack(np.zeros(1024, np.float32)).mark_layout_dynamic()   # assumed_align = 4
    b = wb.from_dlpack(np.zeros(1024, np.float32)).mark_layout_dynamic()
    code = wb.show_code(E.vcopy, a, b, 8)
    assert "uint4" not in code
    assert "v4" not in compile_ptx(code)
    a16 = wb.from_dlpack(_aligned16(1024), assumed_align=16).mark_layout_dynamic()
    b16 = wb.from_dlpack(_aligned16(1024), assumed_align=16).mark_layout_dynamic()
    assert "uint4" not in wb.show_code(E.vcopy, a16, b16, 2)     # 8-byte tiles: only 64-bit accesses
    assert "uint2" in wb.show_code(E.vcopy, a16, b16, 2)


def test_vectorized_copy_on_cpu_checks_real_alignment():
    src = _aligned16(1003)
    src[:] = np.arange(1003)
    dst = _aligned16(1003)
    a = wb.from_dlpack(src, assumed_align=16).mark_layout_dynamic()
    b = wb.from_dlpack(dst, assumed_align=16).mark_layout_dynamic()
    E.vcopy[(1, 1, 1), (128, 1, 1)](a, b, 8)
    assert np.array_equal(src, dst)


# -- the cache ------------------------------------------------------------------------------------
@wb.kernel
def scale(a, out, s):
    i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
    if i < wb.size(a):
        out[i] = a[i] * s


def _run_scale(a, out, s=2.0):
    scale[(math.ceil(wb.size(a.layout if isinstance(a, wb.Tensor) else a.size) / 64) or 1, 1, 1), (64, 1, 1)](a, out, s)


def test_dynamic_layout_reuses_the_kernel_for_a_new_shape():
    before = len(scale.specializations)
    for n in (10, 100, 333):
        x = np.arange(n, dtype=np.float32)
        y = np.zeros(n, np.float32)
        scale[(math.ceil(n / 64), 1, 1), (64, 1, 1)](x, y, 2.0)
        assert np.array_equal(y, 2 * x)
    assert len(scale.specializations) == before + 1


def test_new_static_shape_or_alignment_or_dtype_compiles_a_new_kernel():
    def keys():
        return {sp.key for sp in scale.specializations}
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    k0 = keys()
    scale[(1, 1, 1), (64, 1, 1)](wb.from_dlpack(x), wb.from_dlpack(y), 2.0)          # static (64):(1)
    k1 = keys()
    assert len(k1 - k0) == 1
    scale[(1, 1, 1), (64, 1, 1)](wb.from_dlpack(x), wb.from_dlpack(y), 2.0)          # same static shape: reuse
    assert keys() == k1
    x2, y2 = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    scale[(1, 1, 1), (64, 1, 1)](wb.from_dlpack(x2), wb.from_dlpack(y2), 2.0)        # new static shape
    k2 = keys()
    assert len(k2 - k1) == 1
    xa, ya = _aligned16(64), _aligned16(64)
    scale[(1, 1, 1), (64, 1, 1)](wb.from_dlpack(xa, assumed_align=16), wb.from_dlpack(ya, assumed_align=16), 2.0)
    k3 = keys()
    assert len(k3 - k2) == 1                                                          # new alignment
    scale[(1, 1, 1), (64, 1, 1)](x.astype(np.float64), y.astype(np.float64), 2.0)     # new dtype
    assert len(keys() - k3) == 1
    assert wb.cache_info()["specializations"] >= len(keys())


def test_static_layout_becomes_constants_and_dynamic_becomes_parameters():
    x = np.zeros((8, 6), np.float32)
    static = wb.show_code(E.transpose_naive, wb.from_dlpack(x), wb.from_dlpack(np.zeros((6, 8), np.float32)))
    dynamic = wb.show_code(E.transpose_naive, x, np.zeros((6, 8), np.float32))
    assert "src_shape0" not in static and "* 6)" in static
    assert "int src_shape0" in dynamic and "long long src_stride0" in dynamic


def test_divisibility_reaches_the_signature():
    x = np.zeros(64, np.float32)
    t = wb.from_dlpack(x).mark_compact_shape_dynamic(0, divisibility=8)
    sp = scale.specialize((t, wb.from_dlpack(np.zeros(64, np.float32)).mark_layout_dynamic(), 1.0))
    assert "?{div=8}" in sp.describe()


def test_constexpr_values_are_part_of_the_key():
    a, b = _aligned16(64), _aligned16(64)
    n0 = len(E.vcopy.specializations)
    E.vcopy.specialize((a, b, 4))
    E.vcopy.specialize((a, b, 4))
    E.vcopy.specialize((a, b, 8))
    assert len(E.vcopy.specializations) - n0 <= 2
    assert {sp.specs[2].value for sp in E.vcopy.specializations} >= {4, 8}


# -- argument validation --------------------------------------------------------------------------
def test_wrong_argument_count_and_types_raise():
    x = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match="Expected 3 arguments"):
        scale[1, 4](x, x)
    with pytest.raises(TypeError, match="kernel argument 's'"):
        scale[1, 4](x, x, "2")
    with pytest.raises(TypeError, match=r"kern\[grid, block\]|Launch a kernel"):
        scale(x, x, 2.0)


def test_read_only_tensor_written_by_the_kernel_is_refused():
    x = np.arange(4, dtype=np.float32)
    ro = np.arange(4, dtype=np.float32)
    ro.flags.writeable = False
    scale[1, 4](ro, x, 2.0)                        # reading a read-only tensor is fine
    with pytest.raises(ValueError, match="read-only"):
        scale[1, 4](x, ro, 2.0)


def test_mixed_memory_spaces_and_bad_launch_shapes_raise():
    x = np.zeros(4, np.float32)
    gp = wb.make_ptr(wb.Float32, 1 << 20, "gmem", assumed_align=16)
    with pytest.raises(ValueError, match="one memory space"):
        E.add_ptr[1, 4](wb.make_ptr(wb.Float32, x.ctypes.data), gp, gp, 2, 2)
    with pytest.raises(ValueError, match="1024 threads"):
        scale[1, (64, 32)](x, x, 1.0)
    with pytest.raises(ValueError, match="positive"):
        scale[0, 4](x, x, 1.0)


def test_integer_too_wide_for_int32_selects_an_int64_kernel():
    @wb.kernel
    def put(out, v):
        out[0] = v
    o = np.zeros(1, np.int64)
    put[1, 1](o, 5)
    put[1, 1](o, 1 << 40)
    assert o[0] == 1 << 40
    assert sorted(sp.specs[1].etype.name for sp in put.specializations) == ["Int32", "Int64"]


def test_tensor_of_wrong_rank_is_a_compile_error_naming_the_line():
    with pytest.raises(KernelError, match="index below 1|rank") as e:
        E.transpose_naive[1, 4](np.zeros(4, np.float32), np.zeros(4, np.float32))
    assert "examples.py" in str(e.value) and "wb.shape(src)[1]" in str(e.value)


# -- compile errors point at the user's source ------------------------------------------------------
def test_unsupported_operator_points_at_the_line():
    @wb.kernel
    def bad(a):
        a[0] = a[0] @ a[1]
    with pytest.raises(KernelError) as e:
        bad[1, 1](np.zeros(2, np.float32))
    msg = str(e.value)
    assert "test_dsl.py" in msg and "a[0] = a[0] @ a[1]" in msg and "'@'" in msg and "^" in msg


def test_unsupported_statement_and_names():
    @wb.kernel
    def bad(a):
        with open("x"):
            pass

    @wb.kernel
    def bad2(a):
        a[0] = undefined_name  # noqa: F821

    @wb.kernel
    def bad3(a):
        i = wb.thread_idx().x
        if i > 0:
            t = 1.0
        a[0] = t
    x = np.zeros(2, np.float32)
    with pytest.raises(KernelError, match="'With' statements are not supported"):
        bad[1, 1](x)
    with pytest.raises(NameError, match="undefined_name"):
        bad2[1, 1](x)
    with pytest.raises(KernelError, match="cannot be used after it"):
        bad3[1, 1](x)


def test_variable_type_change_needs_a_cast():
    @wb.kernel
    def bad(a, n):
        acc = 0
        for i in range(n):
            acc = acc + a[i]
        a[0] = acc
    with pytest.raises(TypeError, match="Variable 'acc' has type Int32"):
        bad[1, 1](np.zeros(4, np.float32), 4)


# -- language features on the CPU executor ---------------------------------------------------------
@wb.kernel
def clamp01(x):
    return wb.Float32(min(max(x, 0.0), 1.0))


@wb.kernel
def features(a, out, n):
    t = wb.thread_idx().x
    s = 0.0
    k = 0
    while True:
        if k >= n:
            break
        if k % 2 == 1:
            k += 1
            continue
        s += math.sqrt(a[k] * a[k])
        k += 1
    out[t] = clamp01(s / 100.0) if t == 0 else wb.Float32(t // 2) + (1.0 if t > 2 else -1.0)


def test_while_break_continue_device_function_math_and_select():
    a = np.arange(10, dtype=np.float32) - 3
    out = np.zeros(5, np.float32)
    features[1, 5](a, out, 10)
    s = sum(abs(v) for v in a[::2])
    assert out[0] == pytest.approx(min(max(s / 100, 0), 1))
    assert list(out[1:]) == [-1.0, 0.0, 2.0, 3.0]
    ptx = compile_ptx(wb.show_code(features, a, out, 10))
    assert "sqrt" in ptx


def test_local_partition_matches_numpy_slicing():
    @wb.kernel
    def owner(a):
        t = wb.thread_idx().x
        part = wb.local_partition(a, wb.make_layout((2, 4)), t)     # thread t = (t % 2, t // 2)
        for i in range(wb.size(part, mode=0)):
            for j in range(wb.size(part, mode=1)):
                part[i, j] = t
    a = np.full((8, 12), -1, np.int32)
    owner[1, 8](wb.from_dlpack(a))
    exp = np.empty_like(a)
    for t in range(8):
        exp[t % 2::2, t // 2::4] = t
    assert np.array_equal(a, exp)


def test_sync_threads_in_divergent_code_is_reported():
    @wb.kernel
    def div(a):
        t = wb.thread_idx().x
        if t < 2:
            wb.sync_threads()
            a[t] = 1.0
        else:
            wb.sync_threads()
    with pytest.raises(KernelRuntimeError, match="different sync_threads"):
        div[1, 4](np.zeros(4, np.float32))


def test_out_of_bounds_access_is_reported_on_cpu():
    @wb.kernel
    def oob(a):
        a[wb.thread_idx().x] = 1.0
    with pytest.raises(KernelRuntimeError, match="out-of-bounds"):
        oob[1, 8](np.zeros(4, np.float32))


# -- irregular sizes: CuTe's predication (identity tensor + local_tile + elem_less) -----------------
IRREGULAR = E.make_examples("irregular")


@pytest.mark.parametrize("name", ["transpose_smem", "vcopy", "row_sum"])
def test_examples_at_1000_by_999_on_cpu_executor_match_numpy(name):
    ex = IRREGULAR[name]
    xs = ex.make(np.random.default_rng(5))
    ex.launch(xs)
    for i, ref in zip(ex.outputs, ex.reference(xs)):
        assert E.rel_error(xs[i], ref) <= ex.rtol


@pytest.mark.parametrize("m,k,n", [(2, 1, 3), (17, 33, 15), (33, 5, 47)])
def test_sgemm_on_ragged_tiles_matches_numpy(m, k, n):
    rng = np.random.default_rng(m * k * n)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    E.sgemm[(math.ceil(n / E.MM), math.ceil(m / E.MM), 1), (E.MM, E.MM, 1)](a, b, c)
    assert E.rel_error(c, a.astype(np.float64) @ b) <= 1e-5


def test_vcopy_predicates_the_ragged_tile_and_keeps_128bit_accesses_elsewhere():
    src, dst = _aligned16(1003), _aligned16(1003)
    a = wb.from_dlpack(src, assumed_align=16).mark_layout_dynamic()
    b = wb.from_dlpack(dst, assumed_align=16).mark_layout_dynamic()
    code = wb.show_code(E.vcopy, a, b, 8)
    full, ragged = code.split("} else {")
    assert "uint4" in full and "uint4" not in ragged and ragged.count("< src_shape0") == 8
    assert "ld.global.v4.u32" in compile_ptx(code, "sm_90")


def test_in_kernel_identity_tensor_and_elem_less_lower_to_an_and_chain():
    code = wb.show_code(E.transpose_smem, np.zeros((40, 56), np.float32), np.zeros((56, 40), np.float32))
    assert code.count("&&") == 8 and "src_shape0" in code and "dst_shape1" in code


# -- the frontend: builtins by identity, one place that locates errors, scopes ------------------------
def test_misspelled_annotation_is_a_located_error_not_an_int_parameter():
    # this module has `from __future__ import annotations`: the annotation is only text until we resolve it
    with pytest.raises(KernelError, match="Constexprr") as e:
        @wb.kernel
        def typo(a, n: wb.Constexprr):  # noqa: F821
            a[0] = n
    msg = str(e.value)
    assert isinstance(e.value, AttributeError) and "test_dsl.py" in msg and "^" in msg and "parameter 'n'" in msg


def test_builtins_are_recognized_by_identity_not_by_name_or_module():
    def thread_idx():
        return 0
    thread_idx.__module__ = "workbench.dsl.builtins"      # a look-alike: same name, same module string

    @wb.kernel
    def fake(a):
        a[0] = thread_idx()

    with pytest.raises(KernelError, match="calls to .*thread_idx are not supported"):
        fake[1, 1](np.zeros(2, np.float32))
    tid = wb.thread_idx                                   # the real builtin under another name works

    @wb.kernel
    def aliased(a):
        a[tid().x] = 1.0
    x = np.zeros(4, np.float32)
    aliased[1, 4](x)
    assert np.array_equal(x, np.ones(4, np.float32))
    with pytest.raises(RuntimeError, match="only has a meaning inside a @wb.kernel"):
        wb.thread_idx()


def test_a_layout_error_inside_a_kernel_is_located_and_keeps_its_cause():
    @wb.kernel
    def bad_tile(a):
        t = wb.local_tile(a, (4, 4, 4), (0, 0, 0))
        t[0, 0, 0] = 1.0
    with pytest.raises(KernelError) as e:
        bad_tile[1, 1](np.zeros((8, 8), np.float32))
    assert isinstance(e.value, ValueError) and isinstance(e.value.__cause__, wb.LayoutAlgebraError)
    assert "wb.local_tile(a, (4, 4, 4), (0, 0, 0))" in str(e.value) and "rank 3" in str(e.value)


def test_a_name_bound_in_the_then_branch_is_not_visible_in_the_else_branch():
    @wb.kernel
    def leak(a):
        if wb.thread_idx().x > 0:
            t = 1.0
        else:
            a[0] = t  # noqa: F821
    with pytest.raises(KernelError, match="'t' is assigned inside dynamic control flow .* cannot be used"):
        leak[1, 2](np.zeros(2, np.float32))


def test_in_kernel_values_implement_the_core_integer_protocol():
    from workbench.dsl import ir
    v = ir.Var("n", wb.Int64, 8)
    assert isinstance(v, wb.Symbolic) and v.value is None and v.width == 64 and v.divisibility == 8
    assert wb.ceil_div(v, 4).divisibility == 2 and str(v) == "?{i64 div=8}"
    assert isinstance(wb.make_layout((v, 3)).shape[0], ir.Var)
    with pytest.raises(TypeError, match="known while compiling"):     # never silently truthy
        bool(ir.compare("<", v, 3))


def test_nested_dynamic_tensor_argument_is_tiled_by_the_core_in_a_kernel():
    @wb.kernel
    def tiles(a, out):
        t = wb.thread_idx().x
        g = wb.local_tile(a, (4,), (t,))
        c = wb.local_tile(wb.make_identity_tensor(wb.size(a)), (4,), (t,))
        for i in range(4):
            if wb.elem_less(c[i], wb.size(a)):
                out[t * 4 + i] = g[i]
    x = np.arange(30, dtype=np.float32)
    nested = wb.logical_divide(wb.from_dlpack(x).mark_layout_dynamic(), (6,))     # ((6,?)):((1,6))
    out = np.full(32, -1, np.float32)
    tiles[1, 8](nested, wb.from_dlpack(out))
    assert np.array_equal(out[:30], x) and list(out[30:]) == [-1, -1]
    assert "a_shape1" in wb.show_code(tiles, nested, wb.from_dlpack(out))


def test_errors_from_builtins_are_located_at_the_call():
    @wb.kernel
    def dyn_smem(a, n):
        s = wb.shared_tensor(wb.Float32, wb.make_layout(n))
        s[0] = 1.0

    @wb.kernel
    def missing(a):
        s = wb.shared_tensor(wb.Float32)
        s[0] = 1.0
    with pytest.raises(KernelError, match="static layout for shared memory") as e:
        dyn_smem[1, 1](np.zeros(2, np.float32), 4)
    assert isinstance(e.value, ValueError) and "wb.shared_tensor(wb.Float32, wb.make_layout(n))" in str(e.value)
    with pytest.raises(KernelError, match="missing 1 required positional argument: 'layout'") as e:
        missing[1, 1](np.zeros(2, np.float32))
    assert isinstance(e.value, TypeError) and "test_dsl.py" in str(e.value)


def test_register_fragments_hold_a_threads_values():
    # wb.make_fragment: a per-thread array in registers (aligned for 128-bit copies), fresh per thread
    @wb.kernel
    def reverse4(src, dst):
        t = wb.thread_idx().x
        frag = wb.make_fragment(wb.make_layout(4), wb.Float32)
        wb.copy(wb.local_tile(src, (4,), (t,)), frag)
        out = wb.local_tile(dst, (4,), (t,))
        for k in range(4):
            out[k] = frag[3 - k] + t
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    reverse4[(1, 1, 1), (4, 1, 1)](x, y)
    assert y.tolist() == [v for t in range(4) for v in (x[4 * t + 3 - k] + t for k in range(4))]
    code = wb.show_code(reverse4, wb.from_dlpack(x, assumed_align=16), wb.from_dlpack(y, assumed_align=16))
    assert "__align__(16) float frag[4];" in code and "uint4" in code
    with pytest.raises(KernelError, match="static layout"):
        @wb.kernel
        def bad(src, n):
            wb.make_fragment(wb.make_layout(n), wb.Float32)
        bad[(1, 1, 1), (1, 1, 1)](x, 4)


def test_copy_vectorizes_rows_of_a_dynamic_pitch_when_divisibility_proves_alignment():
    # tile t of zipped_divide(x, (1, 4)) is 4 consecutive floats of a row (the layouts' leading stride-1
    # run); its start is 16-byte aligned only if the row pitch N is known to be a multiple of 4
    @wb.kernel
    def row_copy(src, dst):
        t = wb.thread_idx().x
        frag = wb.make_fragment(wb.make_layout(4), wb.Float32)
        wb.copy(wb.zipped_divide(src, (1, 4))[None, t], frag)
        wb.copy(frag, wb.zipped_divide(dst, (1, 4))[None, t])
    a = np.arange(8 * 12, dtype=np.float32).reshape(8, 12)
    b = np.zeros_like(a)
    proven = [wb.from_dlpack(x, assumed_align=16).mark_compact_shape_dynamic(1, divisibility=4) for x in (a, b)]
    unproven = [wb.from_dlpack(x, assumed_align=16).mark_layout_dynamic() for x in (a, b)]
    code = wb.show_code(row_copy, *proven)
    assert code.count("reinterpret_cast<const uint4*>") == 2 == code.count("reinterpret_cast<uint4*>")  # 128-bit
    assert "uint4" not in wb.show_code(row_copy, *unproven)        # a ? pitch of divisibility 1
    row_copy[(1, 1, 1), (24, 1, 1)](*proven)
    assert np.array_equal(b, a)


@pytest.mark.parametrize("m,n", [(40, 256), (37, 130), (1, 3)])
def test_the_optimisation_ladder_adds_on_any_size(m, n):
    rng = np.random.default_rng(m * n)
    a, b = (rng.standard_normal((m, n)).astype(np.float32) for _ in range(2))
    for name, _, _, launch, _ in E.ladder(m, n, variants=True):
        c = np.full((m, n), np.nan, np.float32)
        launch(*(wb.from_dlpack(x, assumed_align=16) for x in (a, b, c)))
        assert np.array_equal(c, a + b), name
    t = [wb.from_dlpack(np.zeros((64, 256), np.float32), assumed_align=16) for _ in range(3)]
    for name, k, extra, _, _ in E.ladder(64, 256, variants=True):
        assert ("uint4" in wb.show_code(k, *t, *extra)) == (name != "naive"), name


# -- transpose_tile: vec-wide chunks through a swizzled shared tile, any size ----------------------------------
def _padded(rows, cols, pitch, fill=None, rng=None):
    """A (rows, cols) view of a 16-byte aligned (rows, pitch) buffer: rows 16-byte aligned when 4 | pitch."""
    buf = _aligned16(rows * pitch).reshape(rows, pitch)
    buf[:] = np.nan if rng is None else rng.standard_normal((rows, pitch)).astype(np.float32)
    return buf[:, :cols]


@pytest.mark.parametrize("tile,vec,rows,dst_rows", [(64, 4, 32, True), (32, 4, 8, False), (64, 2, 16, True),
                                                    (32, 1, 8, True), (128, 4, 16, False)])
@pytest.mark.parametrize("m,n,pitch", [(70, 45, 48), (33, 130, 132), (5, 3, 4)])
def test_transpose_tile_on_ragged_sizes_matches_numpy(tile, vec, rows, dst_rows, m, n, pitch):
    rng = np.random.default_rng(m * n + vec)
    # compact (odd pitches: nothing 128-bit is provable) and padded rows (vector chunks, the last one cut by the
    # edge: element by element)
    for src, dst in ((rng.standard_normal((m, n)).astype(np.float32), np.full((n, m), np.nan, np.float32)),
                     (_padded(m, n, pitch, rng=rng), _padded(n, m, -(-m // 4) * 4))):
        s, d = wb.from_dlpack(src, assumed_align=16), wb.from_dlpack(dst, assumed_align=16)
        E.launch_transpose_tile(s, d, tile, vec, rows, dst_rows)
        assert np.array_equal(dst, src.T)


def test_transpose_tile_vector_path_is_taken_where_alignment_is_proven():
    s, d = (wb.from_dlpack(_padded(70, 45, 48, rng=np.random.default_rng(1)), assumed_align=16),
            wb.from_dlpack(_padded(45, 70, 72), assumed_align=16))
    code = wb.show_code(E.transpose_tile, s, d, 64, 4, 32, True)
    full, ragged = code.split("} else {", 1)
    assert "uint4" in full and "dst_shape" not in code      # static layouts: every bound a constant
    ptx = compile_ptx(code, "sm_90")
    assert "ld.global.v4" in ptx and "st.global.v4" in ptx and "st.shared.v4" in ptx
    dyn = [wb.from_dlpack(_aligned16(64 * 64).reshape(64, 64), assumed_align=16)
           .mark_compact_shape_dynamic(1, divisibility=4).mark_compact_shape_dynamic(0, divisibility=4) for _ in "sd"]
    ptx = compile_ptx(wb.show_code(E.transpose_tile, *dyn, 64, 2, 16, True), "sm_90")
    assert "ld.global.v2" in ptx and "st.global.v2" in ptx and "st.shared.v2" in ptx
    compact = [wb.from_dlpack(np.zeros((45, 70), np.float32).T.copy(), assumed_align=16),
               wb.from_dlpack(np.zeros((45, 70), np.float32), assumed_align=16)]   # pitches 45 and 70
    ptx = compile_ptx(wb.show_code(E.transpose_tile, *compact, 64, 4, 32, True), "sm_90")
    assert "ld.global.v" not in ptx and "st.global.v4" not in ptx     # 45 floats a row: no vector loads
    assert "st.global.v2" in ptx and "st.shared.v4" in ptx              # 70 is even: 64-bit stores, no wider


@pytest.mark.parametrize("tile,vec", [(32, 1), (32, 2), (32, 4), (64, 1), (64, 2), (64, 4), (128, 4)])
def test_transpose_tile_swizzle_is_free_of_bank_conflicts(tile, vec):
    from workbench.atoms.conflicts import phase_wavefronts
    lanes, groups = 32 // vec, tile // 32
    sw = wb.composition(wb.Swizzle(int(math.log2(lanes)), int(math.log2(vec)), int(math.log2(tile))),
                        wb.make_layout((tile, (vec, tile // vec)), stride=(tile, (1, vec))))
    # the kernel's threads: lanes along a row, vec rows a warp, `groups` warps side by side
    t = np.arange(256 if tile < 128 else 1024)
    tx = t % lanes + lanes * ((t // 32) % groups)
    ty = (t % 32) // lanes + vec * ((t // 32) // groups)
    for w in range(len(t) // 32):
        x, y = tx[32 * w:32 * w + 32], ty[32 * w:32 * w + 32]
        # stores of vec floats along row y, chunk x: one phase is 128 bytes of threads (8 for 128-bit accesses)
        store = np.array([[sw(int(r), int(c) * vec + k) * 4 for k in range(vec)] for r, c in zip(y, x)])
        for p in range(0, 32, 32 // vec):
            assert phase_wavefronts(store[p:p + 32 // vec]) == (1, 1)
        # loads of one float down column y, rows vec * x + j: the whole warp in one phase
        for j in range(vec):
            assert phase_wavefronts([sw(int(vec * c + j), int(r)) * 4 for r, c in zip(y, x)]) == (1, 1)
    unswizzled = wb.make_layout((tile, tile), stride=(tile, 1))
    x, y = tx[:32], ty[:32]
    assert phase_wavefronts([unswizzled(int(vec * c), int(r)) * 4 for r, c in zip(y, x)])[0] == lanes


@pytest.mark.parametrize("kw,msg", [(dict(tile=48), "tile in"), (dict(vec=3), "vec in"),
                                    (dict(rows=6, vec=4), "rows a multiple of vec"),
                                    (dict(tile=32, rows=64), "rows a multiple"),
                                    (dict(tile=128, vec=1, rows=16), "at most 1024")])
def test_launch_transpose_tile_refuses_bad_shapes(kw, msg):
    with pytest.raises(ValueError, match=msg):
        E.launch_transpose_tile(np.zeros((4, 6), np.float32), np.zeros((6, 4), np.float32), **kw)


def test_launch_transpose_tile_refuses_mismatched_tensors():
    with pytest.raises(ValueError, match=r"dst of shape \(6, 4\)"):
        E.launch_transpose_tile(np.zeros((4, 6), np.float32), np.zeros((4, 6), np.float32))


# -- launch bounds, named barriers, element types in kernels, packed 16-bit rounding ----------------------------
def test_launch_bounds_reach_the_code_and_refuse_larger_blocks():
    @wb.kernel(launch_bounds=(256, 2))
    def bounded(out):
        out[wb.thread_idx().x] = 1.0
    o = np.zeros(256, np.float32)
    assert "__launch_bounds__(256, 2) bounded(" in wb.show_code(bounded, o)
    bounded[1, 256](o)
    assert np.all(o == 1)
    with pytest.raises(ValueError, match=r"at most 256 threads for bounded \(its launch_bounds\)"):
        bounded[1, 512](np.zeros(512, np.float32))
    for bad in (0, 2048, (256, 0), "256", (256, 1, 1)):
        with pytest.raises(ValueError, match="launch_bounds as max threads"):
            wb.kernel(launch_bounds=bad)


def test_setmaxnreg_needs_launch_bounds():
    """Without the block's size at compile time ptxas drops setmaxnreg (C7508): refused while tracing."""
    def body(out):
        if wb.thread_idx().x < 128:
            wb.warpgroup_reg_dealloc(40)
        out[wb.thread_idx().x] = 1.0
    with pytest.raises(KernelError, match=r"launch_bounds=THREADS"):
        wb.kernel(body)[1, 256](np.zeros(256, np.float32))
    code = wb.show_code(wb.kernel(launch_bounds=256)(body), np.zeros(256, np.float32))
    assert "__launch_bounds__(256, 1)" in code and "setmaxnreg.dec.sync.aligned.u32 40" in code
    assert "C7508" not in compile_log(code)


def compile_log(code):
    from cupy_backends.cuda.libs import nvrtc
    prog = nvrtc.createProgram(code, "k.cu", [], [])
    try:
        nvrtc.compileProgram(prog, ["--gpu-architecture=sm_90a", "-std=c++17", "--ptxas-options=-v"])
        log = nvrtc.getProgramLog(prog)
        return log.decode() if isinstance(log, bytes) else log
    finally:
        nvrtc.destroyProgram(prog)


def test_named_barriers_sync_their_threads_and_a_short_one_is_reported():
    @wb.kernel
    def halves(out):
        t = wb.thread_idx().x
        s = wb.shared_tensor(wb.Float32, 256)
        s[t] = t * 1.0
        if t < 128:
            wb.barrier(1, 128)
            out[t] = s[127 - t]
        else:
            wb.barrier(2, 128)
            out[t] = s[383 - t]
    o = np.zeros(256, np.float32)
    halves[1, 256](o)
    np.testing.assert_array_equal(o, np.r_[np.arange(127, -1, -1), np.arange(255, 127, -1)])
    assert 'bar.sync 1, 128;' in wb.show_code(halves, o)

    @wb.kernel
    def short(out):
        t = wb.thread_idx().x
        if t < 64:
            wb.barrier(1, 128)
        out[t] = 1.0
    with pytest.raises(KernelRuntimeError, match=r"threads 0\.\.63 \(64\) wait at barrier\(1, 128\)"):
        short[1, 128](np.zeros(128, np.float32))
    for args, msg in (((0, 64), "barrier_id from 1 to 15"), ((16, 64), "barrier_id from 1 to 15"),
                      ((1, 48), "multiple of 32")):
        @wb.kernel
        def bad(out, i: wb.Constexpr, n: wb.Constexpr):
            wb.barrier(i, n)
        with pytest.raises(KernelError, match=msg):
            bad[1, 64](np.zeros(1, np.float32), *args)


def test_element_types_compare_while_tracing():
    @wb.kernel
    def by_type(x, out):
        if x.element_type == wb.Float16:
            out[0] = 16.0
        elif x.element_type != wb.Float32:
            out[0] = 1.0
        else:
            out[0] = 32.0
    for dt, want in ((np.float16, 16), (np.float32, 32), (np.int32, 1)):
        o = np.zeros(1, np.float32)
        by_type[1, 1](np.zeros(4, dt), o)
        assert o[0] == want
    body = wb.show_code(by_type, np.zeros(4, np.float16), np.zeros(1, np.float32)).split("__global__")[1]
    assert "if (" not in body and body.count("out[0] = ") == 1       # decided while tracing

    @wb.kernel
    def ordered(x, out):
        if x.element_type < wb.Float16:
            out[0] = 1.0
    with pytest.raises(KernelError, match="== or != between element types"):
        ordered[1, 1](np.zeros(4, np.float16), np.zeros(1, np.float32))


@pytest.mark.parametrize("dtype", [wb.Float16, wb.BFloat16])
def test_a_fragment_rounded_to_16_bits_converts_pairs_at_once(dtype):
    """frag16.store(frag32.load().to(t)): one cvt.rn.{f16,bf16}x2.f32 per pair (ptxas serializes a kernel's wgmma
    around scalar 16-bit conversions of its accumulators); the values are the scalar rounding's."""
    @wb.kernel
    def rnd(x, out):
        f = wb.make_fragment(8, wb.Float32)
        for i in range(8):
            f[i] = x[i]
        h = wb.make_fragment(8, out.element_type)
        h.store(f.load().to(out.element_type))
        wb.copy(h, wb.local_tile(out, (8,), (0,)))
    x = np.array([1.0, -2.5, 65504.0, 1e-8, 3.14159, np.inf, -0.0, 60000.5], np.float32)
    o = np.zeros(8, np.float16 if dtype is wb.Float16 else np.float32)
    code = wb.show_code(rnd, x, np.zeros(8, np.float16)) if dtype is wb.Float16 else None
    if code is not None:
        assert code.count("= _wb_f2h2(") == 4
        rnd[1, 1](x, o)
        np.testing.assert_array_equal(o, x.astype(np.float16))
        assert "C7514" not in compile_log(code)
    ptx = compile_ptx(wb.show_code(rnd, x, np.zeros(8, np.float16) if dtype is wb.Float16 else
                                   _bf16_zeros(8)), "sm_90")
    assert ptx.count(f"cvt.rn.{'f16' if dtype is wb.Float16 else 'bf16'}x2.f32") == 4


def _bf16_zeros(n):
    import torch
    return torch.zeros(n, dtype=torch.bfloat16)


def test_a_copy_into_a_swizzled_tile_keeps_vector_stores_within_the_swizzle_period():
    """Swizzle<B,M,S> o offset o L keeps aligned runs of 2^M elements together: a thread's adjacent pairs go to
    shared memory as 32-bit stores even at a dynamic (per-thread) offset, and land where the layout says."""
    sw = wb.composition(wb.Swizzle(3, 3, 3), wb.make_layout((8, 64), stride=(64, 1)))

    @wb.kernel
    def pairs(out):
        t = wb.thread_idx().x
        s = wb.shared_tensor(wb.Float16, sw)
        f = wb.make_fragment(2, wb.Float16)
        f[0] = t * 2.0
        f[1] = t * 2.0 + 1.0
        wb.copy(f, wb.local_tile(s, (1, 2), (t // 32, t % 32)))
        wb.sync_threads()
        for i in range(2):
            out[t * 2 + i] = s[(t * 2 + i) // 64, (t * 2 + i) % 64]
    o = np.zeros(512, np.float16)
    pairs[1, 256](o)
    np.testing.assert_array_equal(o, np.arange(512, dtype=np.float16))

    @wb.kernel
    def sizes(out):      # the layout queries take a swizzled shared tensor as they take any tensor
        s = wb.shared_tensor(wb.Float16, sw)
        out[0] = wb.size(s) * 1.0
        out[1] = wb.shape(s)[1] * 1.0
        out[2] = wb.size(wb.local_tile(s, (4, 8), (1, 2))) * 1.0
    q = np.zeros(3, np.float32)
    sizes[1, 1](q)
    assert list(q) == [512, 64, 32]
    assert "reinterpret_cast<unsigned int*>(smem" in wb.show_code(pairs, o)


def test_bar_arrive_signals_without_waiting():
    """barrier_arrive (bar.arrive) counts toward a named barrier without waiting: the syncing half reads what the
    arriving half wrote before it arrived."""
    @wb.kernel
    def handoff(out):
        t = wb.thread_idx().x
        s = wb.shared_tensor(wb.Float32, 128)
        if t < 128:
            s[t] = t * 2.0
            wb.barrier_arrive(1, 256)
            out[t] = 1.0
        else:
            wb.barrier(1, 256)
            out[t] = s[t - 128]
    o = np.zeros(256, np.float32)
    handoff[1, 256](o)
    np.testing.assert_array_equal(o, np.r_[np.ones(128), np.arange(128) * 2.0])
    code = wb.show_code(handoff, o)
    assert "bar.arrive 1, 256;" in code and "bar.sync 1, 256;" in code
