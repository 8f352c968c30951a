"""The bytes-in-flight suite (workbench/bench/inflight.py): its kernel copies exactly the whole rounds of tiles
(CPU executor), compiles to 128-bit loads all issued before the stores (NVRTC), and the sweep covers small to large
bytes in flight per SM within the occupancy limit.  The timing itself runs on a GPU only."""

import numpy as np
import pytest

import workbench as wb
from workbench import bench
from workbench.bench import inflight
from workbench.dsl import compile_ptx
from workbench.dsl.runtime import cupy as backend_cupy
from workbench.kernels import examples as E


def test_the_suite_is_discovered():
    assert "inflight" in bench.suites()


@pytest.mark.parametrize("threads,chunks,grid", [(32, 1, 3), (64, 2, 5), (32, 4, 2)])
def test_the_kernel_copies_whole_rounds_and_leaves_the_rest(threads, chunks, grid):
    tv = E.copy_tv(threads, chunks)
    tile = wb.size(tv)
    n = tile * (2 * grid + 1)                       # two whole rounds and one tile left over
    a = np.arange(n, dtype=np.float32)
    d = np.full(n, -1.0, dtype=np.float32)
    s, t = (wb.from_dlpack(x, assumed_align=16).mark_layout_dynamic() for x in (a, d))
    inflight.copy_persistent[(grid, 1, 1), (threads, 1, 1)](s, t, tv)
    copied = 2 * grid * tile
    assert np.array_equal(d[:copied], a[:copied])
    assert np.all(d[copied:] == -1.0)


def test_the_kernel_has_every_load_in_flight_before_a_store():
    a = np.zeros(1 << 12, dtype=np.float32)
    s, t = (wb.from_dlpack(x, assumed_align=16).mark_layout_dynamic() for x in (a, a.copy()))
    ptx = compile_ptx(wb.show_code(inflight.copy_persistent, s, t, E.copy_tv(128, 4)))
    lines = [x for x in ptx[ptx.index(".entry"):].splitlines() if "ld.global" in x or "st.global" in x]
    assert lines and all(".v4" in x for x in lines)
    # NVRTC may unroll the tile loop, but src and dst may alias, so no load moves above an earlier store:
    # runs of exactly 4 loads (a thread's chunks, in flight together) then their 4 stores
    seq = "".join("L" if "ld.global" in x else "S" for x in lines)
    assert seq == "LLLLSSSS" * (len(seq) // 8), seq


def test_the_sweep_spans_small_to_large_and_respects_occupancy():
    pts = inflight.points(132, lambda th, c: 2048 // th if c < 8 else 4)
    sizes = [p["bytes_in_flight_per_sm"] for p in pts]
    assert sizes == sorted(sizes) and sizes[0] <= 1024 and sizes[-1] >= 64 * 1024
    for p in pts:
        assert p["bytes_in_flight_per_sm"] == p["blocks_per_sm"] * p["threads"] * p["chunks"] * 16
        assert p["grid"] == 132 * p["blocks_per_sm"]
        assert p["blocks_per_sm"] <= (2048 // p["threads"] if p["chunks"] < 8 else 4)


@pytest.mark.skipif(backend_cupy.gpu_available(), reason="a GPU is present: the suite measures")
def test_without_a_gpu_the_suite_says_so():
    assert inflight.run(quick=True) == {"gpu": False}
