"""The overhead lab (workbench/bench/lab.py) and the CLI (python -m workbench lab | bench), with few calls:
structure, not speed."""

import json

import pytest

from workbench.__main__ import main
from workbench.bench import lab


def test_help_names_every_suite(capsys):
    with pytest.raises(SystemExit):
        main(["lab", "--help"])
    out = capsys.readouterr().out
    assert all(s in out for s in lab.SUITES)


def test_unknown_suite_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["lab", "nonsense"])
    assert "unknown lab suite" in capsys.readouterr().err


def test_host_suite_measures_every_path_for_each_count_and_draws(tmp_path):
    pytest.importorskip("torch")
    host = lab.run_host(rounds=2, calls=20, warmup=2, counts=(1, 2), progress=False)
    want = {"pointer bypass", "wb tensors (cached)", "numpy straight in", "torch straight in",
            "from_dlpack+mark_layout_dynamic each call"}
    try:
        import tvm_ffi  # noqa: F401
        want.add(lab.TVM_FFI_NOP)      # the torch slope's peer, in the same run
    except ImportError:
        pass
    assert set(host["paths"]) == want
    for row in host["paths"].values():
        for n in ("1", "2"):
            r = row[n]
            assert r["q1_us"] <= r["median_us"] <= r["q3_us"] and len(r["samples_us"]) == 2
    result = {"lab": "t", "mode": "cpu (host-side only: no GPU)", "machine": {"python": "3"}, "versions": {"numpy": "x"},
              "rounds": 2, "unit": "us", "suites": {"host": host}}
    result["ratios"] = lab.ratios(result)
    result["targets"] = lab.TARGETS
    text = lab.table(result)
    assert "pointer bypass" in text and "tensors 2" in text and "wb_cached_minus_bypass_per_tensor_us[2]" in text
    lab.save(result, str(tmp_path / "r.json"), str(tmp_path / "r.png"))
    assert json.loads((tmp_path / "r.json").read_text())["suites"]["host"]["counts"] == [1, 2]
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_path_that_fails_is_reported_not_fatal():
    def boom():
        raise RuntimeError("no device")
    raw = lab._measure({("ok", 1): lambda: None, ("bad", 1): boom}, 2, 5, 1, lab._Progress(1, "t", False))
    assert "median_us" in raw[("ok", 1)] and raw[("bad", 1)] == {"error": "RuntimeError: no device"}


@pytest.mark.parametrize("argv, msg", [
    (["--out", "/nonexistent-folder/r.json"], "folder to exist"),
    (["--out", "r.txt"], "to end in .json"),
    (["--chart", "/nonexistent-folder/r.png"], "folder to exist"),
    (["--chart", "r.json2"], "--chart to end in"),
    (["--out", "{tmp}"], "is a folder"),
    (["--out", "{tmp}/same.json", "--chart", "{tmp}/same.json"], "to end in|two files"),
    (["--out", "{tmp}/"], "to name a file"),
])
def test_the_lab_cli_checks_its_outputs_before_measuring(argv, msg, tmp_path, monkeypatch, capsys):
    # issue 20: a bad --out/--chart was found after minutes of measuring; now before anything runs
    ran = []
    monkeypatch.setattr(lab, "run", lambda *a, **k: ran.append(1))
    with pytest.raises(SystemExit) as e:
        main(["lab", "host", "--no-progress", *[a.replace("{tmp}", str(tmp_path)) for a in argv]])
    assert e.value.code == 2 and ran == []
    assert __import__("re").search(msg, capsys.readouterr().err)


def test_the_bench_cli_checks_out_before_running(monkeypatch, capsys):
    from workbench import bench
    monkeypatch.setattr(bench, "run_suite", lambda *a, **k: pytest.fail("ran before --out was checked"))
    with pytest.raises(SystemExit) as e:
        main(["bench", "--out", "/nonexistent-folder/b.json"])
    assert e.value.code == 2 and "folder to exist" in capsys.readouterr().err


