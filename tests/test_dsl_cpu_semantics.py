"""The CPU executor reproduces the C++ semantics of the CUDA backend (integer wrap-around, C
division, float32 rounding after each operation) and bounds-checks raw pointers.

Each CPU result is compared with numpy's fixed-width arithmetic and with an independent model of
what the C++ computes; the ``gpu`` tests run the same kernels on the device and compare bits."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench import host_buffers
from workbench.dsl.backends.cpu import KernelRuntimeError
from workbench.dsl.runtime import cupy as backend_cupy

GPU = backend_cupy.gpu_available()
gpu = pytest.mark.skipif(not GPU, reason="needs cupy and a CUDA GPU")


def c_wrap(v, bits=32, signed=True):
    """Two's complement reduction, as the C++ the CUDA backend emits computes it (model)."""
    v %= 1 << bits
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


def c_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


@wb.kernel
def imul(a, b, out):
    i = wb.thread_idx().x
    if i < wb.size(out):
        out[i] = a[i] * b[i] + a[i]


@wb.kernel
def hash_loop(x, out, n):
    h = 17
    for k in range(n):
        h = h * 31 + x[k]       # an Int32 accumulator that overflows many times
    out[0] = h


@wb.kernel
def divmod_k(a, b, q, r):
    i = wb.thread_idx().x
    if i < wb.size(q):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]


@wb.kernel
def bits_k(a, u, out):
    i = wb.thread_idx().x
    if i < wb.size(a):
        out[i, 0] = a[i] >> 3            # arithmetic shift of a signed value
        out[i, 1] = wb.Int32(u[i] >> 3)  # logical shift of an unsigned value
        out[i, 2] = wb.Int32(u[i] + u[i])  # Uint32 wraps at 2**32
        out[i, 3] = wb.Int32(a[i] < u[i])  # C converts the int to unsigned first
        out[i, 4] = ~a[i]
        out[i, 5] = wb.Int32(a[i] << 4)


@wb.kernel
def fmix(a, b, c, out, s):
    i = wb.thread_idx().x
    if i < wb.size(out):
        out[i] = (a[i] + b[i]) * c[i] / (a[i] - s) + 0.1


@wb.kernel
def fsum(x, out, n):
    acc = 0.0
    for k in range(n):
        acc += x[k]
    out[0] = acc


def _i32(rng, n, lo=-(1 << 31), hi=(1 << 31) - 1):
    return rng.integers(lo, hi, n, dtype=np.int64, endpoint=True).astype(np.int32)


def _imul_inputs():
    rng = np.random.default_rng(1)
    a, b = _i32(rng, 64), _i32(rng, 64)
    a[:4] = [2 ** 31 - 1, -2 ** 31, 65536, 46341]
    b[:4] = [2, -1, 65536, 46341]
    return a, b


def test_int32_multiply_wraps_like_numpy_and_cuda():
    a, b = _imul_inputs()
    out = np.zeros(64, np.int32)
    imul[1, 64](a, b, out)
    with np.errstate(over="ignore"):
        assert np.array_equal(out, a * b + a)                               # numpy int32 wraps
    model = [c_wrap(int(x) * int(y) + int(x)) for x, y in zip(a, b)]
    assert out.tolist() == model
    assert out[0] == c_wrap((2 ** 31 - 1) * 3) == 2 ** 31 - 3                 # 3 * 2**31 - 3 mod 2**32
    assert out[2] == 65536                                                  # 2**32 wraps to 0, + a


def test_int32_accumulator_wraps_across_iterations_and_int64_wraps_at_64_bits():
    x = _i32(np.random.default_rng(2), 100)
    out = np.zeros(1, np.int32)
    hash_loop[1, 1](x, out, 100)
    h = 17
    for v in x.tolist():
        h = c_wrap(h * 31 + v)
    assert out[0] == h
    a = np.array([2 ** 62, -2 ** 63, 3], np.int64)
    o64 = np.zeros(3, np.int64)
    imul[1, 3](a, a, o64)
    with np.errstate(over="ignore"):
        assert np.array_equal(o64, a * a + a)
    assert o64.tolist() == [c_wrap(int(v) * int(v) + int(v), 64) for v in a]


def test_small_ints_promote_to_int_then_wrap_on_store():
    a = np.array([100, -128, 127, -1], np.int8)
    out = np.zeros(4, np.int8)
    imul[1, 4](a, a, out)
    assert out.tolist() == [c_wrap(int(v) * int(v) + int(v), 8) for v in a]
    u = np.array([200, 255, 16, 0], np.uint8)
    o16 = np.zeros(4, np.int16)
    imul[1, 4](u, u, o16)                    # computed in int (no 8-bit wrap), stored as short
    assert o16.tolist() == [c_wrap(int(v) * int(v) + int(v), 16) for v in u]


