"""The Blackwell GEMM rung (workbench/kernels/gemm_blackwell.py): TMA -> swizzled shared -> tcgen05.mma -> TMEM ->
tcgen05.ld -> epilogue, warp-specialized; with two_sm=True on CTA pairs (the 2x1SM UMMA, cta_group::2).

No Blackwell GPU is lent here: the rung runs on the CPU executor (exact against float64 numpy at ragged sizes) and its
CUDA is compiled by NVRTC for sm_100a (PTX holding the tcgen05 instructions; a cubin, whose ptxas report says 0
spills), never run on a GPU.  ``gpu``: launched on a GPU that is not sm_100 it is refused, saying it never ran on one.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.kernels.gemm_blackwell import NOT_RUN, BlackwellGemm

RNG = np.random.default_rng(30)


def _operands(m, n, k, c_type=np.float32, dtype=np.float16):
    a = RNG.integers(-3, 4, (m, k)).astype(dtype)
    b = RNG.integers(-3, 4, (n, k)).astype(dtype)
    return a, b, np.full((m, n), np.nan, c_type)


def _reference(a, b, c_type):
    return (a.astype(np.float64) @ b.astype(np.float64).T).astype(c_type)


# -- exact on the CPU executor -------------------------------------------------------------------------------------
# small integers: every product and sum is exact in fp32, so the rung must equal float64 numpy bit for bit
CASES = [
    # (config, (M, N, K), C type): ragged M, N and K; two tiles down and across; every K-tile count from 1
    (dict(bn=64, bk=64, stages=2), (130, 70, 72), np.float32),
    (dict(bn=64, bk=64, stages=2, persistent=True), (300, 150, 200), np.float16),    # 3x3 tiles on 2 CTAs
    (dict(bn=32, bk=32, stages=3, acc_stages=1, epi_columns=16), (129, 33, 40), np.float32),
    (dict(bn=256, bk=64, stages=4), (100, 260, 64), np.float32),                       # the default tile
    (dict(bn=48, bk=16, stages=2, persistent=True, acc_stages=2, epi_columns=16), (257, 50, 24), np.float32),
    (dict(bn=32, bk=32, stages=2, group=2, persistent=True), (300, 100, 32), np.float32),   # 3x4 tiles, bands of 2
    # two_sm: CTA pairs on 256-row tiles (the 2x1SM UMMA issued by the even CTA, both halves read by their own CTA)
    (dict(bn=64, bk=64, stages=2, two_sm=True), (300, 70, 72), np.float32),              # 2x2 tiles, 4 pairs
    (dict(bn=64, bk=64, stages=2, persistent=True, two_sm=True), (600, 150, 136), np.float16),   # 3x3 tiles, 1 pair
    (dict(bn=32, bk=32, stages=3, acc_stages=1, epi_columns=16, two_sm=True), (257, 33, 40), np.float32),
]


@pytest.mark.parametrize("kw,shape,c_type", CASES, ids=[f"{s[0]}x{s[1]}x{s[2]}{'-2sm' if kw.get('two_sm') else ''}"
                                                         for kw, s, _ in CASES])
def test_rung_is_exact_on_the_cpu_executor(kw, shape, c_type):
    cfg = BlackwellGemm(**kw)
    a, b, c = _operands(*shape, c_type=c_type)
    cfg.launch(a, b, c)
    np.testing.assert_array_equal(c, _reference(a, b, c_type))


@pytest.mark.parametrize("two_sm", [False, True])
def test_bf16_operands_and_c(two_sm):
    torch = pytest.importorskip("torch")          # bf16 host arrays (CPU tensors, through DLPack)
    cfg = BlackwellGemm(bn=64, bk=32, stages=2, dtype=wb.BFloat16, two_sm=two_sm)
    a, b, _ = _operands(150, 72, 48)
    ta, tb = torch.from_numpy(a.astype(np.float32)).bfloat16(), torch.from_numpy(b.astype(np.float32)).bfloat16()
    c = torch.full((150, 72), float("nan"), dtype=torch.bfloat16)
    cfg.launch(ta, tb, c)
    want = torch.from_numpy(_reference(a, b, np.float32)).bfloat16()
    assert torch.equal(c, want)


def test_degenerate_sizes():
    cfg = BlackwellGemm(bn=64, bk=64, stages=2)
    a, b, c = _operands(5, 7, 0)
    cfg.launch(a, b, c)
    assert (c == 0).all()                           # K = 0: C = 0, as torch gives
    a, b, c = _operands(0, 7, 8)
    cfg.launch(a, b, c)                             # nothing to write


def test_bad_operands_are_refused():
    cfg = BlackwellGemm(bn=64, bk=64, stages=2)
    a, b, c = _operands(128, 64, 64)
    with pytest.raises(ValueError, match="K a multiple of 8"):
        cfg.launch(a[:, :60], b[:, :60], c)
    with pytest.raises(TypeError, match="Float16"):
        cfg.launch(a.astype(np.float32), b.astype(np.float32), c)
    with pytest.raises(ValueError, match="K-major"):
        cfg.launch(np.asfortranarray(a), b, c)


# -- the configuration: every object it exposes, and what it refuses -------------------------------------------
def test_config_objects_are_the_kernels():
    cfg = BlackwellGemm()                           # 128 x 256 x 64, 4 stages, 2 accumulators: the whole TMEM
    assert cfg.atom == wb.mma_atom("SM100_MMA_F16BF16_SS", a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32,
                                   m=128, n=256)
    assert cfg.tmem_columns_used == 512 and cfg.tmem_columns == 512
    assert (cfg.threads, cfg.warps["epilogue"]) == (256, (4, 5, 6, 7))
    # the epilogue's chunks are the accumulators' cells: (m, n) of accumulator a is chunk a*8 + n//32, column n%32
    for a in range(cfg.acc_stages):
        for m, n in ((0, 0), (127, 255), (5, 37), (64, 200)):
            assert cfg.tmem_acc.address(((m, n), 0, a)) == cfg.tmem_epi.address(((m, n % 32), 0, a * 8 + n // 32))
    assert cfg.tmem_acc.address(((7, 3), 0, 1)) == (7 << 16) | 259
    assert cfg.tmem_load.atom.name == "SM100_TMEM_LOAD_32dp32b32x"
    assert wb.cosize(cfg.smem["A"]) == 128 * 64 * 4 and wb.cosize(cfg.smem["B"]) == 256 * 64 * 4
    ar = cfg.arithmetic()
    assert ar["tile"] == (128, 256, 64) and ar["stages"] == 4 and ar["tmem_columns_used"] == 512
    assert ar["smem_bytes"] == 4 * (128 + 256) * 64 * 2 + 8 * (2 * 4 + 2 * 2) + 4 == cfg.smem_bytes
    assert ar["mmas_per_ktile"] == 4 and ar["instr_desc"] == f"0x{cfg.atom.instr_desc.encode():08x}"
    assert "never on a Blackwell GPU" in ar["run_here"]
    # the shared memory the kernel declares is the arithmetic's (stages, mbarriers, the TMEM address)
    a, b, c = _operands(128, 256, 64)
    kern, args = cfg.operands(a, b, c)
    code = kern.specialize(args).cuda_source
    assert f"_wb_smem + {cfg.smem_bytes - 4}" in code


def test_two_sm_config_objects():
    """two_sm: the pair's 2x1SM atom (M = 256), each CTA's boxes (its 128 rows of A, half of B's rows), each CTA's TMEM
    half laid out as CuTe's 2-SM fragment, two CTAs a tile in clusters of two."""
    cfg = BlackwellGemm(bn=128, bk=64, stages=3, two_sm=True)
    assert cfg.atom == wb.mma_atom("SM100_MMA_F16BF16_2x1SM_SS", a_type=wb.Float16, b_type=wb.Float16,
                                   c_type=wb.Float32, m=256, n=128)
    assert cfg.cluster == (2, 1, 1) and cfg.tile_m == 256
    assert wb.cosize(cfg.box["A"]) == 128 * 64 and wb.cosize(cfg.box["B"]) == 64 * 64
    assert cfg.stage_bytes == (128 + 64) * 64 * 2
    # each CTA holds rows 0..127 of its half, one a TMEM lane, the pair's N columns: (m, n) of accumulator a
    assert cfg.tmem_acc.lanes() == list(range(128)) and cfg.tmem_acc.columns() == list(range(256))
    assert cfg.tmem_acc.address(((5, 37), 0, 1)) == (5 << 16) | (128 + 37)
    assert cfg.grid(600, 300) == (2 * 3 * 3, 1, 1)
    ar = cfg.arithmetic()
    assert ar["tile"] == (256, 128, 64) and ar["ctas_per_tile"] == 2 and ar["tmem_lanes"] == 128
    a, b, c = _operands(256, 128, 64)
    kern, args = cfg.operands(a, b, c)
    code = kern.specialize(args).cuda_source
    assert "__cluster_dims__(2, 1, 1)" in code and f"_wb_smem + {cfg.smem_bytes - 4}" in code


@pytest.mark.parametrize("kw,match", [
    (dict(bm=64), "bm 128"),
    (dict(bn=24), "multiple of 16"),
    (dict(bk=128), "16, 32 or 64"),
    (dict(stages=1), ">= 2"),
    (dict(bn=256, acc_stages=3), "acc_stages in 1..2"),
    (dict(bn=64, epi_columns=128), "epi_columns"),
    (dict(stages=5), "at most 232448 bytes"),
    (dict(dtype=wb.Float32), "Float16 or wb.BFloat16"),
    (dict(two_sm=1), "two_sm to be a bool"),
    (dict(two_sm=True, bn=24), "2x1SM_SS N for M = 256"),
])
def test_bad_configs_are_refused(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        BlackwellGemm(**kw)


# -- compiled for sm_100a (NVRTC; no GPU needed) ---------------------------------------------------------------------
TCGEN05 = ("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32", "tcgen05.mma.cta_group::1.kind::f16",
           "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64",
           "tcgen05.ld.sync.aligned.32x32b.x32.b32", "tcgen05.wait::ld.sync.aligned",
           "tcgen05.dealloc.cta_group::1.sync.aligned.b32", "cp.async.bulk.tensor.2d")


TCGEN05_2SM = ("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32", "tcgen05.mma.cta_group::2.kind::f16",
               "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64",
               "tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned", "tcgen05.dealloc.cta_group::2.sync.aligned.b32",
               "tcgen05.ld.sync.aligned.32x32b.x32.b32", "mbarrier.arrive.shared::cluster.b64", ".reqnctapercluster 2, 1, 1")


@pytest.mark.parametrize("persistent,two_sm", [(False, False), (True, False), (False, True), (True, True)])
def test_compiles_for_sm100a_with_no_spills(persistent, two_sm):
    """NVRTC to PTX (the tcgen05 instructions in it) and to an sm_100a cubin, whose ptxas report (NVRTC runs ptxas
    inside) says no spills.  Not run: no Blackwell GPU is lent here."""
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from workbench.dsl.runtime.cupy import compile_ptx
    cfg = BlackwellGemm(persistent=persistent, two_sm=two_sm)
    a, b, c = _operands(256, 512, 128, c_type=np.float16)
    kern, args = cfg.operands(a, b, c)
    code = kern.specialize(args).cuda_source
    ptx = compile_ptx(code, "sm_100a")
    for text in (TCGEN05_2SM if two_sm else TCGEN05):
        assert text in ptx, text
    prog = nvrtc.createProgram(code, "gemm_blackwell.cu", [], [])
    try:
        nvrtc.compileProgram(prog, ["--gpu-architecture=sm_100a", "-Xptxas=-v", "-std=c++17"])
        log = nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)
    assert f"Compiling entry function 'gemm_tcgen05{'_2sm' if two_sm else ''}' for 'sm_100a'" in log, log
    assert "0 bytes spill stores, 0 bytes spill loads" in log, log


# -- on a GPU that is not a Blackwell: refused, saying so -------------------------------------------------------------
@pytest.mark.gpu
def test_launch_on_another_gpu_is_refused():
    from workbench.dsl.runtime.cupy import current_arch
    if not wb.gpu_available() or current_arch() == "sm_100":
        pytest.skip("needs a GPU other than sm_100")
    import cupy
    cfg = BlackwellGemm(bn=64, bk=64, stages=2)
    a, b = cupy.zeros((128, 64), cupy.float16), cupy.zeros((64, 64), cupy.float16)
    c = cupy.zeros((128, 64), cupy.float32)
    with pytest.raises(ValueError, match="needs a Blackwell GPU") as e:
        cfg.launch(a, b, c)
    assert NOT_RUN in str(e.value)
    kern, args = cfg.operands(a, b, c)             # the kernel itself refuses too, past the rung's own check
    with pytest.raises(ValueError, match="never run"):
        kern[cfg.grid(128, 64), (cfg.threads, 1, 1)](*args)
