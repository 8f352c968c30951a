"""The tuner (workbench/_tune.py): the cpu space swept on 2 worker processes and on Ray actors (Ray started locally)
picks, among the configurations whose output is right, the one with the lowest score it recorded (or, with a
confirmation round, the lowest of the best few timed again together); a configuration
that computes garbage is reported and never chosen; the per-device cache round-trips; the CLI prints the table.
No timed assertions: the choice is checked against the measurements the sweep recorded.  The GPU tests (the hopper
space on every GPU of the host) run on the device machine."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import workbench as wb
from workbench import _tune as T

SHAPES = [(16, 16, 16), (24, 16, 8)]       # ragged against every tile below: the edges are predicated
CONFIGS = [{"threads": [4, 4], "micro": [1, 1]}, {"threads": [8, 8], "micro": [1, 1]},
           {"threads": [4, 4], "micro": [2, 2]}]
FAULT = {"threads": [8, 8], "micro": [1, 1], "fault": True}     # writes C = 0 without multiplying: fast and wrong


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_TUNE_CACHE", str(tmp_path / "cache"))


def _check_choice(res, shapes):
    """Every (shape, dtype) has a chosen row, and it is the correct row with the lowest recorded score."""
    for shape in shapes:
        rows = [r for r in res.rows if tuple(r["shape"]) == shape]
        assert rows
        good = [r for r in rows if r["correct"]]
        best = res.best[(shape, "float32")]
        assert best is min(good, key=lambda r: r["score"])
        assert best["score"] == best["seconds"]               # the cpu space scores by time
        assert res.best_config(shape, "float32") == best["config"]
        assert res.best_config("x".join(map(str, shape)), "float32") == best["config"]


def _run_config(conf, shape):
    """The chosen configuration run again here: its product is numpy's."""
    m, n, k = shape
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((n, k), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    T._launcher("cpu", conf, "float32", a, b, c)()
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-5, atol=1e-5)


def test_the_cpu_space_on_two_workers_picks_the_lowest_measured_time_and_is_right():
    res = wb.tune("cpu", SHAPES, ["float32"], configs=CONFIGS, workers=2, cache=False, progress=False, reps=3)
    assert len(res.rows) == len(SHAPES) * len(CONFIGS)
    assert all(r["correct"] and r["error"] is None for r in res.rows), [r["error"] for r in res.rows]
    assert res.info["workers_started"] == 2 and res.info["backend"] == "local processes"
    assert {r["pid"] for r in res.rows}.isdisjoint({os.getpid()})     # measured in the workers, not here
    assert all("not a GPU measurement" in r["measurement"] for r in res.rows)
    _check_choice(res, SHAPES)
    for shape in SHAPES:
        _run_config(res.best_config(shape, "float32"), shape)
    table = res.to_markdown()
    assert table.count("**chosen**") == len(SHAPES) and "not GPU measurements" in table


def test_a_confirmation_round_times_each_shapes_best_together_and_chooses_among_them(tmp_path):
    """confirm=2: each shape's two best of the sweep timed again by one worker, together; the choice is the lowest of
    that round (not of the sweep), and the table says which rows it timed."""
    res = wb.tune("cpu", SHAPES, configs=CONFIGS, workers=2, cache=False, progress=False, reps=2, confirm=2)
    sweep = [r for r in res.rows if r.get("round") != "confirm"]
    again = [r for r in res.rows if r.get("round") == "confirm"]
    assert len(sweep) == len(SHAPES) * len(CONFIGS) and len(again) == 2 * len(SHAPES) and res.info["confirm"] == 2
    for shape in SHAPES:
        mine = [r for r in again if tuple(r["shape"]) == shape]
        ranked = sorted((r for r in sweep if tuple(r["shape"]) == shape), key=lambda r: r["score"])
        assert [r["config"] for r in mine] == [r["config"] for r in ranked[:2]]      # the sweep's best two, in order
        assert len({r["pid"] for r in mine}) == 1 and all(r["correct"] and len(r["round_scores"]) == 3 for r in mine)
        assert res.best[(shape, "float32")] is min(mine, key=lambda r: r["score"])
        _run_config(res.best_config(shape, "float32"), shape)
    assert "confirmation round, sweep's #1" in res.to_markdown() and "timed again together" in res.info["choice"]
    with pytest.raises(ValueError, match="expected confirm a count >= 0"):
        wb.tune("cpu", SHAPES, configs=CONFIGS, confirm=-1)
    # the confirmation rows survive a save and load, and still decide
    res.save(tmp_path / "sweep.json")
    back = wb.load_tune(tmp_path / "sweep.json")
    assert {k: r["config"] for k, r in back.best.items()} == {k: r["config"] for k, r in res.best.items()}


