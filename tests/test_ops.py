"""Each hardware operation of the kernel DSL (one module of workbench/dsl/ops each), run by a kernel that uses it on
the CPU executor and on a GPU (the ``backend`` fixture; the GPU side runs on the device machine, ``pytest -m gpu``):
the results equal the reference on both, and the generated CUDA holds the operation's PTX.  A new op module without a
test here fails test_every_op_module_is_tested."""

from __future__ import annotations

import pkgutil
import re

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


# -- atomic: atom.add.acq_rel.gpu.s32, the last of a block group to count reads what the others wrote ---------------
@wb.kernel
def _last_adds(part, cnt, out):
    """Each block writes its value, then its thread 0 counts it; the block that counts last (old == blocks - 1)
    adds every block's value: what a stream-K tile's fixup does."""
    t, b = wb.thread_idx().x, wb.block_idx().x
    nb = wb.grid_dim().x
    flag = wb.shared_tensor(wb.Int32, wb.make_layout(1))
    part[b * 32 + t] = (b + 1) * (t + 1)
    wb.sync_threads()
    if t == 0:
        old = wb.atomic_add(cnt, 0, 1)
        flag[0] = 1 if old == nb - 1 else 0
        out[32 + b] = old
    wb.sync_threads()
    if flag[0] == 1:
        s = 0
        for j in wb.range_dynamic(nb):
            s += part[j * 32 + t]
        out[t] = s


def test_atomic(backend):
    blocks = 6
    part = backend.array(np.zeros(blocks * 32, np.int32))
    cnt = backend.array(np.zeros(1, np.int32))
    out = backend.array(np.full(32 + blocks, -1, np.int32))
    _last_adds[(blocks, 1, 1), (32, 1, 1)](part, cnt, out)
    got = backend.numpy(out)
    np.testing.assert_array_equal(got[:32], (np.arange(1, 33)) * sum(range(1, blocks + 1)))
    assert sorted(got[32:]) == list(range(blocks)) and backend.numpy(cnt)[0] == blocks   # each count seen once
    assert "atom.acq_rel.gpu.add.s32" in _source(_last_adds, part, cnt, out)
    with pytest.raises(TypeError, match="global tensor of Int32"):
        _bad_atomic[(1, 1, 1), (32, 1, 1)](np.zeros(4, np.float32))


@wb.kernel
def _bad_atomic(x):
    wb.atomic_add(x, 0, 1)


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
    tested = {n.removeprefix("test_") for n in globals() if n.startswith("test_")} | set(HOPPER_PTX) | set(_TCGEN05_PTX)
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


# -- Blackwell: tcgen05 alloc / mma / commit / ld / fence, one 128x64x64 fp16 UMMA into TMEM --------------------------
# No Blackwell GPU is lent here: the kernel runs on the CPU executor and its CUDA is compiled by NVRTC for sm_100a (to
# PTX and to a cubin), never run on a GPU; the backend fixture's cuda run is skipped for it.
UM, UN, UK = 128, 64, 64
UMMA = wb.mma_atom("SM100_MMA_F16BF16_SS", a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32, m=UM, n=UN)
TACC = UMMA.make_fragment_C(UMMA.partition_shape_C((UM, UN)))
TLOAD = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_LOAD_32dp32b16x", wb.Float32), TACC)
USA = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", wb.Float16), (UM, UK))
USB = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", wb.Float16), (UN, UK))


