"""workbench.kernels.arithmetic: every number is the configuration's own (its constructor agrees with the stage
budget), and where the committed H200 measurements hold the same quantity (blocks per SM from
cuOccupancyMaxActiveBlocksPerMultiprocessor, ptxas's registers) the prediction from the measured registers is it."""

import json
import math
import pathlib

import pytest

from workbench.kernels import gemm_ladder as G
from workbench.kernels.arithmetic import SM90, gemm_arithmetic
from workbench.kernels.gemm_hopper import HopperGemm

RESULTS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def test_waves_of_the_issue_example():
    # 4096^2 at 128 x 256: 512 tiles over 132 SMs, one block each: 3.9 waves, the fourth 116 of 132 blocks
    g = gemm_arithmetic(G.PIPELINED, 4096, 4096, 4096, sms=132)
    assert g.tiles == 512 and g.blocks_per_sm == 1 and g.concurrent == 132
    assert g.waves == pytest.approx(512 / 132) and g.last_wave_fill == pytest.approx(116 / 132)
    assert g.wave_efficiency == pytest.approx(512 / (4 * 132))
    # ragged: a partial tile is a whole tile
    assert gemm_arithmetic(G.PIPELINED, 4097, 4096, 64).tiles == 33 * 16


def test_intensity_is_the_tiles_flops_over_its_bytes():
    for bm, bn in ((128, 128), (128, 256)):
        g = gemm_arithmetic(G.SmemGemm(bm=bm, bn=bn, bk=32, warps=(2, 4)), 1024, 1024, 1024)
        assert g.intensity == pytest.approx(2 * bm * bn / ((bm + bn) * 2))
    assert gemm_arithmetic(G.PIPELINED, 4096, 4096, 4096).intensity == pytest.approx(256 / 3)


@pytest.mark.parametrize("make", [
    lambda s: G.SmemGemm(bm=128, bn=256, bk=64, warps=(2, 4), stages=s),
    lambda s: G.SmemGemm(bm=128, bn=128, bk=32, stages=s),
    lambda s: HopperGemm(bm=128, bn=256, bk=64, stages=s),
    lambda s: HopperGemm(bm=128, bn=128, bk=64, stages=s, pingpong=True),
    lambda s: HopperGemm(bm=64, bn=256, bk=64, stages=s, consumers=1),
], ids=["rung5", "rung3", "hopper", "pingpong", "one-consumer"])
def test_the_stage_budget_is_what_the_constructor_accepts(make):
    g = gemm_arithmetic(make(2), 512, 512, 512)
    assert g.stages * g.stage_bytes + g.other_smem_bytes == g.smem_bytes == make(2).smem_bytes
    top = make(g.max_stages)                          # the most stages the arithmetic says fit: built
    assert top.smem_bytes <= SM90["smem_per_block"]
    assert gemm_arithmetic(top, 512, 512, 512).smem_bytes == top.smem_bytes
    with pytest.raises(ValueError, match="shared memory"):
        make(g.max_stages + 1)                        # one more: refused by the configuration itself