def test_a_wrong_configuration_is_reported_and_never_chosen():
    res = wb.tune("cpu", SHAPES[:1], configs=[FAULT] + CONFIGS[:1], workers=2, cache=False, progress=False, reps=2)
    bad = next(r for r in res.rows if r["config"].get("fault"))
    assert not bad["correct"] and bad["error"].startswith("wrong result") and "seconds" not in bad
    assert res.best_config(SHAPES[0], "float32") == CONFIGS[0]
    assert "wrong result" in res.to_markdown()
    alone = wb.tune("cpu", SHAPES[:1], configs=[FAULT], workers=1, cache=True, progress=False)
    assert alone.best == {} and alone.best_config(SHAPES[0], "float32") is None
    assert not os.path.exists(T._cache_file(T._host_device("cpu")))      # nothing right: nothing cached


def test_the_cache_round_trips_per_device_and_space():
    first = wb.tune("cpu", SHAPES[:1], configs=CONFIGS, workers=2, progress=False, reps=2)
    assert first.info["measured"] == len(CONFIGS) and first.info["cached"] == 0
    path = T._cache_file(T._host_device("cpu"))
    assert path.startswith(os.environ["WORKBENCH_TUNE_CACHE"]) and os.path.exists(path)
    chosen = first.best_config(SHAPES[0], "float32")
    assert T.lookup("cpu", SHAPES[0], "float32", configs=CONFIGS)["config"] == chosen
    assert T.lookup("cpu", "16x16x16", "float32", configs=CONFIGS[:2]) is None     # another space: another key
    again = wb.tune("cpu", SHAPES[:1], configs=CONFIGS, workers=2, progress=False)
    assert again.info["measured"] == 0 and again.info["cached"] == 1
    assert again.best_config(SHAPES[0], "float32") == chosen and again.rows[0]["cached"]
    fresh = wb.tune("cpu", SHAPES[:1], configs=CONFIGS, workers=2, progress=False, cache="refresh", reps=2)
    assert fresh.info["measured"] == len(CONFIGS)
    with open(path) as f:
        data = json.load(f)
    assert data["version"] == T.CACHE_VERSION and len(data["choices"]) == 1
    # a choice for another C type is kept apart (the cpu space's C is fp32 either way: the key is what differs)
    typed = wb.tune("cpu", SHAPES[:1], configs=CONFIGS, workers=2, progress=False, reps=2, c="float32")
    assert typed.info["measured"] == len(CONFIGS) and typed.info["c"] == "float32"
    assert all(r["c"] == "float32" for r in typed.rows)
    assert T.lookup("cpu", SHAPES[0], "float32", configs=CONFIGS, c="float32")["config"] == \
        typed.best_config(SHAPES[0], "float32")
    with open(path) as f:
        assert len(json.load(f)["choices"]) == 2


def test_a_saved_sweep_loads_back_with_its_choices_made_again(tmp_path):
    res = wb.tune("cpu", SHAPES, configs=CONFIGS, workers=2, progress=False, reps=2)
    res.save(tmp_path / "sweep.json")
    back = wb.load_tune(tmp_path / "sweep.json")
    assert back.kind == "cpu" and len(back.rows) == len(res.rows) and back.to_markdown() == res.to_markdown()
    assert {k: r["config"] for k, r in back.best.items()} == {k: r["config"] for k, r in res.best.items()}
    one = back.where(SHAPES[0], "float32")
    assert len(one.rows) == len(CONFIGS) and list(one.best) == [(T._parse_shape(SHAPES[0]), "float32")]
    # the committed 2 x H200 sweep: the choice rebuilt from its rows is the one the file records
    h = wb.load_tune(os.path.join(os.path.dirname(__file__), "..", "benchmarks", "results",
                                  "tune-hopper-2xH200-69configs.json"))
    with open(os.path.join(os.path.dirname(__file__), "..", "benchmarks", "results",
                           "tune-hopper-2xH200-69configs.json")) as f:
        recorded = {(tuple(b["shape"]), b["dtype"]): b["config"] for b in json.load(f)["best"]}
    assert {k: r["config"] for k, r in h.best.items()} == recorded and len(recorded) == 8
    (tmp_path / "bad.json").write_text(json.dumps({"kind": "gpu", "rows": []}))
    with pytest.raises(ValueError, match="expected a sweep saved by TuneResult.save"):
        wb.load_tune(tmp_path / "bad.json")


def test_the_same_sweep_through_ray_actors():
    ray = pytest.importorskip("ray", reason="Ray is optional (pip install 'layout-workbench[tune]')")
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        res = wb.tune("cpu", SHAPES, configs=[FAULT] + CONFIGS, ray_address="local", workers=2, cache=False,
                      progress=False, reps=2)
    finally:
        ray.shutdown()
    assert res.info["backend"] == "ray"
    assert all(r["worker"].startswith("ray actor") for r in res.rows)
    assert [r["correct"] for r in res.rows] == [not r["config"].get("fault") for r in res.rows]
    _check_choice(res, SHAPES)