@wb.kernel
def _umma(a, b, c, wait: wb.Constexpr, free: wb.Constexpr, lane_shift: wb.Constexpr, issuers: wb.Constexpr):
    t = wb.thread_idx().x
    sA = wb.shared_tensor(wb.Float16, USA)
    sB = wb.shared_tensor(wb.Float16, USB)
    bars = wb.shared_tensor(wb.Uint64, 1)
    holder = wb.shared_tensor(wb.Uint32, 1)
    for i in range(t, UM * UK, 128):
        sA[i % UM, i // UM] = a[i % UM, i // UM]
    for i in range(t, UN * UK, 128):
        sB[i % UN, i // UN] = b[i % UN, i // UN]
    if t < 32:
        wb.tmem_alloc(holder, 64)
        wb.tmem_relinquish_alloc_permit()
    if t == 0:
        wb.mbarrier_init(bars, 0, 1)
        wb.mbarrier_init_fence()
    wb.fence_proxy_async()
    wb.tcgen05_fence_before()
    wb.sync_threads()
    wb.tcgen05_fence_after()
    addr = holder[0]
    acc = wb.make_tmem_tensor(addr, TACC)
    if t < issuers:
        wb.gemm(UMMA, acc, sA, sB, acc, accumulate=False)
        wb.tcgen05_commit(bars, 0)
    if wait:
        wb.mbarrier_wait(bars, 0, 0)
    wb.tcgen05_fence_after()
    frag = wb.make_fragment(UN, wb.Float32)
    wb.copy(TLOAD, wb.make_tmem_tensor(addr + (lane_shift << 16), TACC), frag)
    wb.tcgen05_wait_ld()
    for j in range(UN):
        c[t, j] = frag[j]
    wb.tcgen05_fence_before()
    wb.sync_threads()
    if t < 32:
        if free:
            wb.tmem_dealloc(addr, 64)


def _umma_run(backend, wait=True, free=True, lane_shift=0, issuers=1):
    if backend.name == "cuda":
        pytest.skip("tcgen05 needs a Blackwell GPU (sm_100a), and none is lent here: compiled by NVRTC, run on the CPU")
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (UM, UK)).astype(np.float16)
    b = rng.integers(-3, 4, (UN, UK)).astype(np.float16)
    c = np.full((UM, UN), np.nan, np.float32)
    _umma[(1, 1, 1), (128, 1, 1)](a, b, c, wait, free, lane_shift, issuers)
    np.testing.assert_array_equal(c, a.astype(np.float64) @ b.astype(np.float64).T)
    return _source(_umma, a, b, c, wait, free, lane_shift, issuers)


_TCGEN05_PTX = {"tcgen05_alloc": ["tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",
                                  "tcgen05.dealloc.cta_group::1.sync.aligned.b32",
                                  "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned"],
                "tcgen05_mma": ["tcgen05.mma.cta_group::1.kind::f16"],
                "tcgen05_commit": ["tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64"],
                "tcgen05_ld_st": ["tcgen05.ld.sync.aligned.32x32b.x16.b32", "tcgen05.wait::ld.sync.aligned"],
                "tcgen05_fence": ["tcgen05.fence::before_thread_sync", "tcgen05.fence::after_thread_sync"]}


def _sm100a(code, op):
    """NVRTC compiles the kernel for sm_100a (no GPU needed): PTX holding the op's instructions, and a cubin."""
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from workbench.dsl.runtime.cupy import compile_cubin, compile_ptx
    ptx = compile_ptx(code, "sm_100a")
    for text in _TCGEN05_PTX[op]:
        assert text in ptx, (op, text)
    assert len(compile_cubin(code, "sm_100a")) > 0


@pytest.mark.parametrize("op", sorted(_TCGEN05_PTX))
def test_tcgen05_ops(backend, op):
    _sm100a(_umma_run(backend), op)


def test_tcgen05_errors_on_the_cpu():
    """What the CPU executor reports instead of running a wrong Blackwell kernel."""
    cpu = Backend_cpu()
    with pytest.raises(wb.KernelRuntimeError, match="before tcgen05.mma .* wrote it: the mbarrier phase"):
        _umma_run(cpu, wait=False)          # the accumulator read before the commit's mbarrier completed
    with pytest.raises(wb.KernelRuntimeError, match="TMEM columns still allocated"):
        _umma_run(cpu, free=False)          # a leak
    with pytest.raises(wb.KernelRuntimeError, match=r"warp 0 reaches TMEM lanes 32..63"):
        _umma_run(cpu, lane_shift=32)       # a warp reading another warp's quarter of the lanes
    with pytest.raises(wb.KernelRuntimeError, match="issued by thread 0 and by thread 1"):
        _umma_run(cpu, issuers=2)           # every thread issuing the CTA's MMA


def test_tcgen05_is_refused_on_other_gpus():
    """Launched on a GPU that is not sm_100, the kernel is refused before it runs, saying it was never run on one."""
    from workbench.dsl.runtime.cupy import current_arch
    if not wb.gpu_available() or current_arch() == "sm_100":
        pytest.skip("needs a GPU other than sm_100")
    import cupy
    a, b = cupy.zeros((UM, UK), cupy.float16), cupy.zeros((UN, UK), cupy.float16)
    c = cupy.zeros((UM, UN), cupy.float32)
    with pytest.raises(ValueError, match="never run"):
        _umma[(1, 1, 1), (128, 1, 1)](a, b, c, True, True, 0, 1)


def Backend_cpu():
    from conftest import Backend
    return Backend("cpu")


TSTORE = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_STORE_32dp32b16x", wb.Float32), TACC)


def _make_tmem_store_load(store, scale):
    """A kernel in which each thread stores its UN values x[t, :] into TMEM with the tiled copy ``store``, reads its
    row back with tcgen05.ld 32x32b (TLOAD) and writes it times ``scale`` to y[t, :]."""
    @wb.kernel
    def store_load(x, y):
        t = wb.thread_idx().x
        holder = wb.shared_tensor(wb.Uint32, 1)
        if t < 32:
            wb.tmem_alloc(holder, 64)
        wb.tcgen05_fence_before()
        wb.sync_threads()
        wb.tcgen05_fence_after()
        addr = holder[0]
        acc = wb.make_tmem_tensor(addr, TACC)
        f = wb.make_fragment(UN, wb.Float32)
        for j in range(UN):
            f[j] = x[t, j]
        wb.copy(store, f, acc)
        wb.tcgen05_wait_st()
        g = wb.make_fragment(UN, wb.Float32)
        wb.copy(TLOAD, acc, g)
        wb.tcgen05_wait_ld()
        for j in range(UN):
            y[t, j] = g[j] * scale
        wb.tcgen05_fence_before()
        wb.sync_threads()
        if t < 32:
            wb.tmem_dealloc(addr, 64)
    return store_load


_tmem_round_trip = _make_tmem_store_load(TSTORE, 2.0)


def _tmem_round_trip_run():
    x = np.arange(UM * UN, dtype=np.float32).reshape(UM, UN)
    y = np.zeros_like(x)
    _tmem_round_trip[(1, 1, 1), (128, 1, 1)](x, y)
    np.testing.assert_array_equal(y, 2 * x)
    return _source(_tmem_round_trip, x, y)


def test_tcgen05_store_round_trip():
    """tcgen05.st of each thread's row, tcgen05.ld of it back (CPU executor; NVRTC for sm_100a, not run on a GPU)."""
    code = _tmem_round_trip_run()
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from workbench.dsl.runtime.cupy import compile_ptx
    ptx = compile_ptx(code, "sm_100a")
    assert "tcgen05.st.sync.aligned.32x32b.x16.b32" in ptx and "tcgen05.wait::st.sync.aligned" in ptx


# -- Blackwell: tcgen05.cp (shared -> TMEM, UTCCP) feeding a TS UMMA (A from TMEM) --------------------------------------
# thread `cp_by` copies A (128 x 64) into TMEM with four tcgen05.cp.128x256b, thread `mma_by` issues the TS MMAs reading
# it: one thread's tcgen05 operations run in issue order; another thread's copy needs its commit's mbarrier waited on
# (wait_cp) first: a __syncthreads orders the issue, not the completion.
def _make_umma_ts(dtype):
    ts = wb.mma_atom("SM100_MMA_F16BF16_TS", a_type=dtype, b_type=dtype, c_type=wb.Float32, m=UM, n=UN)
    tacc = ts.make_fragment_C(ts.partition_shape_C((UM, UN)))
    ta_layout = ts.make_fragment_A(ts.partition_shape_A((UM, UK)))
    utccp = wb.copy_atom("SM100_UTCCP_128dp256bit_1cta", dtype)
    tload = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_LOAD_32dp32b16x", wb.Float32), tacc)
    sa_layout = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", dtype), (UM, UK))
    sb_layout = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", dtype), (UN, UK))

    @wb.kernel
    def umma_ts(a, b, c, cp_by: wb.Constexpr, mma_by: wb.Constexpr, wait_cp: wb.Constexpr):
        t = wb.thread_idx().x
        sA = wb.shared_tensor(dtype, sa_layout)
        sB = wb.shared_tensor(dtype, sb_layout)
        bars = wb.shared_tensor(wb.Uint64, 2)      # 0: the MMAs done; 1: the copy done
        holder = wb.shared_tensor(wb.Uint32, 1)
        for i in range(t, UM * UK, 128):
            sA[i % UM, i // UM] = a[i % UM, i // UM]
        for i in range(t, UN * UK, 128):
            sB[i % UN, i // UN] = b[i % UN, i // UN]
        if t < 32:
            wb.tmem_alloc(holder, 128)         # columns 0..63: the accumulator; 64..95: A (64 16-bit values a lane)
        if t == 0:
            wb.mbarrier_init(bars, 0, 1)
            wb.mbarrier_init(bars, 1, 1)
            wb.mbarrier_init_fence()
        wb.fence_proxy_async()
        wb.tcgen05_fence_before()
        wb.sync_threads()
        wb.tcgen05_fence_after()
        addr = holder[0]
        acc = wb.make_tmem_tensor(addr, tacc)
        ta = wb.make_tmem_tensor(addr + 64, ta_layout)
        if t == cp_by:
            wb.copy(utccp, sA, ta)
            if cp_by != mma_by:
                wb.tcgen05_commit(bars, 1)
        wb.sync_threads()
        if t == mma_by:
            if cp_by != mma_by and wait_cp:
                wb.mbarrier_wait(bars, 1, 0)
                wb.tcgen05_fence_after()
            wb.gemm(ts, acc, ta, sB, acc, accumulate=False)
            wb.tcgen05_commit(bars, 0)
        wb.mbarrier_wait(bars, 0, 0)
        wb.tcgen05_fence_after()
        frag = wb.make_fragment(UN, wb.Float32)
        wb.copy(tload, acc, frag)
        wb.tcgen05_wait_ld()
        for j in range(UN):
            c[t, j] = frag[j]
        wb.tcgen05_fence_before()
        wb.sync_threads()
        if t < 32:
            wb.tmem_dealloc(addr, 128)

    return umma_ts


_UMMA_TS = {wb.Float16: _make_umma_ts(wb.Float16), wb.BFloat16: _make_umma_ts(wb.BFloat16)}


def _umma_ts_run(backend, cp_by=0, mma_by=0, dtype=wb.Float16, wait_cp=True):
    if backend.name == "cuda":
        pytest.skip("tcgen05 needs a Blackwell GPU (sm_100a), and none is lent here: compiled by NVRTC, run on the CPU")
    rng = np.random.default_rng(4)
    a = rng.integers(-3, 4, (UM, UK)).astype(np.float32)
    b = rng.integers(-3, 4, (UN, UK)).astype(np.float32)
    c = np.full((UM, UN), np.nan, np.float32)
    if dtype is wb.Float16:
        args = (a.astype(np.float16), b.astype(np.float16), c)
    else:                                          # bf16 host arrays: CPU torch tensors (through DLPack)
        torch = pytest.importorskip("torch")
        args = (torch.from_numpy(a).bfloat16(), torch.from_numpy(b).bfloat16(), torch.from_numpy(c))
    _UMMA_TS[dtype][(1, 1, 1), (128, 1, 1)](*args, cp_by, mma_by, wait_cp)
    np.testing.assert_array_equal(c, a.astype(np.float64) @ b.astype(np.float64).T)
    return _source(_UMMA_TS[dtype], *args, cp_by, mma_by, wait_cp)


_TCGEN05_PTX["tcgen05_cp"] = ["tcgen05.cp.cta_group::1.128x256b"]


@pytest.mark.parametrize("dtype", [wb.Float16, wb.BFloat16])
def test_tcgen05_cp(backend, dtype):
    """tcgen05.cp of A into TMEM read by a TS tcgen05.mma (CPU executor exact; NVRTC for sm_100a, not run on a GPU)."""
    code = _umma_ts_run(backend, dtype=dtype)
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from workbench.dsl.runtime.cupy import compile_cubin, compile_ptx
    ptx = compile_ptx(code, "sm_100a")
    assert ptx.count("tcgen05.cp.cta_group::1.128x256b") == 4      # one a 16-wide k-block
    # the TS form: A is a TMEM address in brackets, B a descriptor
    assert len(re.findall(r"tcgen05\.mma\.cta_group::1\.kind::f16 \[%r\d+\], \[%r\d+\], %rd\d+", ptx)) == 4
    assert len(compile_cubin(code, "sm_100a")) > 0


def test_tcgen05_cp_errors_on_the_cpu():
    """Another thread's tcgen05.cp read by an MMA before its commit completed: reported, not a silent stale read."""
    cpu = Backend_cpu()
    with pytest.raises(wb.KernelRuntimeError, match=r"tcgen05.mma \(SM100_MMA_F16BF16_TS.*before tcgen05.cp 128x256b"):
        _umma_ts_run(cpu, cp_by=32, mma_by=0, wait_cp=False)
    _umma_ts_run(cpu, cp_by=32, mma_by=0, wait_cp=True)      # committed and waited for: exact
    _umma_ts_run(cpu, cp_by=32, mma_by=32)                    # the same thread: in issue order, no wait needed


_LD_ATOM = wb.copy_atom("SM100_TMEM_LOAD_32dp32b16x", wb.Float32)


@wb.kernel
def _cp_misuse(x):
    holder = wb.shared_tensor(wb.Uint32, 1)
    s = wb.shared_tensor(wb.Float32, wb.make_layout((128, 8)))
    if wb.thread_idx().x < 32:
        wb.tmem_alloc(holder, 32)
    wb.copy(_LD_ATOM, s, wb.make_tmem_tensor(holder[0], TACC))


def test_tcgen05_cp_refuses_an_ld_atom():
    """wb.copy with a bare copy atom is tcgen05.cp's form; an ld/st atom there is told to go through make_tmem_copy."""
    with pytest.raises(TypeError, match=r"a TMEM load/store atom moves TMEM through a tiled copy: pass wb.make_tmem_copy"):
        _cp_misuse[(1, 1, 1), (128, 1, 1)](np.zeros(4, np.float32))


# -- Blackwell: block-scaled tcgen05.mma (kind::mxf8f6f4, ue8m0 scales), scale factors put in TMEM by tcgen05.cp ------
# 128 x 64 x 128 e4m3: thread `cp_by` copies SFA and SFB (CUTLASS's smem layout, one 512-byte block each a
# tcgen05.cp.32x128b.warpx4) into TMEM, thread 0 issues the four block-scaled MMAs (a = (sA, SFA), b = (sB, SFB)).
BM, BN, BK = 128, 64, 128
BSA = wb.mma_atom("SM100_MMA_MXF8F6F4_SS", a_type=wb.Float8E4M3FN, b_type=wb.Float8E4M3FN, c_type=wb.Float32,
                  sf_type=wb.Float8E8M0FNU, m=BM, n=BN)
BACC = BSA.make_fragment_C(BSA.partition_shape_C((BM, BN)))
BSL_A, BSL_B = BSA.smem_layout_SFA((BM, BN, BK)), BSA.smem_layout_SFB((BM, BN, BK))
BSF_A, BSF_B = BSA.make_fragment_SFA(BSL_A.shape), BSA.make_fragment_SFB(BSL_B.shape)
SF_CP = wb.copy_atom("SM100_UTCCP_4x32dp128bit_1cta", wb.Float8E8M0FNU)
BLOAD = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_LOAD_32dp32b16x", wb.Float32), BACC)
BSA_A = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", wb.Float8E4M3FN), (BM, BK))
BSA_B = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", wb.Float8E4M3FN), (BN, BK))


@wb.kernel
def _umma_block_scaled(a, b, sfa, sfb, c, cp_by: wb.Constexpr, wait_cp: wb.Constexpr):
    t = wb.thread_idx().x
    sA = wb.shared_tensor(wb.Float8E4M3FN, BSA_A)
    sB = wb.shared_tensor(wb.Float8E4M3FN, BSA_B)
    sSFA = wb.shared_tensor(wb.Uint8, BSL_A)       # the ue8m0 scale factors' bits
    sSFB = wb.shared_tensor(wb.Uint8, BSL_B)
    bars = wb.shared_tensor(wb.Uint64, 2)             # 0: the MMAs done; 1: the scale factors' copy done
    holder = wb.shared_tensor(wb.Uint32, 1)
    for i in range(t, BM * BK, 128):
        sA[i % BM, i // BM] = a[i % BM, i // BM]
    for i in range(t, BN * BK, 128):
        sB[i % BN, i // BN] = b[i % BN, i // BN]
    for i in range(t, 128 * (BK // 32), 128):         # row i % 128, k-block i // 128
        sSFA[i % 128, 0, i // 128] = sfa[i % 128, i // 128]
        sSFB[i % 128, 0, i // 128] = sfb[i % 128, i // 128]
    if t < 32:
        wb.tmem_alloc(holder, 128)                    # columns 0..63: D; 64..67: SFA; 68..71: SFB
    if t == 0:
        wb.mbarrier_init(bars, 0, 1)
        wb.mbarrier_init(bars, 1, 1)
        wb.mbarrier_init_fence()
    wb.fence_proxy_async()
    wb.tcgen05_fence_before()
    wb.sync_threads()
    wb.tcgen05_fence_after()
    addr = holder[0]
    acc = wb.make_tmem_tensor(addr, BACC)
    tsfa = wb.make_tmem_tensor(addr + 64, BSF_A)
    tsfb = wb.make_tmem_tensor(addr + 68, BSF_B)
    if t == cp_by:
        wb.copy(SF_CP, sSFA, tsfa)
        wb.copy(SF_CP, sSFB, tsfb)
        if cp_by != 0:
            wb.tcgen05_commit(bars, 1)
    wb.sync_threads()
    if t == 0:
        if cp_by != 0 and wait_cp:
            wb.mbarrier_wait(bars, 1, 0)
            wb.tcgen05_fence_after()
        wb.gemm(BSA, acc, (sA, tsfa), (sB, tsfb), acc, accumulate=False)
        wb.tcgen05_commit(bars, 0)
    wb.mbarrier_wait(bars, 0, 0)
    wb.tcgen05_fence_after()
    frag = wb.make_fragment(BN, wb.Float32)
    wb.copy(BLOAD, acc, frag)
    wb.tcgen05_wait_ld()
    for j in range(BN):
        c[t, j] = frag[j]
    wb.tcgen05_fence_before()
    wb.sync_threads()
    if t < 32:
        wb.tmem_dealloc(addr, 128)


def _block_scaled_run(cp_by=0, wait_cp=True):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    # e4m3 values (halves up to +-6, subnormal-free) and ue8m0 scales 2^-5..2^5: every k-block's sum is exact in
    # float64, so the reference below rounds exactly where the MMA does (once a tcgen05.mma, to Float32)
    a = torch.from_numpy(rng.integers(-12, 13, (BM, BK)).astype(np.float32) / 2).to(torch.float8_e4m3fn)
    b = torch.from_numpy(rng.integers(-12, 13, (BN, BK)).astype(np.float32) / 2).to(torch.float8_e4m3fn)
    ea = rng.integers(122, 133, (128, BK // 32)).astype(np.uint8)
    eb = rng.integers(122, 133, (128, BK // 32)).astype(np.uint8)       # rows BN..127: CUTLASS's padding to 128
    c = torch.full((BM, BN), float("nan"))
    args = (a, b, torch.from_numpy(ea), torch.from_numpy(eb), c, cp_by, wait_cp)
    _umma_block_scaled[(1, 1, 1), (128, 1, 1)](*args)
    A = a.double().numpy() * np.repeat(2.0 ** (ea.astype(np.float64) - 127), 32, axis=1)
    B = b.double().numpy() * np.repeat(2.0 ** (eb[:BN].astype(np.float64) - 127), 32, axis=1)
    want = np.zeros((BM, BN), np.float32)
    for kb in range(BK // 32):
        k = slice(32 * kb, 32 * kb + 32)
        want = (want.astype(np.float64) + A[:, k] @ B[:, k].T).astype(np.float32)
    np.testing.assert_array_equal(c.numpy(), want)
    assert not np.array_equal(want, (A @ B.T).astype(np.float32))      # the rounding a k-block is seen
    return _source(_umma_block_scaled, *args)


def test_tcgen05_block_scaled_mma():
    """kind::mxf8f6f4 with ue8m0 scales exact on the CPU executor; NVRTC compiles it for sm_100a (PTX and cubin; no
    Blackwell GPU is lent here, so it has not run on one)."""
    code = _block_scaled_run()
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from workbench.dsl.runtime.cupy import compile_cubin, compile_ptx
    ptx = compile_ptx(code, "sm_100a")
    assert ptx.count("tcgen05.cp.cta_group::1.32x128b.warpx4") == 2
    # [d], a_desc, b_desc, idesc, [sfa], [sfb], p: the PTX ISA's and CuTe's operand order
    assert len(re.findall(r"tcgen05\.mma\.cta_group::1\.kind::mxf8f6f4\.block_scale \[%r\d+\], %rd\d+, %rd\d+, "
                          r"%r\d+, \[%r\d+\], \[%r\d+\], p;", ptx)) == 4
    assert len(compile_cubin(code, "sm_100a")) > 0


def test_tcgen05_block_scaled_mma_errors():
    """Scale factors another thread copied, read before that copy's commit completed: reported."""
    with pytest.raises(wb.KernelRuntimeError, match=r"tcgen05.mma \(SM100_MMA_MXF8F6F4_SS.*before tcgen05.cp "
                                                    r"32x128b.warpx4"):
        _block_scaled_run(cp_by=32, wait_cp=False)
    _block_scaled_run(cp_by=32, wait_cp=True)           # committed and waited for: exact


# -- Blackwell: the non-scaled kinds other than f16: kind::tf32, kind::f8f6f4 (fp8), kind::i8 (Int32 accumulator) ------
# One 128x64 tile, four k-blocks (K = 1024 bits a row: one 128-byte swizzle row), SS; exact against numpy where each
# k-block's sum is rounded once (the CPU executor's semantics); NVRTC compiles each for sm_100a (never run on a GPU).
def _make_umma_kind(a_type, b_type, c_type, ts=False, **atom_kw):
    bits = a_type.bits
    k = 1024 // bits
    name = "SM100_MMA_" + {32: "TF32", 8: "S8" if c_type is wb.Int32 else "F8F6F4"}[bits] + ("_TS" if ts else "_SS")
    atom = wb.mma_atom(name, a_type=a_type, b_type=b_type, c_type=c_type, m=UM, n=UN, **atom_kw)
    acc_l = atom.make_fragment_C(atom.partition_shape_C((UM, UN)))
    load = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_LOAD_32dp32b16x", c_type), acc_l)
    st_a = wb.Float32 if a_type is wb.TFloat32 else a_type        # tf32 read from Float32 tiles (as SM80/SM90's)
    st_b = wb.Float32 if b_type is wb.TFloat32 else b_type
    la = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", st_a), (UM, k))
    lb = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", st_b), (UN, k))
    a_frag = atom.make_fragment_A(atom.partition_shape_A((UM, k))) if ts else None
    cp = wb.copy_atom("SM100_UTCCP_128dp256bit_1cta", st_a) if ts else None

    @wb.kernel
    def umma_kind(a, b, c):
        t = wb.thread_idx().x
        sA = wb.shared_tensor(st_a, la)
        sB = wb.shared_tensor(st_b, lb)
        bars = wb.shared_tensor(wb.Uint64, 1)
        holder = wb.shared_tensor(wb.Uint32, 1)
        for i in range(t, UM * k, 128):
            sA[i % UM, i // UM] = a[i % UM, i // UM]
        for i in range(t, UN * k, 128):
            sB[i % UN, i // UN] = b[i % UN, i // UN]
        if t < 32:
            wb.tmem_alloc(holder, 128)
        if t == 0:
            wb.mbarrier_init(bars, 0, 1)
            wb.mbarrier_init_fence()
        wb.fence_proxy_async()
        wb.tcgen05_fence_before()
        wb.sync_threads()
        wb.tcgen05_fence_after()
        addr = holder[0]
        acc = wb.make_tmem_tensor(addr, acc_l)
        if t == 0:
            if ts:
                tA = wb.make_tmem_tensor(addr + 64, a_frag)
                wb.copy(cp, sA, tA)
                wb.gemm(atom, acc, tA, sB, acc, accumulate=False)
            else:
                wb.gemm(atom, acc, sA, sB, acc, accumulate=False)
            wb.tcgen05_commit(bars, 0)
        wb.mbarrier_wait(bars, 0, 0)
        wb.tcgen05_fence_after()
        frag = wb.make_fragment(UN, c_type)
        wb.copy(load, acc, frag)
        wb.tcgen05_wait_ld()
        for j in range(UN):
            c[t, j] = frag[j]
        wb.tcgen05_fence_before()
        wb.sync_threads()
        if t < 32:
            wb.tmem_dealloc(addr, 128)

    return umma_kind, atom


def _fp8(rng, shape, dtype, lo, hi):
    """Random finite fp8 values of exponent field lo..hi (a range whose k-block sums float64 holds exactly)."""
    torch = pytest.importorskip("torch")
    mant = 3 if dtype is wb.Float8E4M3FN else 2
    codes = (rng.integers(lo, hi + 1, shape) << mant) | rng.integers(0, 1 << mant, shape) | (rng.integers(0, 2, shape) << 7)
    t = torch.from_numpy(codes.astype(np.uint8)).view(torch.float8_e4m3fn if mant == 3 else torch.float8_e5m2)
    return t, t.double().numpy()


def _kind_operands(a_type, b_type, rng, UM=UM, UN=UN):
    """(a, b host operands (UM, K) and (UN, K), A, B: the values the tensor core reads, float64 or int64)."""
    k = 1024 // a_type.bits
    if a_type is wb.TFloat32:      # full 23-bit mantissas: the tf32 truncation is seen
        a = (rng.uniform(1, 2, (UM, k)) * rng.choice([-1, 1], (UM, k))).astype(np.float32)
        b = (rng.uniform(1, 2, (UN, k)) * rng.choice([-1, 1], (UN, k))).astype(np.float32)
        trunc = lambda x: (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)  # noqa: E731
        return a, b, trunc(a), trunc(b)
    if a_type in (wb.Int8, wb.Uint8):
        def ints(t, shape):
            lo, hi = (-128, 128) if t is wb.Int8 else (0, 256)
            x = rng.integers(lo, hi, shape).astype(np.int8 if t is wb.Int8 else np.uint8)
            return x, x.astype(np.int64)
        (a, A), (b, B) = ints(a_type, (UM, k)), ints(b_type, (UN, k))
        return a, b, A, B
    (a, A), (b, B) = _fp8(rng, (UM, k), a_type, 1, 14), _fp8(rng, (UN, k), b_type, 8, 22)
    return a, b, A, B


def _umma_kind_run(a_type, b_type, c_type, ts=False):
    kern, atom = _make_umma_kind(a_type, b_type, c_type, ts)
    rng = np.random.default_rng(11)
    a, b, A, B = _kind_operands(a_type, b_type, rng)
    c = np.zeros((UM, UN), np.int32) if c_type is wb.Int32 else np.full((UM, UN), np.nan, np.float32)
    kern[(1, 1, 1), (128, 1, 1)](a, b, c)
    np.testing.assert_array_equal(c, _kind_reference(a_type, a, b, A, B, atom.shape_mnk[2], c_type))
    return _source(kern, a, b, c), atom


def _kind_reference(a_type, a, b, A, B, kat, c_type):
    """A B^T as tcgen05.mma computes it: integers exact; floats each k-block's sum exact (float64 holds it for these
    operands), rounded once to Float32 (the rounding a k-block and tf32's dropped bits checked to be seen)."""
    if c_type is wb.Int32:
        return A @ B.T
    want = np.zeros((A.shape[0], B.shape[0]), np.float32)
    for kb in range(A.shape[1] // kat):
        k = slice(kat * kb, kat * kb + kat)
        want = (want.astype(np.float64) + A[:, k] @ B[:, k].T).astype(np.float32)
    assert not np.array_equal(want, (A @ B.T).astype(np.float32))
    if a_type is wb.TFloat32:
        assert not np.array_equal(want, (a.astype(np.float64) @ b.astype(np.float64).T).astype(np.float32))
    return want


_KINDS = [(wb.TFloat32, wb.TFloat32, wb.Float32, "tf32"), (wb.Float8E4M3FN, wb.Float8E4M3FN, wb.Float32, "f8f6f4"),
          (wb.Float8E4M3FN, wb.Float8E5M2, wb.Float32, "f8f6f4"), (wb.Int8, wb.Int8, wb.Int32, "i8"),
          (wb.Uint8, wb.Int8, wb.Int32, "i8")]


@pytest.mark.parametrize("ts", [False, True], ids=["SS", "TS"])
@pytest.mark.parametrize("a_type,b_type,c_type,kind", _KINDS, ids=lambda x: str(x))
def test_tcgen05_mma_kinds(a_type, b_type, c_type, kind, ts):
    """kind::tf32 (Float32 tiles read as tf32: the low 13 mantissa bits dropped, as the SM80/SM90 tf32 atoms),
    kind::f8f6f4 with fp8 (mixed e4m3/e5m2 too) and kind::i8 (s8/u8, an Int32 accumulator in TMEM read back by a
    tcgen05.ld of Int32), SS and TS (A copied to TMEM by tcgen05.cp), exact on the CPU executor; NVRTC compiles each
    for sm_100a (not run on a GPU)."""
    code, atom = _umma_kind_run(a_type, b_type, c_type, ts)
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from workbench.dsl.runtime.cupy import compile_cubin, compile_ptx
    ptx = compile_ptx(code, "sm_100a")
    a_op = r"\[%r\d+\]" if ts else r"%rd\d+"
    assert len(re.findall(rf"tcgen05\.mma\.cta_group::1\.kind::{kind} \[%r\d+\], {a_op}, %rd\d+, %r\d+, p;", ptx)) == 4
    assert str(atom.instr_desc.encode()) in ptx or f"0x{atom.instr_desc.encode():x}" in ptx.lower()
    assert len(compile_cubin(code, "sm_100a")) > 0


def test_tcgen05_mma_sum_is_exact():
    """The one helper every tcgen05.mma kind computes with: the sum exact, then one rounding (a float64 sum would lose
    the 2**-30 here); kind::i8's Int32 overflow is an error, not a wrapped value."""
    from workbench.dsl.ops.tcgen05_mma import mma_result
    f = wb.mma_atom("SM100_MMA_F16BF16_SS", a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32, m=64, n=8)
    A, B = np.array([[2.0 ** 24, 1.0, -(2.0 ** 24)]]), np.array([[2.0 ** 24, 2.0 ** -30, 2.0 ** 24]])
    assert mma_result(f, A, B, np.zeros((1, 1), np.float32), False, "t")[0, 0] == np.float32(2.0 ** -30)
    assert mma_result(f, A, B, np.full((1, 1), 3.0, np.float32), True, "t")[0, 0] == np.float32(3.0)
    neg = wb.mma_atom("SM100_MMA_F16BF16_SS", a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32, m=64, n=8,
                      a_neg=True)
    assert mma_result(neg, np.array([[2.0]]), np.array([[3.0]]), np.ones((1, 1), np.float32), True, "t")[0, 0] == -5
    i8 = wb.mma_atom("SM100_MMA_S8_SS", a_type=wb.Int8, b_type=wb.Int8, c_type=wb.Int32, m=64, n=8)
    C = np.full((1, 1), 2 ** 31 - 10, np.int32)
    assert mma_result(i8, np.array([[3]]), np.array([[3]]), C, True, "t")[0, 0] == 2 ** 31 - 1
    with pytest.raises(wb.KernelRuntimeError, match="overflows Int32"):
        mma_result(i8, np.array([[4]]), np.array([[3]]), C, True, "t")


@pytest.mark.parametrize("kw,match", [
    (dict(a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float16), "a Float16 accumulator"),
    (dict(a_type=wb.Float4E2M1FN, b_type=wb.Float8E4M3FN, c_type=wb.Float32), "one a byte"),
    (dict(a_type=wb.Float6E2M3FN, b_type=wb.Float8E4M3FN, c_type=wb.Float32), "fp6 not at all"),
    (dict(a_type=wb.Int8, b_type=wb.Int8, c_type=wb.Int32, c_sat=True), "saturate"),
])
def test_tcgen05_mma_kind_refusals(kw, match):
    """What wb.gemm refuses of the non-scaled kinds (the atoms exist: CuTe has them), with the reason."""
    from workbench.dsl.ops.tcgen05_mma import _lowered_kind
    fam = {wb.Float16: "F16BF16", wb.Int8: "S8"}.get(kw["a_type"], "F8F6F4")
    atom = wb.mma_atom(f"SM100_MMA_{fam}_SS", m=128, n=64, **kw)
    with pytest.raises(ValueError, match=match):
        _lowered_kind(atom)


def test_tcgen05_mma_kind_refusal_in_a_kernel():
    """The refusal is what tracing wb.gemm meets (here the saturate bit of an S8 atom)."""
    kern, _ = _make_umma_kind(wb.Int8, wb.Int8, wb.Int32, c_sat=True)
    a, b = np.zeros((UM, 128), np.int8), np.zeros((UN, 128), np.int8)
    with pytest.raises(ValueError, match=r"gemm\(SM100_MMA_S8_SS\): c_sat=True .*saturate bit.* not lowered"):
        kern[(1, 1, 1), (128, 1, 1)](a, b, np.zeros((UM, UN), np.int32))


# -- Blackwell: the 16-lane tcgen05.ld/st shapes (16x256b, 16x128b, 16x64b, 16x32bx2) -----------------------------------
# An M = 64 UMMA's accumulator (16 lanes of each warp's quarter) read by each 16dp atom: every thread's value e is the
# product's element at the coordinate the tiled copy's TV layout gives it (computed here from the host objects), so the
# MMA's cells, the atom's hardware walk and the tiled copy must agree.  CPU executor; NVRTC for sm_100a, not run on a GPU.
def _tmem_copy_coords(tiled, tensor, nvals):
    """(m, n) of each thread's fragment value e = v + V*k of a tiled TMEM copy over a ((M, N), 1, 1) tensor."""
    tv = tiled.layout_dst_tv_tiled if tiled.atom.instruction == "tcgen05_ld" else tiled.layout_src_tv_tiled
    V = tv[1].size
    modes = [tensor.layout[i] for i in range(tensor.layout.rank)]
    comps = [wb.complement(t, m.size) for t, m in zip(tiled.tiler_mn, modes)]
    tsz, rsz = [t.size for t in tiled.tiler_mn], [c.size for c in comps]
    M = wb.size(modes[0].shape[0]) if isinstance(modes[0].shape, tuple) else modes[0].size

    def colex(x, sizes):
        out = []
        for s in sizes:
            out.append(x % s)
            x //= s
        return out

    coords = np.zeros((128, nvals, 2), np.int64)
    for t in range(128):
        for e in range(nvals):
            v, k = e % V, e // V
            idx = [ti(x) + c(kk) for ti, c, x, kk in zip(tiled.tiler_mn, comps, colex(tv((t, v)), tsz), colex(k, rsz))]
            coords[t, e] = idx[0] % M, idx[0] // M
    return coords


def _make_umma64(ld_name):
    m, n, k = 64, 64, 64
    atom = wb.mma_atom("SM100_MMA_F16BF16_SS", a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32, m=m, n=n)
    tacc = atom.make_fragment_C(atom.partition_shape_C((m, n)))
    tload = wb.make_tmem_copy(wb.copy_atom(ld_name, wb.Float32), tacc)
    sa = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", wb.Float16), (m, k))
    sb = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", wb.Float16), (n, k))
    nv = m * n // 128

    @wb.kernel
    def umma64(a, b, out):
        t = wb.thread_idx().x
        sA = wb.shared_tensor(wb.Float16, sa)
        sB = wb.shared_tensor(wb.Float16, sb)
        bars = wb.shared_tensor(wb.Uint64, 1)
        holder = wb.shared_tensor(wb.Uint32, 1)
        for i in range(t, m * k, 128):
            sA[i % m, i // m] = a[i % m, i // m]
        for i in range(t, n * k, 128):
            sB[i % n, i // n] = b[i % n, i // n]
        if t < 32:
            wb.tmem_alloc(holder, 64)
        if t == 0:
            wb.mbarrier_init(bars, 0, 1)
            wb.mbarrier_init_fence()
        wb.fence_proxy_async()
        wb.tcgen05_fence_before()
        wb.sync_threads()
        wb.tcgen05_fence_after()
        addr = holder[0]
        acc = wb.make_tmem_tensor(addr, tacc)
        if t == 0:
            wb.gemm(atom, acc, sA, sB, acc, accumulate=False)
            wb.tcgen05_commit(bars, 0)
        wb.mbarrier_wait(bars, 0, 0)
        wb.tcgen05_fence_after()
        frag = wb.make_fragment(nv, wb.Float32)
        wb.copy(tload, acc, frag)
        wb.tcgen05_wait_ld()
        for j in range(nv):
            out[t, j] = frag[j]
        wb.tcgen05_fence_before()
        wb.sync_threads()
        if t < 32:
            wb.tmem_dealloc(addr, 64)

    return umma64, tload, tacc, nv


_LD16 = {"SM100_TMEM_LOAD_16dp256b1x": "tcgen05.ld.sync.aligned.16x256b.x1.b32",
         "SM100_TMEM_LOAD_16dp128b2x": "tcgen05.ld.sync.aligned.16x128b.x2.b32",
         "SM100_TMEM_LOAD_16dp64b4x": "tcgen05.ld.sync.aligned.16x64b.x4.b32",
         "SM100_TMEM_LOAD_16dp32b4x": "tcgen05.ld.sync.aligned.16x32bx2.x4.b32"}


def _ld16_run(ld_name):
    kern, tload, tacc, nv = _make_umma64(ld_name)
    rng = np.random.default_rng(6)
    a = rng.integers(-3, 4, (64, 64)).astype(np.float16)
    b = rng.integers(-3, 4, (64, 64)).astype(np.float16)
    out = np.full((128, nv), np.nan, np.float32)
    kern[(1, 1, 1), (128, 1, 1)](a, b, out)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    xy = _tmem_copy_coords(tload, tacc, nv)
    np.testing.assert_array_equal(out, ref[xy[..., 0], xy[..., 1]])
    assert sorted(map(tuple, xy.reshape(-1, 2).tolist())) == [(i, j) for i in range(64) for j in range(64)]
    return _source(kern, a, b, out)


@pytest.mark.parametrize("ld_name", sorted(_LD16))
def test_tcgen05_ld_16dp_shapes(ld_name):
    code = _ld16_run(ld_name)
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from workbench.dsl.runtime.cupy import compile_ptx
    ptx = compile_ptx(code, "sm_100a")
    assert _LD16[ld_name] in ptx
    if "16dp32b" in ld_name:
        assert re.search(r"16x32bx2\.x4\.b32 \{[^}]*\}, \[%r\d+\], 4;", ptx)    # the second half 4 columns on


TST16 = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_STORE_16dp256b2x", wb.Float32), TACC)


# each thread stores its values of the 128 x 64 tile with the 16x256b shape; tcgen05.ld 32x32b reads rows back
_tmem_store16 = _make_tmem_store_load(TST16, 1.0)


def _st16_run():
    tile = np.arange(UM * UN, dtype=np.float32).reshape(UM, UN)
    xy = _tmem_copy_coords(TST16, TACC, UN)
    x = tile[xy[..., 0], xy[..., 1]]
    y = np.zeros_like(x)
    _tmem_store16[(1, 1, 1), (128, 1, 1)](x, y)
    np.testing.assert_array_equal(y, tile)
    return _source(_tmem_store16, x, y)


def test_tcgen05_st_16dp_shape():
    """A 16x256b store's values land where its tiled copy's TV layout says (read back row by row with 32x32b)."""
    code = _st16_run()
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from workbench.dsl.runtime.cupy import compile_ptx
    assert "tcgen05.st.sync.aligned.16x256b.x2.b32" in compile_ptx(code, "sm_100a")


# -- Blackwell: the CTA pair (cta_group::2): a 2-SM UMMA (M = 256) issued by the even CTA, each CTA's half in its TMEM --
# Each CTA of the cluster's pair holds its 128 rows of A and 32 of B's 64 rows at the same shared offsets; the pair
# allocates the same TMEM columns in both CTAs (one warp each), the leader's thread issues the pair MMA and commits it
# to the mbarrier of both CTAs (multicast 0b11), and each CTA's warpgroup reads its own half with tcgen05.ld.  CPU
# executor; NVRTC for sm_100a, not run on a Blackwell GPU.
PM, PN, PK = 256, 64, 64
UMMA2 = wb.mma_atom("SM100_MMA_F16BF16_2x1SM_SS", a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32, m=PM,
                    n=PN)
TACC2 = UMMA2.make_fragment_C(UMMA2.partition_shape_C((PM, PN)))          # this CTA's half: ((128, 64), 1, 1)
TLOAD2 = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_LOAD_32dp32b16x", wb.Float32), TACC2)
PSA = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", wb.Float16), (PM // 2, PK))
PSB = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", wb.Float16), (PN // 2, PK))


@wb.kernel(cluster=(2, 1, 1))
def _umma_pair(a, b, c, issuer: wb.Constexpr, peer_alloc: wb.Constexpr, wait: wb.Constexpr, mask: wb.Constexpr,
               alloc_group: wb.Constexpr):
    t = wb.thread_idx().x
    r = wb.block_rank_in_cluster()
    sA = wb.shared_tensor(wb.Float16, PSA)
    sB = wb.shared_tensor(wb.Float16, PSB)
    bars = wb.shared_tensor(wb.Uint64, 1)
    holder = wb.shared_tensor(wb.Uint32, 1)
    for i in range(t, PM // 2 * PK, 128):                 # CTA r: A rows 128r.., B rows 32r..
        sA[i % (PM // 2), i // (PM // 2)] = a[r * (PM // 2) + i % (PM // 2), i // (PM // 2)]
    for i in range(t, PN // 2 * PK, 128):
        sB[i % (PN // 2), i // (PN // 2)] = b[r * (PN // 2) + i % (PN // 2), i // (PN // 2)]
    if t < 32:
        if peer_alloc or r == 0:
            wb.tmem_alloc(holder, 64, cta_group=alloc_group)
    if t == 0:
        wb.mbarrier_init(bars, 0, 1)
        wb.mbarrier_init_fence()
    wb.fence_proxy_async()
    wb.tcgen05_fence_before()
    wb.cluster_sync()                    # both CTAs' tiles, mbarriers and TMEM ready before the leader's MMA
    wb.tcgen05_fence_after()
    addr = holder[0]
    acc = wb.make_tmem_tensor(addr, TACC2)
    if t == 0:
        if r == issuer:
            wb.gemm(UMMA2, acc, sA, sB, acc, accumulate=False)
            wb.tcgen05_commit(bars, 0, cta_group=2, multicast=mask)
    if wait == 1 or (wait == 2 and r == 0):             # wait 2: the peer reads its half without waiting
        wb.mbarrier_wait(bars, 0, 0)
    wb.tcgen05_fence_after()
    frag = wb.make_fragment(PN, wb.Float32)
    wb.copy(TLOAD2, acc, frag)                           # each CTA reads its own half: rows 128r + t
    wb.tcgen05_wait_ld()
    for j in range(PN):
        c[r * (PM // 2) + t, j] = frag[j]
    wb.tcgen05_fence_before()
    wb.cluster_sync()                    # no CTA frees the pair's columns while the other still reads them
    if t < 32:
        wb.tmem_dealloc(addr, 64, cta_group=2)


def _umma_pair_run(issuer=0, peer_alloc=True, wait=1, mask=3, alloc_group=2):
    rng = np.random.default_rng(30)
    a = rng.integers(-3, 4, (PM, PK)).astype(np.float16)
    b = rng.integers(-3, 4, (PN, PK)).astype(np.float16)
    c = np.full((PM, PN), np.nan, np.float32)
    args = (a, b, c, issuer, peer_alloc, wait, mask, alloc_group)
    _umma_pair[(2, 1, 1), (128, 1, 1)](*args)
    np.testing.assert_array_equal(c, a.astype(np.float64) @ b.astype(np.float64).T)
    return _source(_umma_pair, *args)


_PAIR_PTX = ("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32", "tcgen05.mma.cta_group::2.kind::f16",
             "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64",
             "tcgen05.dealloc.cta_group::2.sync.aligned.b32", "tcgen05.ld.sync.aligned.32x32b.x16.b32")


def test_tcgen05_cta_pair():
    """The 2-SM UMMA of a CTA pair equals the product (CPU executor, both halves); NVRTC compiles it for sm_100a."""
    code = _umma_pair_run()
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from workbench.dsl.runtime.cupy import compile_cubin, compile_ptx
    ptx = compile_ptx(code, "sm_100a")
    for text in _PAIR_PTX:
        assert text in ptx, text
    assert ptx.count("tcgen05.mma.cta_group::2.kind::f16") == PK // 16     # one a 16-wide k-block, leader only
    assert len(compile_cubin(code, "sm_100a")) > 0


def test_tcgen05_cta_pair_errors_on_the_cpu():
    """What the CPU executor reports instead of running a wrong 2-SM kernel."""
    with pytest.raises(wb.KernelRuntimeError, match=r"issued by the odd CTA of its pair \(cluster rank 1\)"):
        _umma_pair_run(issuer=1)            # the pair's MMA from the odd CTA
    with pytest.raises(wb.KernelRuntimeError, match=r"tcgen05.alloc.cta_group::2 of warp 0 .*1 of 2 arrivals"):
        _umma_pair_run(peer_alloc=False)    # the peer CTA's warp never joins the pair's allocation: a hang
    for wait in (0, 2):                     # a half read before the commit's mbarrier completed (2: the peer's half)
        with pytest.raises(wb.KernelRuntimeError, match=r"before tcgen05.mma \(SM100_MMA_F16BF16_2x1SM_SS.*the mbarrier "
                                                        r"phase of its wb.tcgen05_commit has not completed" +
                                                        (r".*block \(1, 0, 0\)" if wait == 2 else "")):
            _umma_pair_run(wait=wait)
    with pytest.raises(wb.KernelRuntimeError, match=r"can never continue.*mbarrier smem_\d+\[0\].*0 of 1 arrival in block \(1, 0, 0\)"):
        _umma_pair_run(mask=1)              # the commit arrives on the leader's mbarrier only: the peer waits forever
    with pytest.raises(ValueError, match=r"all tcgen05 instructions within a kernel must specify the same value"):
        _umma_pair_run(alloc_group=1)       # a 1-CTA allocation in a kernel of pair MMAs


@wb.kernel(cluster=(2, 1, 1))
def _pair_alloc(out, w0: wb.Constexpr, w1: wb.Constexpr, h1: wb.Constexpr):
    """Warp w0 of CTA 0 and warp w1 of CTA 1 allocate the pair's columns (into holder h1 in CTA 1, holder 0 in CTA 0),
    write the address out, and free them."""
    t = wb.thread_idx().x
    r = wb.block_rank_in_cluster()
    holder = wb.shared_tensor(wb.Uint32, 1)
    other = wb.shared_tensor(wb.Uint32, 1)
    w = t // 32
    if r == 1 and h1 == 1:
        if w == w1:
            wb.tmem_alloc(other, 128, cta_group=2)
        other_addr = other[0]
        holder[0] = other_addr
    elif (r == 0 and w == w0) or (r == 1 and w == w1):
        wb.tmem_alloc(holder, 128, cta_group=2)
    mine = (r == 0 and w == w0) or (r == 1 and w == w1)
    if mine:
        wb.tmem_relinquish_alloc_permit(cta_group=2)
    wb.tcgen05_fence_before()
    wb.cluster_sync()
    wb.tcgen05_fence_after()
    addr = holder[0]
    if t == 0:
        out[r] = addr
    wb.cluster_sync()
    if mine:
        wb.tmem_dealloc(addr, 128, cta_group=2)


def _pair_alloc_run():
    out = np.full(2, 7, np.uint32)
    _pair_alloc[(2, 1, 1), (64, 1, 1)](out, 1, 1, 0)
    assert out.tolist() == [0, 0]                        # the first 128 columns of each CTA, lane 0
    return _source(_pair_alloc, out, 1, 1, 0)


def test_tcgen05_cta_pair_allocation():
    """The pair's allocation: the same warp of each CTA, the same holder; the same columns in both CTAs."""
    _pair_alloc_run()
    out = np.full(2, 7, np.uint32)
    with pytest.raises(wb.KernelRuntimeError, match=r"tcgen05.alloc.cta_group::2 of warp 0 .*1 of 2 arrivals in block "
                                                    r"\(0, 0, 0\).*tcgen05.alloc.cta_group::2 of warp 1 .*1 of 2 arrivals"):
        _pair_alloc[(2, 1, 1), (64, 1, 1)](out, 0, 1, 0)  # warps 0 and 1: never the same warp of the pair
    with pytest.raises(wb.KernelRuntimeError, match=r"pass different holders \(smem\w*\[0\] and smem\w*\[0\]\)"):
        _pair_alloc[(2, 1, 1), (64, 1, 1)](out, 1, 1, 1)


def _make_umma_pair128(ld_name):
    """The M = 128 pair MMA (the PTX ISA's data-path Layout B: each CTA's 64 rows in CuTe's tmem_frg_2sm, the second
    half of N in lanes 64..127), each CTA's half read by a tiled copy of ld_name."""
    m, n, k = 128, 64, 64
    atom = wb.mma_atom("SM100_MMA_F16BF16_2x1SM_SS", a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32, m=m, n=n)
    tacc = atom.make_fragment_C(atom.partition_shape_C((m, n)))
    tload = wb.make_tmem_copy(wb.copy_atom(ld_name, wb.Float32), tacc)
    sa = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", wb.Float16), (m // 2, k))
    sb = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", wb.Float16), (n // 2, k))
    nv = m // 2 * n // 128

    @wb.kernel(cluster=(2, 1, 1))
    def umma_pair128(a, b, out):
        t = wb.thread_idx().x
        r = wb.block_rank_in_cluster()
        sA = wb.shared_tensor(wb.Float16, sa)
        sB = wb.shared_tensor(wb.Float16, sb)
        bars = wb.shared_tensor(wb.Uint64, 1)
        holder = wb.shared_tensor(wb.Uint32, 1)
        for i in range(t, m // 2 * k, 128):
            sA[i % (m // 2), i // (m // 2)] = a[r * (m // 2) + i % (m // 2), i // (m // 2)]
        for i in range(t, n // 2 * k, 128):
            sB[i % (n // 2), i // (n // 2)] = b[r * (n // 2) + i % (n // 2), i // (n // 2)]
        if t < 32:
            wb.tmem_alloc(holder, 64, cta_group=2)
        if t == 0:
            wb.mbarrier_init(bars, 0, 1)
            wb.mbarrier_init_fence()
        wb.fence_proxy_async()
        wb.tcgen05_fence_before()
        wb.cluster_sync()
        wb.tcgen05_fence_after()
        addr = holder[0]
        acc = wb.make_tmem_tensor(addr, tacc)
        if t == 0:
            if r == 0:
                wb.gemm(atom, acc, sA, sB, acc, accumulate=False)
                wb.tcgen05_commit(bars, 0, cta_group=2, multicast=0b11)
        wb.mbarrier_wait(bars, 0, 0)
        wb.tcgen05_fence_after()
        frag = wb.make_fragment(nv, wb.Float32)
        wb.copy(tload, acc, frag)
        wb.tcgen05_wait_ld()
        for j in range(nv):
            out[r, t, j] = frag[j]
        wb.tcgen05_fence_before()
        wb.cluster_sync()
        if t < 32:
            wb.tmem_dealloc(addr, 64, cta_group=2)

    return umma_pair128, tload, tacc, nv


def test_tcgen05_cta_pair_m128():
    """M = 128 pair: every thread's value is the product at its CTA's row r*64 + m and column n, (m, n) as the tiled
    copy's TV layout over CuTe's 2-SM fragment says (CPU executor; NVRTC for sm_100a, not run on a GPU)."""
    kern, tload, tacc, nv = _make_umma_pair128("SM100_TMEM_LOAD_32dp32b16x")
    rng = np.random.default_rng(31)
    a = rng.integers(-3, 4, (128, 64)).astype(np.float16)
    b = rng.integers(-3, 4, (64, 64)).astype(np.float16)
    out = np.full((2, 128, nv), np.nan, np.float32)
    kern[(2, 1, 1), (128, 1, 1)](a, b, out)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    xy = _tmem_copy_coords(tload, tacc, nv)
    for r in (0, 1):
        np.testing.assert_array_equal(out[r], ref[r * 64 + xy[..., 0], xy[..., 1]])
    assert sorted(map(tuple, xy.reshape(-1, 2).tolist())) == [(i, j) for i in range(64) for j in range(64)]
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from workbench.dsl.runtime.cupy import compile_ptx
    ptx = compile_ptx(_source(kern, a, b, out), "sm_100a")
    assert ptx.count("tcgen05.mma.cta_group::2.kind::f16") == 4 and "tcgen05.ld.sync.aligned.32x32b.x16.b32" in ptx


# -- Blackwell: the 2-SM TS UMMA (A from both CTAs' tensor memory), A put there by the leader's tcgen05.cp.cta_group::2 --
# Each CTA of the pair holds its M/2 rows of A and N/2 rows of B at the same shared offsets; thread `cp_by` of the
# leader copies each CTA's A into its own TMEM with one SM100_UTCCP_128dp256bit_2cta copy (tcgen05.cp.cta_group::2),
# thread 0 of the leader issues the pair's TS MMAs ([a] the one TMEM address of both CTAs' A).  M = 128: each CTA's
# 64 rows of A are CuTe's Duplicated fragment (lanes 0..63 and again 64..127), so its shared tile holds them twice
# (`dup_ok=False` breaks one copy).  CPU executor exact; NVRTC for sm_100a, not run on a Blackwell GPU.
def _make_umma_pair_ts(m, n=64, a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32, ts=True):
    """A pair's TS UMMA of any kind kernels run (A: 1024 bits a row, one 128-byte swizzle row); ts=False (M = 256
    only): the SS atom on the same shared tiles (each CTA's 128 rows of A), no copy."""
    k = 1024 // a_type.bits
    fam = {wb.Float16: "F16BF16", wb.TFloat32: "TF32", wb.Int8: "S8", wb.Uint8: "S8"}.get(a_type, "F8F6F4")
    assert ts or m == 256
    atom = wb.mma_atom(f"SM100_MMA_{fam}_2x1SM_{'TS' if ts else 'SS'}", a_type=a_type, b_type=b_type, c_type=c_type,
                       m=m, n=n)
    st_a = wb.Float32 if a_type is wb.TFloat32 else a_type        # tf32 read from Float32 tiles
    st_b = wb.Float32 if b_type is wb.TFloat32 else b_type
    tacc = atom.make_fragment_C(atom.partition_shape_C((m, n)))
    ta_layout = atom.make_fragment_A(atom.partition_shape_A((m, k))) if ts else None
    utccp = wb.copy_atom("SM100_UTCCP_128dp256bit_2cta", st_a)
    tload = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_LOAD_32dp32b16x", c_type), tacc)
    sa = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", st_a), (128, k))   # 128 lanes' rows
    sb = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", st_b), (n // 2, k))
    h = m // 2                                  # A rows a CTA holds
    nv = h * n // 128                           # accumulator values a thread reads

    @wb.kernel(cluster=(2, 1, 1))
    def umma_pair_ts(a, b, out, cp_by: wb.Constexpr, wait_cp: wb.Constexpr, dup_ok: wb.Constexpr):
        t = wb.thread_idx().x
        r = wb.block_rank_in_cluster()
        sA = wb.shared_tensor(st_a, sa)
        sB = wb.shared_tensor(st_b, sb)
        bars = wb.shared_tensor(wb.Uint64, 2)     # 0: the MMAs done (both CTAs); 1: the copy done (the leader)
        holder = wb.shared_tensor(wb.Uint32, 1)
        for i in range(t, 128 * k, 128):          # lane l holds row l % h of this CTA's rows (twice when h = 64)
            x = a[r * h + (i % 128) % h, i // 128]
            if dup_ok == 0:
                if i % 128 == 127 and i // 128 == 5:
                    x = x + 1.0
            sA[i % 128, i // 128] = x
        for i in range(t, n // 2 * k, 128):
            sB[i % (n // 2), i // (n // 2)] = b[r * (n // 2) + i % (n // 2), i // (n // 2)]
        if t < 32:
            wb.tmem_alloc(holder, 128, cta_group=2)   # columns 0..n-1: D; 64..95: A (64 16-bit values a lane)
        if t == 0:
            wb.mbarrier_init(bars, 0, 1)
            wb.mbarrier_init(bars, 1, 1)
            wb.mbarrier_init_fence()
        wb.fence_proxy_async()
        wb.tcgen05_fence_before()
        wb.cluster_sync()
        wb.tcgen05_fence_after()
        addr = holder[0]
        acc = wb.make_tmem_tensor(addr, tacc)
        if r == 0:
            if ts:
                ta = wb.make_tmem_tensor(addr + 64, ta_layout)
                if t == cp_by:
                    wb.copy(utccp, sA, ta)
                    if cp_by != 0:
                        wb.tcgen05_commit(bars, 1, cta_group=2)
                wb.sync_threads()
                if t == 0:
                    if cp_by != 0 and wait_cp:
                        wb.mbarrier_wait(bars, 1, 0)
                        wb.tcgen05_fence_after()
                    wb.gemm(atom, acc, ta, sB, acc, accumulate=False)
                    wb.tcgen05_commit(bars, 0, cta_group=2, multicast=0b11)
            elif t == 0:
                wb.gemm(atom, acc, sA, sB, acc, accumulate=False)
                wb.tcgen05_commit(bars, 0, cta_group=2, multicast=0b11)
        wb.mbarrier_wait(bars, 0, 0)
        wb.tcgen05_fence_after()
        frag = wb.make_fragment(nv, c_type)
        wb.copy(tload, acc, frag)
        wb.tcgen05_wait_ld()
        for j in range(nv):
            out[r, t, j] = frag[j]
        wb.tcgen05_fence_before()
        wb.cluster_sync()
        if t < 32:
            wb.tmem_dealloc(addr, 128, cta_group=2)

    return umma_pair_ts, tload, tacc, nv


_UMMA_PAIR_TS = {m: _make_umma_pair_ts(m) for m in (256, 128)}


def _umma_pair_ts_run(m, cp_by=0, wait_cp=True, dup_ok=True):
    kern, tload, tacc, nv = _UMMA_PAIR_TS[m]
    rng = np.random.default_rng(32)
    a = rng.integers(-3, 4, (m, 64)).astype(np.float16)
    b = rng.integers(-3, 4, (64, 64)).astype(np.float16)
    out = np.full((2, 128, nv), np.nan, np.float32)
    args = (a, b, out, cp_by, wait_cp, dup_ok)
    kern[(2, 1, 1), (128, 1, 1)](*args)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    xy = _tmem_copy_coords(tload, tacc, nv)                 # each thread's (row of its CTA's half, column)
    for r in (0, 1):
        np.testing.assert_array_equal(out[r], ref[r * (m // 2) + xy[..., 0], xy[..., 1]])
    assert sorted(map(tuple, xy.reshape(-1, 2).tolist())) == [(i, j) for i in range(m // 2) for j in range(64)]
    return _source(kern, *args)


_PAIR_KINDS = {(a, b, ts): _make_umma_pair_ts(256, 64, a, b, c, ts) for a, b, c, _ in _KINDS[::2] for ts in (False, True)}


def _pair_kind_run(a_type, b_type, c_type, ts=True):
    kern, tload, tacc, nv = _PAIR_KINDS[a_type, b_type, ts]
    a, b, A, B = _kind_operands(a_type, b_type, np.random.default_rng(12), 256, 64)
    out = np.zeros((2, 128, nv), np.int32) if c_type is wb.Int32 else np.full((2, 128, nv), np.nan, np.float32)
    kern[(2, 1, 1), (128, 1, 1)](a, b, out, 0, True, True)
    ref = _kind_reference(a_type, a, b, A, B, 1024 // a_type.bits // 4, c_type)
    xy = _tmem_copy_coords(tload, tacc, nv)                 # each thread's (row of its CTA's half, column)
    for r in (0, 1):
        np.testing.assert_array_equal(out[r], ref[r * 128 + xy[..., 0], xy[..., 1]])
    return _source(kern, a, b, out, 0, True, True)


@pytest.mark.parametrize("ts", [False, True], ids=["SS", "TS"])
@pytest.mark.parametrize("a_type,b_type,c_type,kind", _KINDS[::2], ids=lambda x: str(x))
def test_tcgen05_cta_pair_mma_kinds(a_type, b_type, c_type, kind, ts):
    """The pair's MMA (cta_group::2, M = 256; TS: A copied by the leader's tcgen05.cp.cta_group::2) of kind::tf32,
    f8f6f4 (fp8) and i8: exact on the CPU executor; NVRTC compiles it for sm_100a (not run on a GPU)."""
    code = _pair_kind_run(a_type, b_type, c_type, ts)
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from workbench.dsl.runtime.cupy import compile_cubin, compile_ptx
    ptx = compile_ptx(code, "sm_100a")
    a_op = r"\[%r\d+\]" if ts else r"%rd\d+"
    assert len(re.findall(rf"tcgen05\.mma\.cta_group::2\.kind::{kind} \[%r\d+\], {a_op}, %rd\d+, %r\d+, p;",
                          ptx)) == 4
    assert len(compile_cubin(code, "sm_100a")) > 0


@pytest.mark.parametrize("m", [256, 128])
def test_tcgen05_cta_pair_ts(m):
    """The 2-SM TS UMMA (A from both CTAs' TMEM) equals the product in both CTAs' halves (CPU executor); NVRTC compiles
    it for sm_100a: the copy is tcgen05.cp.cta_group::2, the MMA's A a TMEM address in brackets."""
    code = _umma_pair_ts_run(m)
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from workbench.dsl.runtime.cupy import compile_cubin, compile_ptx
    ptx = compile_ptx(code, "sm_100a")
    assert ptx.count("tcgen05.cp.cta_group::2.128x256b") == 4          # one a 16-wide k-block of A
    assert len(re.findall(r"tcgen05\.mma\.cta_group::2\.kind::f16 \[%r\d+\], \[%r\d+\], %rd\d+, %r\d+, p;", ptx)) == 4
    assert len(compile_cubin(code, "sm_100a")) > 0


def test_tcgen05_cta_pair_ts_errors_on_the_cpu():
    """A copy another thread issued, read by the pair's MMA before its commit completed; the two copies of a
    Duplicated A that differ: reported, not a silent guess."""
    with pytest.raises(wb.KernelRuntimeError, match=r"tcgen05.mma \(SM100_MMA_F16BF16_2x1SM_TS.*before tcgen05.cp "
                                                    r"128x256b"):
        _umma_pair_ts_run(256, cp_by=32, wait_cp=False)
    _umma_pair_ts_run(256, cp_by=32, wait_cp=True)            # committed and waited for: exact
    with pytest.raises(wb.KernelRuntimeError, match=r"A\[63, 5\] differs between its two copies in TMEM \(lanes 63 and "
                                                    r"127\).*Duplicated"):
        _umma_pair_ts_run(128, dup_ok=False)


# -- Blackwell: the 2-SM block-scaled UMMA (tcgen05.mma.cta_group::2.kind::mxf8f6f4.block_scale), M = 256 ---------------
# Each CTA of the pair holds its 128 rows of A, its 32 of B's 64 rows, its rows' SFA and the whole N's SFB (CUTLASS's
# 2-SM block-scaled GEMMs: SFA partitioned by the pair's MMA, SFB by the 1-SM MMA_ScaleFactor) at the same shared
# offsets; thread `cp_by` of the leader copies both CTAs' factors into their TMEM with SM100_UTCCP_4x32dp128bit_2cta
# (tcgen05.cp.cta_group::2.32x128b.warpx4), thread 0 of the leader issues the pair's MMAs.  `sfb_same=False`: the peer's
# SFB differs in one factor.  CPU executor exact; NVRTC for sm_100a, not run on a Blackwell GPU.
PBM, PBN, PBK = 256, 64, 128
PBS = wb.mma_atom("SM100_MMA_MXF8F6F4_2x1SM_SS", a_type=wb.Float8E4M3FN, b_type=wb.Float8E4M3FN, c_type=wb.Float32,
                  sf_type=wb.Float8E8M0FNU, m=PBM, n=PBN)
PBACC = PBS.make_fragment_C(PBS.partition_shape_C((PBM, PBN)))            # this CTA's half: ((128, 64), 1, 1)
PBSL_A, PBSL_B = PBS.smem_layout_SFA((PBM, PBN, PBK)), PBS.smem_layout_SFB((PBM, PBN, PBK))
PBSF_A, PBSF_B = PBS.make_fragment_SFA(PBSL_A.shape), PBS.make_fragment_SFB(PBSL_B.shape)
SF_CP2 = wb.copy_atom("SM100_UTCCP_4x32dp128bit_2cta", wb.Float8E8M0FNU)
PBLOAD = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_LOAD_32dp32b16x", wb.Float32), PBACC)


@wb.kernel
def _pair_read_back(bars, acc, c, r, t, addr):
    """A 2-SM block-scaled test's end: once the pair's MMA is committed, each CTA reads its own half of the
    accumulator (rows 128r + t) into c and the pair frees its tensor memory."""
    wb.mbarrier_wait(bars, 0, 0)
    wb.tcgen05_fence_after()
    frag = wb.make_fragment(PBN, wb.Float32)
    wb.copy(PBLOAD, acc, frag)                        # each CTA reads its own half: rows 128r + t
    wb.tcgen05_wait_ld()
    for j in range(PBN):
        c[r * (PBM // 2) + t, j] = frag[j]
    wb.tcgen05_fence_before()
    wb.cluster_sync()
    if t < 32:
        wb.tmem_dealloc(addr, 128, cta_group=2)


PBS_A = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", wb.Float8E4M3FN), (PBM // 2, PBK))
PBS_B = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", wb.Float8E4M3FN), (PBN // 2, PBK))


@wb.kernel(cluster=(2, 1, 1))
def _umma_pair_block_scaled(a, b, sfa, sfb, c, cp_by: wb.Constexpr, wait_cp: wb.Constexpr, sfb_same: wb.Constexpr):
    t = wb.thread_idx().x
    r = wb.block_rank_in_cluster()
    sA = wb.shared_tensor(wb.Float8E4M3FN, PBS_A)
    sB = wb.shared_tensor(wb.Float8E4M3FN, PBS_B)
    sSFA = wb.shared_tensor(wb.Uint8, PBSL_A)       # the ue8m0 scale factors' bits
    sSFB = wb.shared_tensor(wb.Uint8, PBSL_B)
    bars = wb.shared_tensor(wb.Uint64, 2)             # 0: the MMAs done (both CTAs); 1: the copies done (the leader)
    holder = wb.shared_tensor(wb.Uint32, 1)
    for i in range(t, PBM // 2 * PBK, 128):           # CTA r: A rows 128r.., B rows 32r..
        sA[i % (PBM // 2), i // (PBM // 2)] = a[r * (PBM // 2) + i % (PBM // 2), i // (PBM // 2)]
    for i in range(t, PBN // 2 * PBK, 128):
        sB[i % (PBN // 2), i // (PBN // 2)] = b[r * (PBN // 2) + i % (PBN // 2), i // (PBN // 2)]
    for i in range(t, 128 * (PBK // 32), 128):        # row i % 128, k-block i // 128: this CTA's SFA, every SFB
        sSFA[i % 128, 0, i // 128] = sfa[r * 128 + i % 128, i // 128]
        x = sfb[i % 128, i // 128]
        if sfb_same == 0 and r == 1 and i == 130:
            x = wb.Uint8(x + 1)
        sSFB[i % 128, 0, i // 128] = x
    if t < 32:
        wb.tmem_alloc(holder, 128, cta_group=2)       # columns 0..63: D; 64..67: SFA; 68..71: SFB (in each CTA)
    if t == 0:
        wb.mbarrier_init(bars, 0, 1)
        wb.mbarrier_init(bars, 1, 1)
        wb.mbarrier_init_fence()
    wb.fence_proxy_async()
    wb.tcgen05_fence_before()
    wb.cluster_sync()                                 # both CTAs' tiles and factors in place before the leader's copy
    wb.tcgen05_fence_after()
    addr = holder[0]
    acc = wb.make_tmem_tensor(addr, PBACC)
    tsfa = wb.make_tmem_tensor(addr + 64, PBSF_A)
    tsfb = wb.make_tmem_tensor(addr + 68, PBSF_B)
    if r == 0:
        if t == cp_by:
            wb.copy(SF_CP2, sSFA, tsfa)
            wb.copy(SF_CP2, sSFB, tsfb)
            if cp_by != 0:
                wb.tcgen05_commit(bars, 1, cta_group=2)
        wb.sync_threads()
        if t == 0:
            if cp_by != 0 and wait_cp:
                wb.mbarrier_wait(bars, 1, 0)
                wb.tcgen05_fence_after()
            wb.gemm(PBS, acc, (sA, tsfa), (sB, tsfb), acc, accumulate=False)
            wb.tcgen05_commit(bars, 0, cta_group=2, multicast=0b11)
    _pair_read_back(bars, acc, c, r, t, addr)


def _pair_block_scaled_run(cp_by=0, wait_cp=True, sfb_same=True):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(33)
    # as _block_scaled_run: e4m3 halves up to +-6 and scales 2^-5..2^5, so float64 sums a k-block exactly
    a = torch.from_numpy(rng.integers(-12, 13, (PBM, PBK)).astype(np.float32) / 2).to(torch.float8_e4m3fn)
    b = torch.from_numpy(rng.integers(-12, 13, (PBN, PBK)).astype(np.float32) / 2).to(torch.float8_e4m3fn)
    ea = rng.integers(122, 133, (PBM, PBK // 32)).astype(np.uint8)
    eb = rng.integers(122, 133, (128, PBK // 32)).astype(np.uint8)      # rows PBN..127: CUTLASS's padding to 128
    c = torch.full((PBM, PBN), float("nan"))
    args = (a, b, torch.from_numpy(ea), torch.from_numpy(eb), c, cp_by, wait_cp, sfb_same)
    _umma_pair_block_scaled[(2, 1, 1), (128, 1, 1)](*args)
    A = a.double().numpy() * np.repeat(2.0 ** (ea.astype(np.float64) - 127), 32, axis=1)
    B = b.double().numpy() * np.repeat(2.0 ** (eb[:PBN].astype(np.float64) - 127), 32, axis=1)
    want = np.zeros((PBM, PBN), np.float32)
    for kb in range(PBK // 32):
        k = slice(32 * kb, 32 * kb + 32)
        want = (want.astype(np.float64) + A[:, k] @ B[:, k].T).astype(np.float32)
    np.testing.assert_array_equal(c.numpy(), want)
    assert not np.array_equal(want, (A @ B.T).astype(np.float32))      # the rounding a k-block is seen
    return _source(_umma_pair_block_scaled, *args)


def test_tcgen05_cta_pair_block_scaled():
    """The 2-SM kind::mxf8f6f4 MMA exact in both CTAs' halves (CPU executor); NVRTC compiles it for sm_100a: the
    factors' copies are tcgen05.cp.cta_group::2.32x128b.warpx4, the MMA [d], a_desc, b_desc, idesc, [sfa], [sfb], p."""
    code = _pair_block_scaled_run()
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from workbench.dsl.runtime.cupy import compile_cubin, compile_ptx
    ptx = compile_ptx(code, "sm_100a")
    assert ptx.count("tcgen05.cp.cta_group::2.32x128b.warpx4") == 2
    assert "tcgen05.cp.cta_group::1" not in ptx and "tcgen05.mma.cta_group::1" not in ptx
    assert len(re.findall(r"tcgen05\.mma\.cta_group::2\.kind::mxf8f6f4\.block_scale \[%r\d+\], %rd\d+, %rd\d+, "
                          r"%r\d+, \[%r\d+\], \[%r\d+\], p;", ptx)) == PBK // 32
    assert len(compile_cubin(code, "sm_100a")) > 0


def test_tcgen05_cta_pair_block_scaled_errors():
    """Factors another thread copied, read before that copy's commit completed; the two CTAs' SFB copies that differ
    (which one the pair reads is not documented): reported, not a silent guess."""
    with pytest.raises(wb.KernelRuntimeError, match=r"tcgen05.mma \(SM100_MMA_MXF8F6F4_2x1SM_SS.*before tcgen05.cp "
                                                    r"32x128b.warpx4"):
        _pair_block_scaled_run(cp_by=32, wait_cp=False)
    _pair_block_scaled_run(cp_by=32, wait_cp=True)          # committed and waited for: exact
    with pytest.raises(wb.KernelRuntimeError, match=r"line \d+\): scale factor 0 of this MMA's K for B row 2 differs between the "
                                                    r"leader's TMEM \(130\) and the peer's \(131\)"):
        _pair_block_scaled_run(sfb_same=False)


def _ptx_isa_table43(idesc: int) -> dict:
    """The PTX ISA's Table 43 (instruction descriptor of .kind::mxf8f6f4), field by field from its bit ranges."""
    f = lambda lo, n: idesc >> lo & ((1 << n) - 1)      # noqa: E731
    return dict(reserved=(f(0, 2), f(3, 1), f(6, 1), f(24, 3), f(31, 1)), sparse=f(2, 1), b_sf_id=f(4, 2),
                atype=f(7, 3), btype=f(10, 3), negate=(f(13, 1), f(14, 1)), transpose=(f(15, 1), f(16, 1)),
                n=f(17, 6) << 3, scale_type=f(23, 1), m=f(27, 2) << 7, a_sf_id=f(29, 2))


@pytest.mark.parametrize("pair", [False, True])
def test_tcgen05_block_scaled_operands_follow_the_ptx_isa(pair):
    """Each k-block's block-scaled tcgen05.mma against the PTX ISA's text: the operands in the order "[d-tmem], a-desc,
    b-desc, idesc, [scale-A-tmem], [scale-B-tmem], enable-input-d"; Table 43's idesc (E4M3 = 0, UE8M0 = 1, M >> 7 at
    bits 27-28, N >> 3 at 17-22) with the Matrix A / B Scale Factor Data IDs (bits 29-30 / 4-5) the byte of the
    TMEM word that holds this k-block's factors ("SFA_ID specifies the byte offset in the Tensor Memory word");
    the factors' addresses carry the same byte in bits 30..31, as CuTe's make_runtime_instr_desc_block_scaled reads
    it back ("The first 2-bits of TMEM address includes byte address")."""
    code = _pair_block_scaled_run() if pair else _block_scaled_run()
    m, n, k = (PBM, PBN, PBK) if pair else (BM, BN, BK)
    calls = re.findall(r'block_scale \[%0\], %1, %2, %3, \[%5\], \[%6\], p;\\n\}\\n" :: "r"\(\(unsigned\)\(\w+\)\), '
                       r'"l"\(\w+\), "l"\(\w+\), "r"\(0x([0-9a-f]{8})u\), "r"\(\(unsigned\)\((\w+)\)\), '
                       r'"r"\(\(unsigned\)\(.+?\) \| 0x([0-9a-f]{8})u\), "r"\(\(unsigned\)\(.+?\) \| 0x([0-9a-f]{8})u\)',
                       code)
    assert len(calls) == k // 32
    for kb, (idesc, acc, sfa_hi, sfb_hi) in enumerate(calls):
        d = _ptx_isa_table43(int(idesc, 16))
        assert d == dict(reserved=(0, 0, 0, 0, 0), sparse=0, b_sf_id=kb, atype=0, btype=0, negate=(0, 0),
                         transpose=(0, 0), n=n, scale_type=1, m=m, a_sf_id=kb), (kb, d)
        assert int(sfa_hi, 16) == int(sfb_hi, 16) == kb << 30       # k-block kb's factors: byte kb of the word
        assert acc == ("0" if kb == 0 else "1")                     # accumulate=False overwrites on the first only


# -- Blackwell: kind::mxf4 / mxf4nvf4 (e2m1 x e2m1, packed two a byte in shared memory) ------------------------------
# 128 x 64 x 128 e2m1: TMA loads each 4-bit tile as its packed bytes (a Uint8 descriptor, the tile's layout recast to
# bytes), thread 0 copies the scale factors into TMEM and issues the two k-blocks' MMAs.  CPU executor; NVRTC for
# sm_100a (no Blackwell GPU is lent here, so it has not run on one).
XM, XN, XK = 128, 64, 128
_X_A4 = wb.tile_to_shape(wb.recast_layout(4, 8, wb.umma_smem_atom("Layout_K_SW64_Atom", wb.Uint8)), (XM, XK))
_X_B4 = wb.tile_to_shape(wb.recast_layout(4, 8, wb.umma_smem_atom("Layout_K_SW64_Atom", wb.Uint8)), (XN, XK))
_X_LOAD = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_LOAD_32dp32b16x", wb.Float32),
                            BSA.make_fragment_C(BSA.partition_shape_C((XM, XN))))


def _make_mxf4(vs, sf_type):
    atom = wb.mma_atom("SM100_MMA_MXF4_SS", a_type=wb.Float4E2M1FN, b_type=wb.Float4E2M1FN, c_type=wb.Float32,
                       sf_type=sf_type, m=XM, n=XN, vs=vs)
    tacc = atom.make_fragment_C(atom.partition_shape_C((XM, XN)))
    sl_a, sl_b = atom.smem_layout_SFA((XM, XN, XK)), atom.smem_layout_SFB((XM, XN, XK))
    sf_a, sf_b = atom.make_fragment_SFA(sl_a.shape), atom.make_fragment_SFB(sl_b.shape)
    cp = wb.copy_atom("SM100_UTCCP_4x32dp128bit_1cta", sf_type)
    nsf = 64 // vs                                   # factors a k-block (K = 64) holds per row

    @wb.kernel
    def mxf4(tma_a, tma_b, sfa, sfb, c, element_access: wb.Constexpr):
        t = wb.thread_idx().x
        sA = wb.shared_tensor(wb.Float4E2M1FN, _X_A4)
        sB = wb.shared_tensor(wb.Float4E2M1FN, _X_B4)
        sSFA = wb.shared_tensor(wb.Uint8, sl_a)      # the scale factors' bits
        sSFB = wb.shared_tensor(wb.Uint8, sl_b)
        bars = wb.shared_tensor(wb.Uint64, 2)        # 0: the MMAs done; 1: the tiles landed
        holder = wb.shared_tensor(wb.Uint32, 1)
        if element_access:
            sA[0, 0] = sA[0, 1]
        for i in range(t, 128 * (XK // vs), 128):    # row i % 128, factor j = i // 128 (K vs*j .. vs*j + vs - 1)
            j = i // 128
            sSFA[i % 128 + 128 * vs * (j % nsf), 0, j // nsf] = sfa[i % 128, j]
            sSFB[i % 128 + 128 * vs * (j % nsf), 0, j // nsf] = sfb[i % 128, j]
        if t < 32:
            wb.tmem_alloc(holder, 128)               # columns 0..63: D; 64..: SFA; 96..: SFB
        if t == 0:
            wb.mbarrier_init(bars, 0, 1)
            wb.mbarrier_init(bars, 1, 1)
            wb.mbarrier_init_fence()
        wb.fence_proxy_async()
        wb.tcgen05_fence_before()
        wb.sync_threads()
        wb.tcgen05_fence_after()
        addr = holder[0]
        acc = wb.make_tmem_tensor(addr, tacc)
        tsfa = wb.make_tmem_tensor(addr + 64, sf_a)
        tsfb = wb.make_tmem_tensor(addr + 96, sf_b)
        if t == 0:
            wb.mbarrier_arrive_and_expect_tx(bars, 1, (XM + XN) * XK // 2)
            wb.tma_load(tma_a, sA, (0, 0), bars, 1)
            wb.tma_load(tma_b, sB, (0, 0), bars, 1)
            wb.mbarrier_wait(bars, 1, 0)
            wb.copy(cp, sSFA, tsfa)
            wb.copy(cp, sSFB, tsfb)
            wb.gemm(atom, acc, (sA, tsfa), (sB, tsfb), acc, accumulate=False)
            wb.tcgen05_commit(bars, 0)
        wb.mbarrier_wait(bars, 0, 0)
        wb.tcgen05_fence_after()
        frag = wb.make_fragment(XN, wb.Float32)
        wb.copy(_X_LOAD, acc, frag)
        wb.tcgen05_wait_ld()
        for j in range(XN):
            c[t, j] = frag[j]
        wb.tcgen05_fence_before()
        wb.sync_threads()
        if t < 32:
            wb.tmem_dealloc(addr, 128)

    return atom, mxf4


_MXF4 = {(32, "ue8m0"): _make_mxf4(32, wb.Float8E8M0FNU), (16, "ue4m3"): _make_mxf4(16, wb.Float8E4M3FN),
         (16, "ue8m0"): _make_mxf4(16, wb.Float8E8M0FNU)}
_E2M1_VALUES = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


def _pack_e2m1(codes):
    """(R, K) 4-bit codes -> (R, K/2) bytes, element 2j in byte j's low nibble (NVIDIA's __nv_fp4x2_e2m1)."""
    return (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)


def _mxf4_run(vs, sf, element_access=False, sf_sign=False):
    atom, kernel = _MXF4[(vs, sf)]
    rng = np.random.default_rng(6)
    ca, cb = rng.integers(0, 16, (XM, XK)), rng.integers(0, 16, (XN, XK))     # every E2M1 code
    if sf == "ue8m0":
        sa, sb = rng.integers(120, 135, (128, XK // vs)), rng.integers(120, 135, (128, XK // vs))
        scale = lambda x: 2.0 ** (x.astype(np.float64) - 127)                   # noqa: E731
    else:                                   # ue4m3: every positive finite code, subnormals included
        sa, sb = rng.integers(1, 127, (128, XK // vs)), rng.integers(1, 127, (128, XK // vs))
        scale = lambda x: np.where(x >> 3 == 0, (x & 7) / 8 * 2.0 ** -6,        # noqa: E731
                                   (1 + (x & 7) / 8) * 2.0 ** ((x >> 3).astype(np.float64) - 7))
    if sf_sign:
        sa[3, 1] |= 0x80
    a8, b8 = _pack_e2m1(ca), _pack_e2m1(cb)
    c = np.full((XM, XN), np.nan, np.float32)
    tma_a = wb.make_tma_load(a8, wb.recast_layout(8, 4, _X_A4))
    tma_b = wb.make_tma_load(b8, wb.recast_layout(8, 4, _X_B4))
    args = (tma_a, tma_b, sa.astype(np.uint8), sb.astype(np.uint8), c, element_access)
    kernel[(1, 1, 1), (128, 1, 1)](*args)
    A = _E2M1_VALUES[ca] * np.repeat(scale(sa), vs, axis=1)
    B = _E2M1_VALUES[cb] * np.repeat(scale(sb[:XN]), vs, axis=1)
    want = np.zeros((XM, XN), np.float32)
    for kb in range(XK // 64):              # float64 sums a k-block exactly here; rounded once an MMA, as the MMA
        k = slice(64 * kb, 64 * kb + 64)
        want = (want.astype(np.float64) + A[:, k] @ B[:, k].T).astype(np.float32)
    np.testing.assert_array_equal(c, want)
    assert not np.array_equal(want, (A @ B.T).astype(np.float32))          # the rounding a k-block is seen
    return _source(kernel, *args)


@pytest.mark.parametrize("vs,sf", sorted(_MXF4))
def test_tcgen05_mxf4_mma(vs, sf):
    """kind::mxf4 (vs 32, ue8m0) and kind::mxf4nvf4 (vs 16, ue4m3 or ue8m0): packed e2m1 tiles loaded by TMA as bytes,
    every E2M1 code and scale, exact on the CPU executor; NVRTC compiles it for sm_100a (PTX and cubin; no Blackwell
    GPU is lent here, so it has not run on one)."""
    code = _mxf4_run(vs, sf)
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from workbench.dsl.runtime.cupy import compile_cubin, compile_ptx
    ptx = compile_ptx(code, "sm_100a")
    kind = "mxf4" if vs == 32 else "mxf4nvf4"
    calls = re.findall(rf"tcgen05\.mma\.cta_group::1\.kind::{kind}\.block_scale\.block{vs} \[%r\d+\], %rd\d+, "
                       r"%rd\d+, %r\d+, \[%r\d+\], \[%r\d+\], p;", ptx)
    assert len(calls) == XK // 64
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes") == 2
    assert len(compile_cubin(code, "sm_100a")) > 0


def test_tcgen05_mxf4_operands_follow_the_ptx_isa():
    """Each k-block's idesc by the PTX ISA's instruction-descriptor table for .kind::mxf4 / mxf4nvf4 (E2M1 = 1 in the
    A/B type fields, the scale type UE8M0 = 1 / UE4M3 = 0 at bit 23); the scale-factor ids name the byte where the
    k-block's factors start: 0 or 2 for mxf4 (two factors a k-block), 0 for mxf4nvf4 (four, the whole word, the next
    k-block one column on); the smem descriptors' start addresses step by the k-block's 32 bytes."""
    for vs, sf in sorted(_MXF4):
        code = _mxf4_run(vs, sf)
        calls = re.findall(r'block_scale\.block\d+ \[%0\], %1, %2, %3, \[%5\], \[%6\], p;\\n\}\\n" :: '
                           r'"r"\(\(unsigned\)\(\w+\)\), "l"\(\w+\), "l"\(\w+\), "r"\(0x([0-9a-f]{8})u\), '
                           r'"r"\(\(unsigned\)\((\w+)\)\), "r"\(\(unsigned\)\((.+?)\) \| 0x([0-9a-f]{8})u\), '
                           r'"r"\(\(unsigned\)\((.+?)\) \| 0x([0-9a-f]{8})u\)', code)
        assert len(calls) == XK // 64, (vs, sf)
        for kb, (idesc, acc, _, sfa_hi, _, sfb_hi) in enumerate(calls):
            d = _ptx_isa_table43(int(idesc, 16))
            byte = 2 * kb if vs == 32 else 0
            assert (d["atype"] & 3, d["btype"] & 3) == (1, 1), (vs, sf, d)     # E2M1
            assert d["scale_type"] == (1 if sf == "ue8m0" else 0), (vs, sf, d)
            assert (d["a_sf_id"], d["b_sf_id"]) == (byte, byte), (vs, sf, kb, d)
            assert (d["m"], d["n"], d["sparse"], d["transpose"]) == (XM, XN, 0, (0, 0))
            assert int(sfa_hi, 16) == int(sfb_hi, 16) == byte << 30
            assert acc == ("0" if kb == 0 else "1")


def test_tcgen05_mxf4_refusals():
    """What kernels refuse of 4-bit operands, each with its reason."""
    with pytest.raises(wb.KernelError, match=r"holds Float4E2M1FN, packed two a byte: a 4-bit element is half a byte"):
        _mxf4_run(32, "ue8m0", element_access=True)        # one 4-bit element read or written by a thread
    with pytest.raises(wb.KernelRuntimeError, match=r"ue4m3 scale factor \[3, 1\] is 0x.., its sign bit set"):
        _mxf4_run(16, "ue4m3", sf_sign=True)
    atom = _MXF4[(32, "ue8m0")][0]
    acc_l = atom.make_fragment_C(atom.partition_shape_C((XM, XN)))
    unpacked = wb.tile_to_shape(wb.make_layout((8, 128), stride=(1, 8)), (XM, XK))       # neighbours along K in two bytes

    @wb.kernel
    def bad_tile(x):
        s = wb.shared_tensor(wb.Float4E2M1FN, unpacked)
        acc = wb.make_tmem_tensor(0, acc_l)
        wb.gemm(atom, acc, (s, acc), (s, acc), acc)

    with pytest.raises(wb.KernelError, match=r"does not (keep each pair of neighbouring values along K in one byte|pack into "
                                             r"bytes)"):
        bad_tile[(1, 1, 1), (128, 1, 1)](np.zeros(4, np.float32))
    @wb.kernel
    def copy_4bit(x):
        s = wb.shared_tensor(wb.Float4E2M1FN, _X_A4)
        s2 = wb.shared_tensor(wb.Float4E2M1FN, _X_A4)
        wb.copy(s, s2)

    with pytest.raises(wb.KernelError, match=r"holds Float4E2M1FN, packed two a byte"):
        copy_4bit[(1, 1, 1), (32, 1, 1)](np.zeros(4, np.float32))      # wb.copy moves elements: refused too
    with pytest.raises(TypeError, match=r"a 4-bit tile is moved as its packed bytes"):
        @wb.kernel
        def f16_tma(tma):
            s = wb.shared_tensor(wb.Float4E2M1FN, _X_A4)
            bars = wb.shared_tensor(wb.Uint64, 1)
            wb.tma_load(tma, s, (0, 0), bars, 0)

        f16_tma[(1, 1, 1), (32, 1, 1)](wb.make_tma_load(np.zeros((XM, XK // 4), np.float16),
                                                        wb.recast_layout(16, 4, _X_A4)))


# The pair's kind::mxf4nvf4 (SM100_MMA_MXF4_2x1SM_SS, vs 16, ue4m3): 256 x 64 x 128, each CTA's TMA loads its 128 rows
# of A and 32 of B as bytes, the leader copies both CTAs' factors (tcgen05.cp.cta_group::2) and issues the MMAs.
PXS = wb.mma_atom("SM100_MMA_MXF4_2x1SM_SS", a_type=wb.Float4E2M1FN, b_type=wb.Float4E2M1FN, c_type=wb.Float32,
                  sf_type=wb.Float8E4M3FN, m=PBM, n=PBN, vs=16)
PXSL_A, PXSL_B = PXS.smem_layout_SFA((PBM, PBN, PBK)), PXS.smem_layout_SFB((PBM, PBN, PBK))
PXSF_A, PXSF_B = PXS.make_fragment_SFA(PXSL_A.shape), PXS.make_fragment_SFB(PXSL_B.shape)
PX_A = wb.tile_to_shape(wb.recast_layout(4, 8, wb.umma_smem_atom("Layout_K_SW64_Atom", wb.Uint8)), (PBM // 2, PBK))
PX_B = wb.tile_to_shape(wb.recast_layout(4, 8, wb.umma_smem_atom("Layout_K_SW64_Atom", wb.Uint8)), (PBN // 2, PBK))
PX_CP2 = wb.copy_atom("SM100_UTCCP_4x32dp128bit_2cta", wb.Float8E4M3FN)


@wb.kernel(cluster=(2, 1, 1))
def _umma_pair_mxf4(tma_a, tma_b, sfa, sfb, c):
    t = wb.thread_idx().x
    r = wb.block_rank_in_cluster()
    sA = wb.shared_tensor(wb.Float4E2M1FN, PX_A)
    sB = wb.shared_tensor(wb.Float4E2M1FN, PX_B)
    sSFA = wb.shared_tensor(wb.Uint8, PXSL_A)
    sSFB = wb.shared_tensor(wb.Uint8, PXSL_B)
    bars = wb.shared_tensor(wb.Uint64, 2)             # 0: the MMAs done (both CTAs); 1: this CTA's tiles landed
    holder = wb.shared_tensor(wb.Uint32, 1)
    for i in range(t, 128 * (PBK // 16), 128):        # row i % 128, factor j = i // 128: four a k-block
        j = i // 128
        sSFA[i % 128 + 128 * 16 * (j % 4), 0, j // 4] = sfa[r * 128 + i % 128, j]
        sSFB[i % 128 + 128 * 16 * (j % 4), 0, j // 4] = sfb[i % 128, j]
    if t < 32:
        wb.tmem_alloc(holder, 128, cta_group=2)       # columns 0..63: D; 64..: SFA; 96..: SFB (in each CTA)
    if t == 0:
        wb.mbarrier_init(bars, 0, 1)
        wb.mbarrier_init(bars, 1, 1)
        wb.mbarrier_init_fence()
        wb.mbarrier_arrive_and_expect_tx(bars, 1, (PBM // 2 + PBN // 2) * PBK // 2)
        wb.tma_load(tma_a, sA, (r * (PBM // 2), 0), bars, 1)
        wb.tma_load(tma_b, sB, (r * (PBN // 2), 0), bars, 1)
        wb.mbarrier_wait(bars, 1, 0)
    wb.fence_proxy_async()
    wb.tcgen05_fence_before()
    wb.cluster_sync()                                 # both CTAs' tiles and factors in place before the leader's MMA
    wb.tcgen05_fence_after()
    addr = holder[0]
    acc = wb.make_tmem_tensor(addr, PBACC)
    tsfa = wb.make_tmem_tensor(addr + 64, PXSF_A)
    tsfb = wb.make_tmem_tensor(addr + 96, PXSF_B)
    if r == 0 and t == 0:
        wb.copy(PX_CP2, sSFA, tsfa)
        wb.copy(PX_CP2, sSFB, tsfb)
        wb.gemm(PXS, acc, (sA, tsfa), (sB, tsfb), acc, accumulate=False)
        wb.tcgen05_commit(bars, 0, cta_group=2, multicast=0b11)
    _pair_read_back(bars, acc, c, r, t, addr)


def _pair_mxf4_run():
    rng = np.random.default_rng(7)
    ca, cb = rng.integers(0, 16, (PBM, PBK)), rng.integers(0, 16, (PBN, PBK))
    sa, sb = rng.integers(1, 127, (PBM, PBK // 16)), rng.integers(1, 127, (128, PBK // 16))
    ue4m3 = lambda x: np.where(x >> 3 == 0, (x & 7) / 8 * 2.0 ** -6,                    # noqa: E731
                               (1 + (x & 7) / 8) * 2.0 ** ((x >> 3).astype(np.float64) - 7))
    c = np.full((PBM, PBN), np.nan, np.float32)
    args = (wb.make_tma_load(_pack_e2m1(ca), wb.recast_layout(8, 4, PX_A)),
            wb.make_tma_load(_pack_e2m1(cb), wb.recast_layout(8, 4, PX_B)), sa.astype(np.uint8), sb.astype(np.uint8), c)
    _umma_pair_mxf4[(2, 1, 1), (128, 1, 1)](*args)
    A = _E2M1_VALUES[ca] * np.repeat(ue4m3(sa), 16, axis=1)
    B = _E2M1_VALUES[cb] * np.repeat(ue4m3(sb[:PBN]), 16, axis=1)
    want = np.zeros((PBM, PBN), np.float32)
    for kb in range(PBK // 64):
        k = slice(64 * kb, 64 * kb + 64)
        want = (want.astype(np.float64) + A[:, k] @ B[:, k].T).astype(np.float32)
    np.testing.assert_array_equal(c, want)
    return _source(_umma_pair_mxf4, *args)


def test_tcgen05_cta_pair_mxf4():
    """The pair's kind::mxf4nvf4 with packed e2m1 tiles (half of A and of B in each CTA) and ue4m3 factors: exact on
    the CPU executor; NVRTC compiles it for sm_100a (not run on a Blackwell GPU: none is lent here)."""
    code = _pair_mxf4_run()
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from workbench.dsl.runtime.cupy import compile_cubin, compile_ptx
    ptx = compile_ptx(code, "sm_100a")
    assert len(re.findall(r"tcgen05\.mma\.cta_group::2\.kind::mxf4nvf4\.block_scale\.block16 \[%r\d+\], %rd\d+, "
                          r"%rd\d+, %r\d+, \[%r\d+\], \[%r\d+\], p;", ptx)) == PBK // 64
    assert len(compile_cubin(code, "sm_100a")) > 0


_CP2_A = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW32_Atom", wb.Float16), (128, 16))
_CP2 = wb.copy_atom("SM100_UTCCP_128dp256bit_2cta", wb.Float16)
_CP2_FRAG = wb.mma_atom("SM100_MMA_F16BF16_2x1SM_TS", a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32, m=256,
                        n=64).make_fragment_A(((128, 16), 1, 1))


@wb.kernel(cluster=(2, 1, 1))
def _cp2_from(x, issuer: wb.Constexpr):
    t = wb.thread_idx().x
    r = wb.block_rank_in_cluster()
    sA = wb.shared_tensor(wb.Float16, _CP2_A)
    holder = wb.shared_tensor(wb.Uint32, 1)
    bars = wb.shared_tensor(wb.Uint64, 1)
    for i in range(t, 128 * 16, 128):
        sA[i % 128, i // 128] = x[i % 128, i // 128]
    if t < 32:
        wb.tmem_alloc(holder, 32, cta_group=2)
    if t == 0:
        wb.mbarrier_init(bars, 0, 1)
        wb.mbarrier_init_fence()
    wb.fence_proxy_async()
    wb.tcgen05_fence_before()
    wb.cluster_sync()
    wb.tcgen05_fence_after()
    addr = holder[0]
    if t == 0:
        if r == issuer:
            wb.copy(_CP2, sA, wb.make_tmem_tensor(addr, _CP2_FRAG))
            wb.tcgen05_commit(bars, 0, cta_group=2, multicast=0b11)
    wb.mbarrier_wait(bars, 0, 0)
    wb.tcgen05_fence_before()
    wb.cluster_sync()
    if t < 32:
        wb.tmem_dealloc(addr, 32, cta_group=2)


def test_tcgen05_cp_2cta_from_the_odd_cta_is_refused():
    """A pair's tcgen05.cp.cta_group::2 issued by the odd CTA: what it would read and write is not documented, so the
    CPU executor reports it; from the leader the same kernel runs."""
    x = np.arange(128 * 16, dtype=np.float16).reshape(128, 16)
    _cp2_from[(2, 1, 1), (128, 1, 1)](x, 0)
    with pytest.raises(wb.KernelRuntimeError, match=r"tcgen05.cp 128x256b \(SM100_UTCCP_128dp256bit_2cta.*issued by the "
                                                    r"odd CTA of its pair \(cluster rank 1\)"):
        _cp2_from[(2, 1, 1), (128, 1, 1)](x, 1)