def test_division_and_modulo_truncate_toward_zero():
    a = np.array([7, -7, 7, -7, 0, -1, -2 ** 31, -2 ** 31, 5, -6], np.int32)
    b = np.array([2, 2, -2, -2, 3, 5, -1, 7, -7, 4], np.int32)
    q, r = np.zeros_like(a), np.zeros_like(a)
    divmod_k[1, 16](a, b, q, r)
    assert q.tolist() == [c_wrap(c_div(int(x), int(y))) for x, y in zip(a, b)]
    assert q[:4].tolist() == [3, -3, -3, 3] and q[6] == -2 ** 31          # INT_MIN / -1 wraps
    assert np.array_equal(r, np.fmod(a, b))                                 # C's remainder
    assert r[:4].tolist() == [1, -1, 1, -1]
    assert np.array_equal(a[:6], (q * b + r)[:6])
    with pytest.raises(KernelRuntimeError, match="division by zero"):
        divmod_k[1, 1](np.ones(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32))


def _bits_inputs():
    a = np.array([-17, 17, -1, 2 ** 31 - 1, -2 ** 31, 0], np.int32)
    u = np.array([2 ** 32 - 1, 17, 1, 2 ** 31, 3, 0], np.uint32)
    return a, u


def _bits_model(a, u):
    out = []
    for x, y in zip(a.tolist(), u.tolist()):
        out.append([x >> 3, y >> 3, c_wrap(2 * y), int((x % 2 ** 32) < y), ~x, c_wrap(x << 4)])
    return out


def test_shifts_bitwise_and_mixed_sign_comparison_follow_the_declared_width():
    a, u = _bits_inputs()
    out = np.zeros((6, 6), np.int32)
    bits_k[1, 6](a, u, out)
    assert out.tolist() == _bits_model(a, u)
    assert out[2, 3] == 0                    # -1 < 1u is false in C++


def _fmix_inputs():
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal(256).astype(np.float32) for _ in range(3))
    return a, b, c


def _fmix_numpy(a, b, c, s):
    f = np.float32
    with np.errstate(divide="ignore", invalid="ignore"):
        return ((a + b) * c / (a - f(s)) + f(0.1)).astype(np.float32)


def test_float32_is_rounded_after_every_operation():
    a, b, c = _fmix_inputs()
    a[0] = 0.3                               # a - s == 0: IEEE inf, not ZeroDivisionError
    out = np.zeros(256, np.float32)
    fmix[1, 256](a, b, c, out, 0.3)          # the 0.3 argument is packed as float32
    assert np.array_equal(out, _fmix_numpy(a, b, c, 0.3), equal_nan=True)   # bit for bit
    assert np.isinf(out[0])
    with np.errstate(divide="ignore"):
        in_double = ((a.astype(np.float64) + b) * c / (a.astype(np.float64) - np.float32(0.3)) + 0.1).astype(np.float32)
    assert not np.array_equal(out[1:], in_double[1:])  # double evaluation differs: the test can fail


def test_float32_accumulation_matches_sequential_float32_sum():
    x = np.random.default_rng(4).standard_normal(3000).astype(np.float32)
    out = np.zeros(1, np.float32)
    fsum[1, 1](x, out, 3000)
    acc = np.float32(0)
    for v in x:
        acc = np.float32(acc + v)
    assert out[0] == acc
    assert out[0] != np.float32(x.astype(np.float64).sum())


# -- raw pointers ------------------------------------------------------------------------------------
@wb.kernel
def ptr_copy(src, dst, lo, n):
    s = wb.make_tensor(src, wb.make_layout(n + 64))
    d = wb.make_tensor(dst, wb.make_layout(n + 64))
    for k in range(n):
        d[k] = s[lo + k]


def _ptr(x):
    return wb.make_ptr(wb.Float32, x.ctypes.data, "generic")


def test_raw_pointer_accesses_are_bounded_by_the_declared_buffer():
    backing = np.arange(16, dtype=np.float32)
    src = backing[2:10]                      # the declared buffer: 8 elements inside a larger array
    dst = np.full(8, -1, np.float32)
    with host_buffers(src, dst, backing):
        ptr_copy[1, 1](_ptr(src), _ptr(dst), 0, 8)
        assert np.array_equal(dst, src)
        with pytest.raises(KernelRuntimeError, match="out-of-bounds access to 'src' at element offset 8"):
            ptr_copy[1, 1](_ptr(src), _ptr(dst), 1, 8)     # reads src[8]: inside `backing`, outside the buffer
        with pytest.raises(KernelRuntimeError, match="out-of-bounds access to 'dst' at element offset 8"):
            ptr_copy[1, 1](_ptr(backing), _ptr(dst), 0, 9)  # src = all of `backing` (declared below)
        inner = wb.make_ptr(wb.Float32, src.ctypes.data + 8, "generic")   # &src[2]: src[-2] is in bounds
        ptr_copy[1, 1](inner, _ptr(dst), -2, 8)
        assert np.array_equal(dst, src)
        with pytest.raises(KernelRuntimeError, match="element offset -3"):
            ptr_copy[1, 1](inner, _ptr(dst), -3, 1)
    assert np.array_equal(backing, np.arange(16, dtype=np.float32))     # nothing outside was written


