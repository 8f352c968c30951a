"""Kernel dispatch: Constexpr keys that == confuses, numpy scalar arguments, and
values outside their parameter type (all on the CPU executor; the GPU path shares the guards)."""

import numpy as np
import pytest

import workbench as wb


@wb.kernel
def scaled_index(a, c: wb.Constexpr):
    i = wb.thread_idx().x
    if i < wb.size(a):
        a[i] = (i + c[0]) * c[1]


def test_constexpr_values_that_compare_equal_get_their_own_kernels():
    y = np.zeros(1, np.float64)
    scaled_index.launch(y, (65536.0, 65536.0), grid=1, block=1)
    assert y[0] == 65536.0 * 65536.0
    scaled_index.launch(y, (65536, 65536), grid=1, block=1)  # Int32 arithmetic: wraps to 0 as in CUDA
    assert y[0] == 0.0
    keys = {sp.key for sp in scaled_index.specializations}
    assert len(keys) == 2
    for _ in range(3):
        scaled_index.launch(y, (float("nan"), 1.0), grid=1, block=1)
    assert len(scaled_index.specializations) == 3  # one NaN kernel, not one per call


@wb.kernel
def scale(a, s):
    i = wb.thread_idx().x
    if i < wb.size(a):
        a[i] = a[i] * s


@pytest.mark.parametrize("s", [np.float32(2), np.int32(2), np.int64(2), 2.0, 2])
def test_numpy_scalars_are_arguments_like_python_ones(s):
    a = np.ones(4, np.float32)
    scale.launch(a, s, grid=1, block=4)
    assert a.tolist() == [2.0] * 4


def test_a_float_out_of_float32_range_is_a_clear_error():
    with pytest.raises((ValueError, OverflowError), match="fit|range|large"):
        scale.launch(np.ones(2, np.float32), 1e39, grid=1, block=2)


@wb.kernel
def vadd(a, b, c):
    i = wb.thread_idx().x
    if i < wb.size(c):
        c[i] = a[i] + b[i]


def test_views_cannot_reach_past_the_memory_they_were_made_over():
    a = np.arange(4, dtype=np.float32)
    with pytest.raises(ValueError, match="inside the memory of"):
        wb.make_tensor(wb.from_dlpack(a), wb.make_layout(64))
    assert wb.make_tensor(wb.from_dlpack(a), wb.make_layout(2, stride=2)).numpy().tolist() == [0.0, 2.0]


def test_tensors_over_bare_host_addresses_are_bounded_like_raw_pointers():
    from workbench import host_buffers

    a, b, out = np.arange(4, dtype=np.float32), np.ones(4, np.float32), np.zeros(64, np.float32)
    ta, tb = (wb.make_tensor(wb.make_ptr(wb.Float32, x.ctypes.data), wb.make_layout(64)) for x in (a, b))
    with pytest.raises(ValueError, match="host_buffers"):
        vadd.launch(ta, tb, out, grid=1, block=64)          # no declared memory: refused
    with host_buffers(a, b, out):
        with pytest.raises(ValueError, match="stay inside its declared host buffer"):
            vadd.launch(ta, tb, out, grid=1, block=64)      # 64 elements over 4: refused
        ok = [wb.make_tensor(wb.make_ptr(wb.Float32, x.ctypes.data), wb.make_layout(4)) for x in (a, b)]
        vadd.launch(ok[0], ok[1], out[:4], grid=1, block=4)
    assert out[:4].tolist() == [1.0, 2.0, 3.0, 4.0] and not out[4:].any()
