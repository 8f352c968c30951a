"""The GEMM ladder benchmark (workbench/bench/gemm.py): without a GPU it says in words that it skipped; the GPU's
clocks are read with nvidia-smi where there is one (a fake nvidia-smi here) and reported unavailable otherwise; the
spread of the repeated ratios.  On the device machine: one rung, interleaved with cuBLAS, repeated, stated."""

import os
import stat

import pytest

from workbench.bench import gemm
from workbench.kernels.gemm_hopper import HopperGemm
from workbench.dsl.runtime import cupy as backend_cupy


@pytest.mark.skipif(backend_cupy.gpu_available(), reason="the no-GPU path")
def test_without_a_gpu_the_suite_says_it_skipped():
    out = gemm.run(quick=True)
    assert out["gpu"] is False and out["skipped"].startswith("skipped: no CUDA GPU")


def test_the_clocks_come_from_nvidia_smi_or_are_said_unavailable(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "unavailable" in gemm.gpu_clocks()
    smi = tmp_path / "nvidia-smi"
    # an old driver: the first query (clocks_event_reasons) fails, the one without it answers
    smi.write_text('#!/bin/sh\ncase "$*" in *clocks_event_reasons*) echo "Field not valid"; exit 2;; esac\n'
                   'echo "NVIDIA H100 80GB HBM3, 1980, 2619, 1980, 2619, 41, 120.5"\n')
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    got = gemm.gpu_clocks()
    assert got["name"] == "NVIDIA H100 80GB HBM3" and got["clocks.sm"] == "1980" and got["power.draw"] == "120.5"
    assert "clocks_event_reasons.active" not in got and os.environ["CUDA_VISIBLE_DEVICES"] == "3,1"


def test_the_spread_of_the_ratios():
    assert gemm._spread([0.9, 0.95, 0.97, 1.0, 0.96]) == {"min": 0.9, "q1": 0.95, "median": 0.96, "q3": 0.97,
                                                         "max": 1.0}
    assert gemm._spread([0.9])["q3"] == 0.9


@pytest.mark.gpu
@pytest.mark.skipif(not backend_cupy.gpu_available(), reason="needs a CUDA GPU")
def test_one_rung_interleaved_with_cublas_and_repeated():
    out = gemm.run(quick=True, rungs=["pipelined"], repeats=2)
    assert "normal(0,1)" in out["inputs"] and "alternating with cuBLAS" in out["timing"] and out["throttling"]
    size = out["sizes"]["4096"]
    assert "clocks_before" in size and "clocks_after" in size
    r = size["rungs"]["pipelined"]
    assert len(r["ratios"]) == 2 and r["ratio_spread"]["min"] <= r["ratio_to_cublas"] <= r["ratio_spread"]["max"]
    assert out["irregular"]["pipelined"]["exact"] and r["max_rel_error"] < 1e-2


@pytest.mark.skipif(backend_cupy.gpu_available(), reason="the no-GPU path")
def test_without_a_gpu_the_fp8_suite_says_it_skipped():
    out = gemm.run_fp8(quick=True)
    assert out["gpu"] is False and out["skipped"].startswith("skipped: no CUDA GPU")


def test_the_fp8_result_file_is_named_after_the_gpu_model():
    assert gemm._gpu_short_name("NVIDIA H100 80GB HBM3") == "H100"
    assert gemm._gpu_short_name("NVIDIA H200") == "H200"
    assert gemm._gpu_short_name("Some GPU 9000") == "SomeGPU9000"
    assert set(gemm.FP8_SHAPES) >= {"4096^3", "8192^3", "8192x7168x2048"}


@pytest.mark.gpu
@pytest.mark.skipif(not backend_cupy.gpu_available() or backend_cupy.current_arch() != "sm_90",
                    reason="needs an SM90 GPU")
def test_the_fp8_suite_interleaves_with_scaled_mm_and_repeats():
    out = gemm.run_fp8(quick=True, repeats=2, shapes=["4096^3"], configs=gemm.FP8_CONFIGS[:1])
    assert "e4m3" in out["inputs"] and "alternating with torch._scaled_mm" in out["timing"] and out["throttling"]
    s = out["shapes"]["4096^3"]
    assert "clocks_before" in s and "clocks_after" in s
    assert len(s["configs"]) == 1 + len(gemm.FP8_BLOCK_CONFIGS)      # + the block-scaled ones
    for name, r in s["configs"].items():
        if r["scaling"] == "block" and out["scaled_mm_blockwise"] is True:    # like for like: cuBLASLt's block scales
            assert out["irregular"][name]["exact_vs_scaled_mm_blockwise_at_k"] == [512, True]
        if r["scaling"] == "block":                 # ragged M, N and K: equal to the exact product
            assert out["irregular"][name]["exact"]
            sp = r["ratio_blockwise_spread"]
            assert len(r["ratios_blockwise"]) == 2 and sp["min"] <= r["ratio_to_scaled_mm_blockwise"] <= sp["max"]
            assert r["max_rel_diff_vs_scaled_mm_blockwise"] < 2e-2
        assert len(r["ratios"]) == 2 and r["ratio_spread"]["min"] <= r["ratio_to_scaled_mm"] <= r["ratio_spread"]["max"]
        if r["scaling"] == "tensor":
            assert out["irregular"][name]["exact_vs_scaled_mm"]
            # within the tensor cores' fp8 accumulation bound at K = 4096 (2^-6, tests/test_hopper.py), + bf16 rounding
            assert r["max_rel_error_vs_fp32"] < 2e-2 and r["max_rel_diff_vs_scaled_mm"] < 2e-2
    assert s["best"]["config"] in s["configs"]


def test_the_schedule_suite_checks_its_shapes_steps_and_dtypes_before_any_gpu_work():
    assert gemm._schedule_shape("8000^3") == (8000, 8000, 8000) and gemm._schedule_shape("256x4096x512") == (256, 4096, 512)
    for bad in ("4096x4096", "0x4x4", "ax4x4", "4096^4"):
        with pytest.raises(ValueError, match="run_schedules: expected a shape named in SCHEDULE_SHAPES"):
            gemm.run_schedules(shapes=[bad])
    with pytest.raises(ValueError, match="bm must be 64 x consumers"):      # HopperGemm's own check, on the CPU
        gemm.run_schedules(shapes=["4096^3"], steps=[("two consumers of 64 rows", dict(bm=64, persistent=True))])
    with pytest.raises(ValueError, match="expected dtypes 'float16' or 'bfloat16'"):
        gemm.run_schedules(shapes=["4096^3"], dtypes=("float32",))
    with pytest.raises(ValueError, match=r"expected c None \(C in the inputs' type\) or 'float32', but got 'fp32'"):
        gemm.run_schedules(shapes=["4096^3"], c="fp32")
    for _, kw in gemm.SCHEDULE_STEPS_C32:     # each fits shared memory with a 32-bit C's staging
        HopperGemm(**kw)


@pytest.mark.gpu
@pytest.mark.skipif(not backend_cupy.gpu_available() or backend_cupy.current_arch() != "sm_90",
                    reason="needs an SM90 GPU")
def test_the_schedule_suite_times_given_steps_at_given_shapes_beside_cublas():
    steps = [("few rows", dict(bm=64, bn=128, bk=64, consumers=1, stages=8, group=8, persistent=True))]
    out = gemm.run_schedules(repeats=2, shapes=["256x1024x512"], dtypes=("bfloat16",), steps=steps)
    assert "hold kernel" in out["timing"] and out["steps"] == ["few rows"]
    r = out["results"]["256x1024x512 bfloat16"]
    s = r["steps"]["few rows"]
    assert r["mnk"] == [256, 1024, 512] and len(s["ratios"]) == 2 and s["exact_at_1000x1000x504"]
    assert s["cublas_tflops_alongside"] > 0 and r["best"]["step"] == "few rows" and s["max_rel_error_vs_fp32"] < 1e-2
    # C in fp32, beside cuBLAS writing fp32 too: exact, and the error only the accumulation order's
    out = gemm.run_schedules(repeats=2, shapes=["256x1024x512"], dtypes=("float16",), steps=steps, c="float32")
    r = out["results"]["256x1024x512 float16, C float32"]
    s = r["steps"]["few rows"]
    assert out["c"] == "float32" and r["c"] == "float32" and "out_dtype=torch.float32" in out["inputs"]
    assert s["exact_at_1000x1000x504"] and s["max_rel_error_vs_fp32"] < 1e-5 and len(s["ratios"]) == 2
