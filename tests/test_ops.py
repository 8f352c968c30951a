"""Each hardware operation of the kernel DSL (one module of workbench/dsl/ops each), run by a kernel that uses it on
the CPU executor and on a GPU (the ``backend`` fixture; the GPU side runs on the device machine, ``pytest -m gpu``):
the results equal the reference on both, and the generated CUDA holds the operation's PTX.  A new op module without a
test here fails test_every_op_module_is_tested."""

from __future__ import annotations

import pkgutil

import numpy as np
import pytest

import workbench as wb
import workbench.dsl.ops as ops
from workbench.kernels import examples as E
from workbench.kernels import gemm_ladder as G
from workbench.kernels.gemm_hopper import HopperGemm


def _source(kernel, *args) -> str:
    """The CUDA a launch with these arguments compiles."""
    return kernel.specialize(args).cuda_source


# -- sync: __syncthreads, bar.sync / bar.arrive ------------------------------------------------------------------
@wb.kernel
def _reverse(src, dst):
    t = wb.thread_idx().x
    s = wb.shared_tensor(wb.Float32, wb.make_layout(64))
    s[t] = src[t]
    wb.sync_threads()
    dst[t] = s[63 - t]


@wb.kernel
def _handoff(src, dst):
    t = wb.thread_idx().x
    s = wb.shared_tensor(wb.Float32, wb.make_layout(32))
    if t < 32:                 # warp 0 produces and signals without waiting
        s[t] = src[t] * 2.0
        wb.barrier_arrive(1, 64)
    else:                      # warp 1 waits for it at the same named barrier
        wb.barrier(1, 64)
        dst[t - 32] = s[t - 32]


def test_sync(backend):
    x = np.arange(64, dtype=np.float32)
    src, dst = backend.array(x), backend.array(np.full(64, np.nan, np.float32))
    _reverse[(1, 1, 1), (64, 1, 1)](src, dst)
    np.testing.assert_array_equal(backend.numpy(dst), x[::-1])
    assert "__syncthreads();" in _source(_reverse, src, dst)
    src, dst = backend.array(x[:32].copy()), backend.array(np.full(32, np.nan, np.float32))
    _handoff[(1, 1, 1), (64, 1, 1)](src, dst)
    np.testing.assert_array_equal(backend.numpy(dst), 2 * x[:32])
    code = _source(_handoff, src, dst)
    assert "bar.arrive 1, 64;" in code and "bar.sync 1, 64;" in code


# -- cluster: %cluster_ctarank, barrier.cluster -----------------------------------------------------------------
@wb.kernel(cluster=(2, 1, 1))
def _ranks(out):
    r = wb.block_rank_in_cluster()
    wb.cluster_sync()
    if wb.thread_idx().x == 0:
        out[wb.block_idx().x] = r


def test_cluster(backend):
    backend.require_sm90()
    out = backend.array(np.full(4, -1, np.int32))
    _ranks[(4, 1, 1), (32, 1, 1)](out)
    np.testing.assert_array_equal(backend.numpy(out), [0, 1, 0, 1])
    code = _source(_ranks, out)
    assert "%%cluster_ctarank" in code and "barrier.cluster.arrive" in code


# -- vector_copy: 128-bit accesses where proven ---------------------------------------------------------------------
def test_vector_copy(backend):
    x = np.arange(4096, dtype=np.float32)
    a = wb.from_dlpack(backend.array(x), assumed_align=16).mark_layout_dynamic()
    y = backend.array(np.full(4096, np.nan, np.float32))
    b = wb.from_dlpack(y, assumed_align=16).mark_layout_dynamic()
    E.vcopy[(4, 1, 1), (128, 1, 1)](a, b, 8)
    np.testing.assert_array_equal(backend.numpy(y), x)
    assert "uint4" in _source(E.vcopy, a, b, 8)


