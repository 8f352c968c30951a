"""Hostile input, round 2 (issues 20 and 22): the exercise checker gives a verdict for anything, judges types
strictly (no ``==`` on foreign objects, exact exception classes, layouts by function and, where the lesson is the
shape, by shape), accepts harmless spellings, and does not hand out its references."""

from unittest import mock

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from widgets.exercises import EXERCISES, _load_all, _reference, check

_load_all()
KEYS = sorted(k for k in EXERCISES if not k.startswith("_"))


def _hostile(want):
    """Answers that must be judged wrong (and never raise) for an exercise whose reference is ``want``."""
    out = [mock.ANY, object(), [], {}, {1: 2}, {1, 2}, 10**100000, -(10**5000), float("nan"), b"x", 1j,
           np.array([1, 2]), torch.tensor([1.0]), Exception, BaseException, ..., True if type(want) is not bool else 0]
    if type(want) is int and type(want) is not bool:
        out += [float(want), np.int64(want), np.array([want]), torch.tensor(want), str(want), mock.ANY, want + 0.0]
    if type(want) is tuple:
        out += [(mock.ANY,) * len(want), np.array(want, dtype=object)]
        if not all(type(w) is str for w in want):
            out.append(tuple(map(str, want)))
    if type(want) is str:
        out += [mock.ANY, np.str_(want + "x"), want.encode()]
    if isinstance(want, wb.Layout):
        out += ["(2,3):(99999999999999999999999,2)", "((", str(want) + "x", mock.ANY]
    if isinstance(want, type):
        out += [w for w in want.__mro__[1:]] + [want()]
    return out


@pytest.mark.parametrize("key", KEYS)
def test_every_exercise_gives_a_verdict_and_refuses_hostile_answers(key, capsys):
    want = _reference(key)
    for a in _hostile(want):
        v = check(key, a)
        assert isinstance(v, str) and v.startswith(f"{key}: ") and not v.right, (key, type(a), v)
    capsys.readouterr()


_anything = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.integers(-(10**400), 10**400), st.floats(), st.text(max_size=8),
              st.binary(max_size=4), st.sampled_from([mock.ANY, Exception, ValueError, wb.Float32, wb.Layout])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner, inner), st.dictionaries(st.text(max_size=2), inner,
                                                                                                  max_size=2)),
    max_leaves=6)


@settings(max_examples=150)
@given(st.sampled_from(KEYS), _anything)
def test_check_never_raises(key, answer):
    v = check(key, answer)
    assert isinstance(v, str) and isinstance(v.right, bool)
    if v.right:      # only an answer equal in kind and value to the reference can be right
        assert answer is not None


@pytest.mark.parametrize("key", [[1], {}, {"a": 1}, None, 5.0, "99.9", 10**100])
def test_an_unknown_or_unhashable_key_is_a_verdict(key, capsys):
    v = check(key, 3)
    assert not v.right and v.startswith("Expected an exercise key")
    capsys.readouterr()


def test_the_examples_of_the_issues(capsys):
    assert not check("07.5", Exception).right and "too general" in check("07.5", Exception)
    assert not check("08.5", BaseException).right
    for key in ("05.2", "07.3", "06.4"):
        assert not check(key, mock.ANY).right
    assert not check("08.2", (mock.ANY,) * 3).right
    assert "expected an int, but got numpy.ndarray" in check("05.2", np.array([32]))
    assert "expected an int, but got float" in check("05.2", 32.0)
    assert "expected an int, but got bool" in check("01.5", True)          # was "expected True or False"
    assert "expected an int, but got str" in check("05.3", "20")
    assert check("05.3", 20).right
    v = check("04.1", "(2,3,1):(6,2,99)")                                  # the same function, not B's shape
    assert not v.right and "the lesson is the shape" in v
    assert check("04.1", "(2,3):(6,2)").right and check("04.1", " ( 2 , 3 ) : ( 6 , 2 ) ").right
    assert check("07.3", "(6, ?{div=4}, 2):(?{i64 div=8}, 2, 1)").right      # spaces in layout text
    assert check("06.4", "layout_k_sw64_atom").right                         # the case of an atom name
    assert check("05.5", "S<3,3,3>").right and check("05.5", wb.Swizzle(3, 3, 3)).right
    assert check("05.5", (3, 3, 3)).right and not check("05.5", "S<3,3,2>").right
    assert check("05.1", [5, 3]).right                                       # a list for a tuple is harmless
    capsys.readouterr()


def test_the_references_are_not_on_the_registry_or_in_the_modules():
    ex = EXERCISES["05.2"]
    assert not hasattr(ex, "solve") and {"key", "question", "hint"} <= set(vars(ex) if hasattr(ex, "__dict__") else
                                                                          ex.__dataclass_fields__)
    import widgets.exercises.n05 as n05
    assert not callable(getattr(n05, "_", None))


def test_every_notebook_check_cell_still_runs_unanswered(capsys):
    for key in KEYS:
        v = check(key, None)
        assert v == f"{key}: not answered yet. {EXERCISES[key].question}"
    capsys.readouterr()