def test_bench_help_lists_every_suite_with_what_it_measures(capsys):
    from workbench import bench
    with pytest.raises(SystemExit) as e:
        main(["bench", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert e.value.code == 0 and {"gemm", "launch", "algebra"} <= set(bench.suites())
    for name in bench.suites():
        assert f"{name}: {bench.describe(name)}" in out, name
    assert "gemm: The GEMM ladder against cuBLAS" in out and "python -m workbench lab" in out


def test_the_lab_is_one_command_and_bench_lab_says_where_it_is(capsys):
    from workbench import bench
    assert "lab" not in bench.suites()
    with pytest.raises(SystemExit) as e:
        main(["bench", "lab"])
    assert e.value.code == 2 and "'bench lab' is not a bench suite: run python -m workbench lab" in capsys.readouterr().err
    with pytest.raises(ValueError, match="a command of its own, python -m workbench lab"):
        bench.run_suite("lab")


def test_a_gpu_suite_without_a_gpu_says_it_skipped(capsys):
    from workbench.dsl.runtime import cupy as backend_cupy
    if backend_cupy.gpu_available():
        pytest.skip("the no-GPU path")
    assert main(["bench", "gemm", "ladder", "--quick"]) == 0
    cap = capsys.readouterr()
    res = json.loads(cap.out)["suites"]
    for name in ("gemm", "ladder"):   # gemm words it itself; ladder's bare {"gpu": False} gets the sentence
        assert res[name]["gpu"] is False and res[name]["skipped"].startswith("skipped: no CUDA GPU"), res[name]
        assert f"{name}: skipped: no CUDA GPU" in cap.err


def _suite(rows):
    return {"counts": [1, 2, 4, 8], "paths": {p: {str(n): {"median_us": v} for n, v in zip((1, 2, 4, 8), vs)}
                                              for p, vs in rows.items()}}


def test_slopes_ratios_and_verdicts_read_as_targets_met_or_not():
    # issue 31, part 5: one run's medians give the slopes per tensor and the ratios, each judged against TARGETS
    host = _suite({"torch straight in": [1.1, 1.2, 1.4, 1.8], lab.TVM_FFI_NOP: [0.2, 0.4, 0.8, 1.6],
                   "pointer bypass": [1.0, 1.0, 1.0, 1.0]})
    conv = {"paths": {"wb.from_dlpack": {"torch": {"median_us": 0.25}}, "tvm_ffi.from_dlpack": {"torch": {"median_us": 0.2}},
                      "wb.from_dlpack+mark_layout_dynamic": {"torch": {"median_us": 0.3}},
                      "cute.from_dlpack+mark_layout_dynamic": {"torch": {"median_us": 6.0}}}}
    r = lab.ratios({"suites": {"host": host, "convert": conv}})
    assert r["host: slope_us_per_tensor[torch straight in]"] == 0.1
    assert r["host: slope_us_per_tensor[" + lab.TVM_FFI_NOP + "]"] == 0.2
    assert r["host: torch_straight_in_slope_over_tvm_ffi_slope"] == 0.5
    assert r["mark_layout_dynamic_over_from_dlpack[torch]"] == 1.2 and r["cute_mark_over_wb_mark[torch]"] == 20.0
    v = lab.verdicts(r)
    assert v["host: torch_straight_in_slope_over_tvm_ffi_slope"] == {"value": 0.5, "max": 1.0, "met": True}
    assert v["wb_from_dlpack_over_tvm_ffi[torch]"] == {"value": 1.25, "max": 1.0, "met": False}
    assert v["cute_mark_over_wb_mark[torch]"]["met"] and v["mark_layout_dynamic_over_from_dlpack[torch]"]["met"]
    assert "host: slope_us_per_tensor[torch straight in]" not in v      # a slope alone is no target
    text = lab.table({"lab": "t", "mode": "cpu", "machine": {}, "versions": {}, "rounds": 1, "unit": "us",
                      "suites": {}, "ratios": r, "targets": lab.TARGETS, "targets_met": v})
    assert "NOT MET" in text and "met" in text


def test_a_slope_needs_every_count():
    s = _suite({"a": [1.0, 2.0, 3.0, 4.0]})
    del s["paths"]["a"]["8"]
    assert lab.slope(s, "a") is None