# -- mma_sync, ldmatrix, cp_async: the GEMM ladder's rungs at a ragged size ------------------------------------------
def _rung(backend, name):
    """Run a ladder rung on A, B of small integers at a ragged size; the CUDA of its specializations."""
    r = next(x for x in G.ladder() if x.name == name)
    rng = np.random.default_rng(1)
    m, n, k = 40, 72, 40
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b = rng.integers(-3, 4, (n, k)).astype(np.float16)
    c = backend.array(np.full((m, n), np.nan, np.float32))
    ta, tb = (wb.from_dlpack(backend.array(x), assumed_align=16) for x in (a, b))
    r.launch(ta, tb, c)
    np.testing.assert_array_equal(backend.numpy(c), G.reference(a, b))
    return [sp.cuda_source for sp in r.kernel.specializations]


def test_mma_sync(backend):
    assert any("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in s for s in _rung(backend, "mma"))


def test_ldmatrix(backend):
    assert any("ldmatrix.sync.aligned.m8n8.x4.shared.b16" in s for s in _rung(backend, "smem_ldmatrix"))


def test_cp_async(backend):
    assert any("cp.async.cg.shared.global" in s and "cp.async.wait_group" in s for s in _rung(backend, "pipelined"))


# -- wgmma, tma, mbarrier, setmaxnreg, fence: the Hopper rung, warp-specialized, at a ragged size --------------------
SMALL = HopperGemm(bm=128, bn=64, bk=64, stages=2)
HOPPER_PTX = {"wgmma": "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16",
              "tma": "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
              "mbarrier": "mbarrier.try_wait.parity.shared::cta.b64",
              "setmaxnreg": "setmaxnreg.inc.sync.aligned.u32",
              "fence": "fence.proxy.async.shared::cta"}


def _hopper(backend, op):
    backend.require_sm90()
    m, n, k = 130, 72, 136     # C's rows 16-byte aligned: the TMA-store epilogue (fence.proxy.async, bulk groups)
    rng = np.random.default_rng(m)
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b = rng.integers(-3, 4, (n, k)).astype(np.float16)
    c = backend.array(np.full((m, n), np.nan, np.float16))
    kern, args = SMALL.operands(backend.array(a), backend.array(b), c)
    kern[SMALL.grid(m, n), (SMALL.threads, 1, 1)](*args)
    np.testing.assert_array_equal(backend.numpy(c), (a.astype(np.float64) @ b.astype(np.float64).T).astype(np.float16))
    assert HOPPER_PTX[op] in _source(kern, *args)


@pytest.mark.parametrize("op", sorted(HOPPER_PTX))
def test_hopper_ops(backend, op):
    _hopper(backend, op)


def test_every_op_module_is_tested():
    """Adding an instruction = one op module + its test here (README, architecture)."""
    modules = {m.name for m in pkgutil.iter_modules(ops.__path__)}
    tested = {n.removeprefix("test_") for n in globals() if n.startswith("test_")} | set(HOPPER_PTX)
    assert modules <= tested, sorted(modules - tested)


# -- the claim notebook 11 and ops/setmaxnreg.py make: setmaxnreg needs __launch_bounds__(threads, 1) -----------------
_SETMAXNREG = '''extern "C" __global__ void %s k(float* out) {
  if (threadIdx.x < 128) { asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\\n" ::: "memory"); }
  else { asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\\n" ::: "memory"); out[threadIdx.x] = 1.0f; }
}'''


def _ptxas_log(bounds: str) -> str:
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    prog = nvrtc.createProgram(_SETMAXNREG % bounds, "k.cu", [], [])
    try:
        nvrtc.compileProgram(prog, ["-arch=sm_90a", "-Xptxas=-v"])
        return nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)


def test_setmaxnreg_is_honoured_only_with_max_threads_and_min_blocks():
    """ptxas (through NVRTC, no GPU needed) drops setmaxnreg with warning C7508 unless it knows the register count at
    entry: the block size alone (__launch_bounds__(384)) is not enough, (384, 1) is; the DSL emits both numbers."""
    assert "C7508" in _ptxas_log("")
    assert "C7508" in _ptxas_log("__launch_bounds__(384)")
    assert "C7508" not in _ptxas_log("__launch_bounds__(384, 1)")
    kern, args = SMALL.operands(np.zeros((128, 64), np.float16), np.zeros((64, 64), np.float16),
                                np.zeros((128, 64), np.float32))
    assert f"__launch_bounds__({SMALL.threads}, 1)" in _source(kern, *args)
