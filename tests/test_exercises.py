"""The teaching series' exercises: every reference answer is judged right, a wrong answer is judged
wrong with a message that names the exercise, and every exercise a notebook checks is registered."""

import json
import pathlib
import re

import pytest

import workbench as wb
from widgets.exercises import EXERCISES, _load_all, _reference, check

_load_all()
NOTEBOOKS = sorted(pathlib.Path(__file__).parent.parent.glob("notebooks/*.ipynb"))


def _wrong(want):
    """An answer that must be judged wrong, of the same kind as ``want``."""
    if isinstance(want, type) and issubclass(want, BaseException):
        return KeyError if want is not KeyError else ValueError
    if isinstance(want, wb.Layout):
        size = wb.size(want)
        return wb.make_layout(size + 1) if wb.coalesce(want) == wb.make_layout(size) else wb.make_layout(size)
    if isinstance(want, bool):
        return not want
    if isinstance(want, int):
        return want + 1
    if isinstance(want, tuple):
        return want[:-1] if want else (0,)
    if isinstance(want, str):
        return want + "?"
    raise AssertionError(f"no wrong answer for {want!r}")


def test_there_are_exercises_in_every_lesson_of_the_series():
    assert len(EXERCISES) >= 20
    lessons = {k.split(".")[0] for k in EXERCISES}
    assert lessons >= {f"{i:02d}" for i in range(1, 10)}, lessons


def test_object_exercises_are_the_design_and_fix_tasks():
    # answered with an object the checker builds or runs (a TiledMMA, a configuration, a fixed kernel, an allocation
    # run through the allocator model): their references are the real objects
    assert {k for k, e in EXERCISES.items() if e.objects} >= {"10.3", "10.5", "10.7", "11.4", "11.5", "11.6", "12.1",
                                                               "12.2"}


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_the_reference_is_right_and_a_wrong_answer_is_not(key, capsys):
    want = _reference(key)
    if EXERCISES[key].objects:
        assert check(key, want).right, key                  # the real object passes ...
        desc = EXERCISES[key].accept(want)                  # ... and no description of it does
        for answer in ((desc if type(desc) is tuple else (key, str(desc))), str(want), (key,), ()):
            v = check(key, answer)
            assert not v.right and v.startswith(f"{key}: "), (key, answer, v)
        return
    assert check(key, want).right
    v = check(key, _wrong(want))
    assert not v.right and v.startswith(f"{key}: ")
    assert not check(key, None).right
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{key}: right." or out[0].startswith(f"{key}: right")


def test_layouts_are_judged_as_functions():
    from widgets.exercises import exercise

    exercise("_t.1", "q", "h")(lambda: wb.make_layout((2, 4), stride=(4, 1)))
    try:
        assert check("_t.1", "(2,4):(4,1)").right
        v = check("_t.1", wb.make_layout(((2, 1), (2, 2)), stride=((4, 0), (1, 2))))
        assert v.right and "CuTe writes it (2,4):(4,1)" in v
        assert "index 1 maps to offset 1" in check("_t.1", "(2,4):(1,2)")
    finally:
        del EXERCISES["_t.1"]


def test_every_checked_exercise_exists():
    # a notebook's check("NN.k", ...) must name a registered exercise of its own lesson
    for nb in NOTEBOOKS:
        cells = json.loads(nb.read_text())["cells"]
        keys = re.findall(r'check\("(\d\d\.\d+)"', "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code"))
        for k in keys:
            assert k in EXERCISES, (nb.name, k)
            assert k.startswith(nb.name[:2]), (nb.name, k)


def test_a_notebook_cell_ending_in_check_shows_the_verdict_once(capsys):
    from IPython.core.formatters import DisplayFormatter

    key = sorted(EXERCISES)[0]
    v = check(key, None)
    assert capsys.readouterr().out == f"{v}\n"          # printed once ...
    assert DisplayFormatter().format(v) == ({}, {})     # ... and not displayed again as the cell's result


def test_each_lesson_asks_for_design_inverse_and_bug_finding():
    # issue 22: a design task and an inverse question in 04, 05 and 06, find-the-bug tasks in dynamic marking (07) and 08
    def asks(nb, kind):
        return any(q.question.startswith(kind) for k, q in EXERCISES.items() if k.startswith(nb + "."))
    for nb in ("04", "05", "06"):
        assert asks(nb, "Design") and asks(nb, "Inverse"), nb
    for nb in ("07", "08"):
        assert asks(nb, "Find the bug"), nb


def test_the_new_references_are_what_their_hints_derive():
    # each reference agrees with the reasoning its hint teaches, not only with the library
    thr = wb.make_layout((4, 8), stride=(8, 1))
    assert _reference("04.6") == thr((2, 13 // 4))                    # thread grid stretched by the 1x4 values
    assert _reference("05.6") == thr((2 % 4, 13 % 8))                 # dealt: the grid laid over the tile again
    assert _reference("06.5") == (4 * (10 % 8) + 5 // 2, (5 % 2) + 2 * (10 // 8))
    assert _reference("06.6") == (64 // 16, 16 // 8, 1)
    assert _reference("05.2") == 33 and _reference("04.2") == 4 and _reference("04.5") == 16
    assert _reference("08.3") == 1002 and _reference("08.4") == 3
    assert _reference("07.6") == 0 and _reference("07.7") == 0


def test_no_answer_is_printed_before_its_question():
    # a distinctive reference (a layout, a tuple of two or more) must not appear in the outputs above the
    # cell that asks for it (the lessons issue 22 reviewed)
    for nb in [n for n in NOTEBOOKS if n.name[:2] in ("04", "05", "06", "07", "08")]:
        cells = json.loads(nb.read_text())["cells"]
        for i, c in enumerate(cells):
            m = re.search(r'check\("(\d\d\.\d+)"', "".join(c["source"])) if c["cell_type"] == "code" else None
            if not m:
                continue
            want = _reference(m.group(1))
            if isinstance(want, wb.Layout):
                text = str(want)
            elif isinstance(want, tuple) and len(want) >= 2:   # (a name chosen among printed options is fine)
                text = str(want)
            else:
                continue
            before = "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                             for c2 in cells[:i] if c2["cell_type"] == "code" for o in c2.get("outputs", []))
            assert text not in before, (nb.name, m.group(1), text)
