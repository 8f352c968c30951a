"""GPU tests of the kernel DSL (run on the device machine: pytest -m gpu)."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.dsl.runtime import cupy as backend_cupy

pytestmark = pytest.mark.gpu

if not backend_cupy.gpu_available():
    pytest.skip("needs cupy and a CUDA GPU", allow_module_level=True)

import cupy  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.kernels import examples as E  # noqa: E402


@pytest.mark.parametrize("name", list(E.make_examples("small")))
def test_example_gpu_matches_cpu_executor(name):
    ex = E.make_examples("small")[name]
    rng = np.random.default_rng(7)
    host = ex.make(rng)
    dev = [cupy.asarray(x) if x.flags.c_contiguous else cupy.asfortranarray(cupy.asarray(x)) for x in host]
    if name == "vadd_strided":
        dev[0] = cupy.asarray(np.repeat(host[0], 2))[::2]
    cpu = [x.copy() for x in host]
    ex.launch(dev)
    ex.launch(cpu)
    for i in ex.outputs:
        assert E.rel_error(cupy.asnumpy(dev[i]), cpu[i]) <= ex.rtol


@pytest.mark.parametrize("name", list(E.make_examples("irregular")))
def test_example_at_1000_by_999_on_gpu_matches_numpy(name):
    ex = E.make_examples("irregular")[name]
    host = ex.make(np.random.default_rng(11))
    dev = [cupy.asarray(x) if x.flags.c_contiguous else cupy.asfortranarray(cupy.asarray(x)) for x in host]
    if name == "vadd_strided":
        dev[0] = cupy.asarray(np.repeat(host[0], 2))[::2]
    ex.launch(dev)
    for i, ref in zip(ex.outputs, ex.reference(host)):
        assert E.rel_error(cupy.asnumpy(dev[i]), ref) <= ex.rtol


def test_vcopy_is_vectorized_and_correct_on_gpu():
    x = cupy.arange(4096, dtype=cupy.float32)
    y = cupy.full(4096, cupy.nan, dtype=cupy.float32)
    a = wb.from_dlpack(x, assumed_align=16).mark_layout_dynamic()
    b = wb.from_dlpack(y, assumed_align=16).mark_layout_dynamic()
    assert "uint4" in wb.show_code(E.vcopy, a, b, 8)
    E.vcopy[(4, 1, 1), (128, 1, 1)](a, b, 8)
    assert bool(cupy.array_equal(x, y))


def test_pointer_bypass_and_torch_tensors_on_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    xs = [torch.randn(32, 32, device="cuda") for _ in range(3)]
    ps = [wb.make_ptr(wb.Float32, t.data_ptr(), "gmem", assumed_align=16) for t in xs]
    E.add_ptr[(4, 1, 1), (256, 1, 1)](*ps, 32, 32)
    torch.cuda.synchronize()
    assert torch.equal(xs[2], xs[0] + xs[1])
    out = torch.full((32, 32), float("nan"), device="cuda")
    E.vadd[(4, 1, 1), (256, 1, 1)](xs[0], xs[1], out)
    torch.cuda.synchronize()
    assert torch.equal(out, xs[0] + xs[1])


def test_dynamic_shape_reuses_gpu_kernel():
    @wb.kernel
    def fill(a, v):
        i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
        if i < wb.size(a):
            a[i] = v
    for n in (100, 1000, 5000):
        x = cupy.zeros(n, dtype=cupy.float32)
        fill[((n + 255) // 256, 1, 1), (256, 1, 1)](x, 2.5)
        assert bool((x == 2.5).all())
    assert len(fill.specializations) == 1
    assert fill.stats.gpu_compiles == 1


def test_host_tensor_refused_for_explicit_gpu_launch():
    x = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match="host"):
        E.vadd.launch(x, x, x, grid=1, block=8, backend="cuda")


def test_dynamic_shared_memory_is_checked_before_the_driver():
    @wb.kernel
    def add1(a):
        i = wb.thread_idx().x
        if i < wb.size(a):
            a[i] = a[i] + 1.0

    x = cupy.zeros(8, dtype=cupy.float32)
    for smem in (-1, 1 << 40, 227 * 1024 + 1):   # the slow path (first launch), then the hot path
        with pytest.raises(ValueError, match="shared memory"):   # were a driver error and ctypes' ArgumentError
            add1.launch(x, grid=1, block=8, smem=smem)
    add1.launch(x, grid=1, block=8, smem=1024)
    cupy.cuda.runtime.deviceSynchronize()
    assert bool((x == 1.0).all())


@pytest.mark.parametrize("cfg", [(64, 4, 32, True), (64, 1, 8, False), (128, 2, 8, True), (32, 4, 8, True)])
def test_transpose_tile_on_gpu_at_ragged_and_padded_sizes(cfg):
    rng = np.random.default_rng(13)
    for m, n, pitch_s, pitch_d in [(1000, 999, 1000, 1000), (70, 45, 48, 72)]:
        # padded rows: 128-bit chunks proven, the last chunk of a row cut by the edge; the padding must stay NaN
        src = cupy.asarray(rng.standard_normal((m, pitch_s)).astype(np.float32))[:, :n]
        dbuf = cupy.full((n, pitch_d), cupy.nan, cupy.float32)
        dst = dbuf[:, :m]
        E.launch_transpose_tile(wb.from_dlpack(src, assumed_align=16), wb.from_dlpack(dst, assumed_align=16), *cfg)
        assert bool(cupy.array_equal(dst, src.T)) and bool(cupy.isnan(dbuf[:, m:]).all())