def test_the_epilogue_staging_costs_a_stage_at_128x128_but_not_at_128x256():
    g = gemm_arithmetic(HopperGemm(), 4096, 4096, 4096)
    assert g.other_smem_bytes == 2 * 128 * 128 == 32768        # two 128 x (128 bytes) staging buffers of C
    assert g.max_stages == 4
    assert (SM90["smem_per_block"] // g.stage_bytes) == 4     # without staging still 4 at 128 x 256 x 64 ...
    g2 = gemm_arithmetic(HopperGemm(bn=128, stages=2), 4096, 4096, 4096)
    assert g2.max_stages == (SM90["smem_per_block"] - 32768) // g2.stage_bytes == 6   # ... at 128 x 128: 6, not 7
    assert SM90["smem_per_block"] // g2.stage_bytes == 7


def test_occupancy_from_the_measured_registers_is_what_the_driver_said():
    """gemm-H200.json holds, per rung, ptxas's registers and cuOccupancyMaxActiveBlocksPerMultiprocessor's blocks."""
    gemm = json.loads((RESULTS / "gemm-H200.json").read_text())["suites"]["gemm"]
    rungs = {r.name: r for r in G.ladder()}
    checked = 0
    for size, s in gemm["sizes"].items():
        for name, e in s["rungs"].items():
            r = rungs[name]
            if r.config is None or e.get("config") != repr(r.config):
                continue
            g = gemm_arithmetic(r.config, int(size), int(size), int(size), registers=e["registers_per_thread"])
            assert g.blocks_per_sm == e["blocks_per_sm"], (name, size)
            assert g.registers >= gemm_arithmetic(r.config, 64, 64, 64).registers   # the floor is below ptxas
            checked += 1
    assert checked >= 3


def test_hopper_registers_are_the_entry_budget_ptxas_gave():
    hop = json.loads((RESULTS / "hopper-gemm-H200.json").read_text())
    regs = {e["sizes"]["4096"]["registers"] for e in hop["results"] if "consumers=2" in e["config"]}
    g = gemm_arithmetic(HopperGemm(), 4096, 4096, 4096)
    assert regs == {g.registers} == {168}        # 65536 / 384 threads, in units of 8
    assert g.blocks_per_sm == 1 and g.blocks_by_registers == 1
    assert 128 * 40 + 2 * 128 * 232 <= SM90["registers"] < 128 * 40 + 2 * 128 * 240


def test_the_register_floor_is_the_accumulators_and_the_live_fragments():
    cfg = G.PIPELINED
    wm, wn = cfg.warps
    acc = cfg.bm * cfg.bn // cfg.threads
    kblock = (cfg.bm // wm + cfg.bn // wn) * 16 // 32 // 2          # one k-block of A and B, a lane's, in registers
    assert gemm_arithmetic(cfg, 64, 64, 64).registers == acc + 2 * kblock
    no = G.SmemGemm(bm=128, bn=256, bk=64, warps=(2, 4), stages=4, prefetch=False)
    assert gemm_arithmetic(no, 64, 64, 64).registers == acc + kblock


def test_grouping_narrows_the_first_wave():
    # 8192^2 at 128 x 256: 64 m-tiles, 32 n-tiles; 132 blocks in rows: 5 rows of A, all 32 columns of B;
    # in bands of 8 m-tiles: 8 rows, 17 columns
    rows = gemm_arithmetic(G.SmemGemm(bm=128, bn=256, bk=64, warps=(2, 4), stages=4), 8192, 8192, 8192)
    grouped = gemm_arithmetic(G.PIPELINED, 8192, 8192, 8192)
    assert (rows.wave_a_tiles, rows.wave_b_tiles) == (5, 32)
    assert (grouped.wave_a_tiles, grouped.wave_b_tiles) == (8, 17)
    assert grouped.wave_bytes_read == rows.wave_bytes_read == 132 * (128 + 256) * 8192 * 2
    assert grouped.wave_bytes_distinct == (8 * 128 + 17 * 256) * 8192 * 2
    assert grouped.l2_reuse > rows.l2_reuse and grouped.rows_l2_reuse == pytest.approx(rows.l2_reuse)


def test_a_cluster_reads_its_b_tile_once_and_persistent_blocks_share_the_tiles():
    one = gemm_arithmetic(HopperGemm(persistent=True), 4096, 4096, 4096)
    two = gemm_arithmetic(HopperGemm(persistent=True, cluster=2), 4096, 4096, 4096)
    assert one.tiles_per_block == (3, 4) and two.tiles_per_block == (3, 4)
    assert two.wave_bytes_read == 132 * 128 * 4096 * 2 + 66 * 256 * 4096 * 2
    assert one.wave_bytes_read == 132 * (128 + 256) * 4096 * 2
    assert gemm_arithmetic(HopperGemm(), 4096, 4096, 4096).tiles_per_block == (1, 1)


def test_it_moves_with_the_configuration():
    a = gemm_arithmetic(G.SmemGemm(), 4096, 4096, 4096)
    b = gemm_arithmetic(G.SmemGemm(bn=256, warps=(2, 4)), 4096, 4096, 4096)
    assert (a.tiles, b.tiles) == (1024, 512) and b.intensity > a.intensity
    assert "3.88 waves" in str(b) and math.isclose(b.waves, 512 / 132)
    assert gemm_arithmetic(G.SmemGemm(), 4096, 4096, 4096, sms=114).concurrent == 114 * a.blocks_per_sm


def test_inputs_are_checked_where_they_enter():
    with pytest.raises(TypeError, match="SmemGemm or gemm_hopper.HopperGemm"):
        gemm_arithmetic((128, 256, 64), 64, 64, 64)
    for bad in (0, -1, 4096.0, True):
        with pytest.raises(ValueError, match="positive int"):
            gemm_arithmetic(G.PIPELINED, bad, 64, 64)
    with pytest.raises(ValueError, match="1..255"):
        gemm_arithmetic(G.PIPELINED, 64, 64, 64, registers=300)
    with pytest.raises(ValueError, match="prefetch"):
        G.SmemGemm(stages=1, prefetch=True)


def test_a_hopper_register_epilogue_stages_nothing():
    tma = gemm_arithmetic(HopperGemm(), 4096, 4096, 4096)
    regs = gemm_arithmetic(HopperGemm(), 4096, 4096, 4096, epilogue="registers")
    assert tma.smem_bytes - regs.smem_bytes == 32768 and regs.other_smem_bytes == 0
    with pytest.raises(ValueError, match="epilogue"):
        gemm_arithmetic(HopperGemm(), 64, 64, 64, epilogue="smem")