def test_the_cli_prints_the_table_and_writes_the_sweep(tmp_path):
    out = tmp_path / "sweep.json"
    cmd = [sys.executable, "-m", "workbench", "tune", "--kind", "cpu", "--shapes", "16x16x16", "--workers", "2",
           "--configs", json.dumps([FAULT] + CONFIGS[:2]), "--reps", "2", "--no-progress", "--out", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "| shape | dtype | configuration |" in p.stdout and "**chosen**" in p.stdout
    assert "best 16x16x16 float32:" in p.stdout and "wrong result" in p.stdout
    data = json.loads(out.read_text())
    assert len(data["rows"]) == 3 and data["best"][0]["config"] in CONFIGS[:2]
    p = subprocess.run(cmd[:-2] + ["--confirm", "-1"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "Expected --confirm to be at least 0" in p.stderr
    p = subprocess.run(cmd[:-2] + ["--c", "float16"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "invalid choice: 'float16'" in p.stderr
    p = subprocess.run(cmd[:8] + ["--dtypes", "float16"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "takes dtypes ['float32']" in p.stderr


def test_bad_arguments_are_refused_clearly():
    with pytest.raises(ValueError, match="expected kind among"):
        wb.tune("ampere", SHAPES)
    with pytest.raises(ValueError, match="expected a shape"):
        wb.tune("cpu", ["16x16"])
    with pytest.raises(ValueError, match="a cpu configuration is"):
        T._config_object("cpu", {"threads": [0, 4], "micro": [1, 1]}, "float32")
    with pytest.raises(ValueError, match=r"expected c None \(the 'hopper' space's own C, the inputs' type\) or one "
                                         r"of \['float32'\], but got 'float16'"):
        wb.tune("hopper", SHAPES, c="float16")
    with pytest.raises(ValueError, match="expected c None"):
        T.lookup("cpu", SHAPES[0], "float32", c="fp32")
    assert len(T.default_configs("hopper")) > 10 and len(T.default_configs("smem")) > 10
    if not T._visible_gpus():
        with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
            wb.tune("hopper", [(256, 256, 256)], cache=False, progress=False)


def test_plot_draws_one_bar_per_row():
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    rows = [dict(kind="cpu", shape=[16, 16, 16], dtype="float32", config=c, correct=True, error=None,
                 seconds=s, reference_seconds=1e-5, ratio_to_reference=1e-5 / s, score=s)
            for c, s in zip(CONFIGS, (3e-3, 2e-3, 4e-3), strict=True)]
    res = T.TuneResult("cpu", rows, {})
    assert res.best_config((16, 16, 16), "float32") == CONFIGS[1]
    assert len(res.plot().axes[0].patches) == 3


# -- on the device machine ------------------------------------------------------------------------------------------
def _gpus():
    return len(T._visible_gpus())


@pytest.mark.gpu
@pytest.mark.skipif(_gpus() < 1, reason="needs a CUDA GPU")
def test_the_hopper_space_on_every_gpu_of_the_host():
    """Two configurations a GPU at a small shape: every row right, and with 2 or more GPUs the sweep spreads."""
    from workbench.dsl.runtime.cupy import current_arch
    if current_arch() != "sm_90":
        pytest.skip(f"needs an SM90 GPU (H100/H200), not {current_arch()}")
    configs = [dict(bm=128, bn=128, bk=64, stages=s, group=g) for s in (3, 4) for g in (8, 16)]
    res = wb.tune("hopper", ["1024x1024x512"], ["float16", "bfloat16"], configs=configs, cache=False,
                  progress=False, reps=10)
    assert all(r["correct"] for r in res.rows), [r["error"] for r in res.rows]
    assert res.info["workers_started"] == _gpus() and res.info["confirm"] == 3      # the GPU default
    if _gpus() >= 2:
        assert len({r["worker"] for r in res.rows}) >= 2, [r["worker"] for r in res.rows]
    for d in ("float16", "bfloat16"):
        again = [r for r in res.rows if r["dtype"] == d and r.get("round") == "confirm"]
        assert len(again) == 3 and len({r["worker"] for r in again}) == 1      # one GPU times the three together
        assert res.best[((1024, 1024, 512), d)] is min(again, key=lambda r: r["score"])
    # C in fp32, against cuBLAS writing fp32: checked within fp32 sums' reordering, not a 16-bit rounding
    res = wb.tune("hopper", ["1000x1000x504"], ["bfloat16"], configs=configs[:2], cache=False, progress=False,
                  reps=10, c="float32")
    assert all(r["correct"] and r["c"] == "float32" and r["max_rel_error"] < 1e-4 for r in res.rows), res.rows
    assert "out_dtype=torch.float32" in res.info["timing"] and "C float32" in res.to_markdown()
