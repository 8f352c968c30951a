"""Notebook 12's exercises: the design answers are judged by running them through the TMEM allocator model, the rung's
accumulator and wb.make_tmem_copy (only real objects; a wrong one is told 'not it', never a direction); the buggy
kernels are refused by the CPU executor for the reason the lesson gives and run exactly once the labelled line is
fixed; no answer is printed in the notebook before its question."""

import inspect
import json
import pathlib

import pytest

import workbench as wb
from widgets.exercises import _load_all, _reference, check, n12

_load_all()
NB = pathlib.Path(__file__).resolve().parents[1] / "notebooks" / "12_blackwell.ipynb"


def test_12_1_the_allocation_is_run_through_the_allocator_model():
    assert check("12.1", 512).right
    for wrong in (256, 128, 32):
        v = check("12.1", wrong)
        assert not v.right and "large" not in v and "small" not in v
    assert check("12.1", 256) == check("12.1", 128)                   # the same words whichever way it misses
    for bad in (384, 1024, 512.0, True, "512", "runs as asked", None, ("TMEM columns", 512)):
        assert not check("12.1", bad).right                           # a description of the reference is no answer
    assert "power of 2" in check("12.1", 384)


def test_12_2_the_copy_atom_is_judged_by_the_registers_each_thread_gets():
    assert check("12.2", wb.copy_atom("SM100_TMEM_LOAD_32dp32b16x", wb.Float32)).right
    for wrong in ("SM100_TMEM_LOAD_32dp32b8x", "SM100_TMEM_LOAD_32dp32b4x", "SM100_TMEM_LOAD_16dp256b1x",
                  "SM100_TMEM_STORE_32dp32b16x", "SM100_TMEM_LOAD_16dp32b16x"):
        v = check("12.2", wb.copy_atom(wrong, wb.Float32))
        assert not v.right and "large" not in v and "small" not in v, wrong
    for bad in ("SM100_TMEM_LOAD_32dp32b16x", "runs as asked", ("copy atom", "SM100_TMEM_LOAD_32dp32b16x"), wb.copy_atom("SM100_TMEM_LOAD_32dp32b16x", wb.Float16)):
        assert not check("12.2", bad).right


@pytest.mark.parametrize("key,kernel,message", [("12.3", n12.read_early, "before tcgen05.mma .* wrote it"),
                                                ("12.4", n12.own_rows, "warp 1 reaches TMEM lanes 64..95")])
def test_the_buggy_kernels_are_refused_for_the_lessons_reason_and_the_fix_runs(key, kernel, message):
    a, b, _ = n12.operands()
    import numpy as np
    with pytest.raises(wb.KernelRuntimeError, match=message):
        kernel[1, 128](a, b, np.zeros((128, 64), np.float32))
    assert _reference(key) == "d"                  # the solver ran the kernel as written and fixed at (d)
    assert check(key, "(d)").right and check(key, " D ").right
    for wrong in ("a", "b", "c", "e", 4):
        assert not check(key, wrong).right
    assert "# (d)" in inspect.getsource(kernel)


def test_no_answer_is_printed_before_its_question():
    cells = json.loads(NB.read_text())["cells"]
    for key in ("12.1", "12.2", "12.3", "12.4"):
        at = next(i for i, c in enumerate(cells) if c["cell_type"] == "code" and f'check("{key}"' in "".join(c["source"]))
        src = "".join("".join(c["source"]) for c in cells[:at] if c["cell_type"] == "code")
        assert "32dp32b16x" not in src or key != "12.2"
        if key == "12.1":
            assert "bn=192" not in src