def test_raw_pointer_outside_declared_memory_or_into_read_only_memory_is_refused():
    x = np.zeros(8, np.float32)
    y = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match="raw pointer argument 'src'.*host_buffers"):
        ptr_copy[1, 1](_ptr(x), _ptr(y), 0, 1)
    with host_buffers(y), pytest.raises(ValueError, match="raw pointer argument 'src'"):
        ptr_copy[1, 1](_ptr(x), _ptr(y), 0, 1)
    ro = np.zeros(8, np.float32)
    ro.flags.writeable = False
    with host_buffers(x, ro), pytest.raises(ValueError, match="writable memory.*'dst'"):
        ptr_copy[1, 1](_ptr(x), _ptr(ro), 0, 1)
    with pytest.raises(TypeError, match="buffer protocol"):
        with host_buffers([1.0, 2.0]):
            pass
    with pytest.raises(ValueError, match="C-contiguous"):
        with host_buffers(np.zeros((4, 4), np.float32)[:, ::2]):
            pass


# -- the same kernels on the GPU: bit-identical results ------------------------------------------------
@gpu
def test_gpu_integer_results_are_bit_identical():
    import cupy
    a, b = _imul_inputs()
    out = cupy.zeros(64, cupy.int32)
    imul[1, 64](cupy.asarray(a), cupy.asarray(b), out)
    host = np.zeros(64, np.int32)
    imul[1, 64](a, b, host)
    assert np.array_equal(cupy.asnumpy(out), host)
    a = np.array([7, -7, 7, -7, 0, -1, -2 ** 31, 5, -6], np.int32)
    b = np.array([2, 2, -2, -2, 3, 5, 7, -7, 4], np.int32)
    q, r = cupy.zeros(9, cupy.int32), cupy.zeros(9, cupy.int32)
    divmod_k[1, 16](cupy.asarray(a), cupy.asarray(b), q, r)
    hq, hr = np.zeros(9, np.int32), np.zeros(9, np.int32)
    divmod_k[1, 16](a, b, hq, hr)
    assert np.array_equal(cupy.asnumpy(q), hq) and np.array_equal(cupy.asnumpy(r), hr)
    a, u = _bits_inputs()
    out = cupy.zeros((6, 6), cupy.int32)
    bits_k[1, 6](cupy.asarray(a), cupy.asarray(u), out)
    assert cupy.asnumpy(out).tolist() == _bits_model(a, u)


@gpu
def test_gpu_float32_results_are_bit_identical():
    import cupy
    a, b, c = _fmix_inputs()
    out = cupy.zeros(256, cupy.float32)
    fmix[1, 256](cupy.asarray(a), cupy.asarray(b), cupy.asarray(c), out, 0.3)
    host = np.zeros(256, np.float32)
    fmix[1, 256](a, b, c, host, 0.3)
    assert np.array_equal(cupy.asnumpy(out), host, equal_nan=True)


def test_an_out_of_bounds_access_says_where_and_what_the_tensor_spans():
    @wb.kernel
    def label(out):
        tx, ty, _ = wb.thread_idx()
        bx, by, _ = wb.block_idx()
        out[by * 4 + ty, bx * 4 + tx] = 1
    a = np.zeros((10, 6), np.int32)
    with pytest.raises(KernelRuntimeError, match=r"element offset \d+ \(the tensor spans element offsets 0\.\.59\) "
                                                  r"in block \(\d, \d, 0\), thread \(\d, \d, 0\)"):
        label[(2, 3, 1), (4, 4, 1)](a)


@wb.kernel
def _copy_rows(src, dst):
    r = wb.thread_idx().x
    wb.copy(src[r, None], dst[r, None])


def test_vector_accesses_of_a_negative_stride_tensor_are_bounds_checked_by_their_own_extent():
    # rows reversed: element offsets -8..7 from the data pointer; each row is two proven 128-bit accesses, whose range
    # check once added the view's base twice and refused the second row as out of bounds
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    src = wb.from_dlpack(x[::-1], assumed_align=16)
    out = np.zeros((2, 8), np.float32)
    dst = wb.from_dlpack(out, assumed_align=16)
    assert wb.show_code(_copy_rows, src, dst).count("uint4") == 6
    _copy_rows[(1, 1, 1), (2, 1, 1)](src, dst)
    np.testing.assert_array_equal(out, x[::-1])

