"""The teaching series' exercises: ``check("01.3", answer)`` says right, or what is wrong.

Each exercise is registered once (notebook and number, e.g. ``"04.2"``) with a function that
computes the reference answer from the library, how to compare an answer with it, and a hint.
The reference is never stored as a literal: it is what the workbench itself computes, so an
exercise cannot drift from the code it teaches.  A verdict is one deterministic line (the
notebooks are validated by nbval).  Answers are compared by kind:

* an int, a bool, a string, or a (nested) tuple of them: equal, with a word on how they differ;
* a layout (``wb.Layout`` or layout text): equal *as a function* (every index maps to the same
  offset); a different but equivalent representation is right, with CuTe's form given;
* an exception class (``"which error does ... raise?"``): the class the library raises.

The exercises of notebook NN live in ``widgets/exercises/nNN.py``, found and imported on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import workbench as wb
from workbench.layout import Layout, parse_layout

__all__ = ["check", "Exercise", "exercise", "EXERCISES"]


@dataclass(frozen=True)
class Exercise:
    key: str                       # "NN.k": notebook NN, exercise k
    question: str                  # one line, as the notebook asks it
    solve: Callable[[], Any]       # the reference answer, computed by the workbench
    hint: str                      # what to look at again when the answer is wrong


EXERCISES: dict[str, Exercise] = {}


def exercise(key: str, question: str, hint: str):
    """Register the decorated zero-argument function as the solution of exercise ``key``."""
    def register(solve):
        if key in EXERCISES:
            raise ValueError(f"Expected a new exercise key, but {key!r} is registered twice.")
        EXERCISES[key] = Exercise(key, question, solve, hint)
        return solve
    return register


class Verdict(str):
    """The one-line verdict; ``.right`` says whether the answer was accepted."""

    right: bool

    def __new__(cls, text: str, right: bool):
        v = super().__new__(cls, text)
        v.right = right
        return v

    def __repr__(self) -> str:
        return str(self)

    def _ipython_display_(self) -> None:
        """``check`` has printed the verdict already: a notebook cell that ends with ``check(...)`` shows it once."""


def _load_all() -> None:
    import importlib
    import pkgutil

    for m in pkgutil.iter_modules(__path__):
        if m.name.startswith("n") and m.name[1:].isdigit():
            importlib.import_module(f"{__name__}.{m.name}")


def check(key: str, answer) -> Verdict:
    """Check ``answer`` to exercise ``key`` (e.g. ``"01.2"``) and print the verdict."""
    if not EXERCISES:
        _load_all()
    ex = EXERCISES.get(key)
    if ex is None:
        raise KeyError(f"Expected an exercise key such as {sorted(EXERCISES)[:3]}, but got {key!r}.")
    if answer is None or answer is ...:
        v = Verdict(f"{key}: not answered yet. {ex.question}", False)
    else:
        v = _judge(ex, answer)
    print(v)
    return v


def _judge(ex: Exercise, answer) -> Verdict:
    want = ex.solve()
    if isinstance(want, type) and issubclass(want, BaseException):
        return _judge_exception(ex, want, answer)
    if isinstance(want, Layout):
        return _judge_layout(ex, want, answer)
    if _same(answer, want):
        return Verdict(f"{ex.key}: right.", True)
    return Verdict(f"{ex.key}: not quite: {_difference(answer, want)} Hint: {ex.hint}", False)


def _same(a, b) -> bool:
    if isinstance(b, tuple):
        return isinstance(a, (tuple, list)) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(b, bool):
        return type(a) is bool and a == b
    return type(a) is not bool and a == b


def _difference(a, b) -> str:
    """How ``a`` differs from ``b``, without giving ``b`` away."""
    if isinstance(b, tuple):
        if not isinstance(a, (tuple, list)):
            return f"expected a tuple of {len(b)} items, but got {type(a).__name__}."
        if len(a) != len(b):
            return f"expected {len(b)} items, but got {len(a)}."
        wrong = [i for i, (x, y) in enumerate(zip(a, b)) if not _same(x, y)]
        return f"item{'s' if len(wrong) > 1 else ''} {', '.join(map(str, wrong))} {'are' if len(wrong) > 1 else 'is'} wrong."
    if isinstance(b, bool) or isinstance(a, bool):
        return f"expected True or False, and {a!r} is not it." if isinstance(a, bool) else \
            f"expected True or False, but got {type(a).__name__}."
    if isinstance(b, int) and isinstance(a, int):
        return f"{a} is too {'large' if a > b else 'small'}."
    if type(a) is not type(b):
        return f"expected {type(b).__name__}, but got {type(a).__name__}."
    return f"{a!r} is not it."


def _judge_layout(ex: Exercise, want: Layout, answer) -> Verdict:
    try:
        got = parse_layout(answer) if isinstance(answer, str) else answer
    except ValueError as e:
        return Verdict(f"{ex.key}: that is not layout text ({e}).", False)
    if not isinstance(got, Layout):
        return Verdict(f"{ex.key}: expected a layout (wb.Layout or text like '(4,2):(2,1)'), but got "
                       f"{type(answer).__name__}.", False)
    if wb.size(got) != wb.size(want):
        return Verdict(f"{ex.key}: not quite: your layout has {wb.size(got)} elements, the answer has "
                       f"{wb.size(want)}. Hint: {ex.hint}", False)
    mine, theirs = got.offsets().tolist(), want.offsets().tolist()
    for i, (x, y) in enumerate(zip(mine, theirs)):
        if x != y:
            return Verdict(f"{ex.key}: not quite: the same size, but index {i} maps to offset {x} in yours and "
                           f"to another offset in the answer. Hint: {ex.hint}", False)
    if str(got) == str(want):
        return Verdict(f"{ex.key}: right.", True)
    return Verdict(f"{ex.key}: right as a function (every index maps to the same offset); CuTe writes it {want}.",
                   True)


def _judge_exception(ex: Exercise, want: type, answer) -> Verdict:
    if not (isinstance(answer, type) and issubclass(answer, BaseException)):
        return Verdict(f"{ex.key}: expected an exception class such as ValueError, but got {answer!r}.", False)
    if answer is want:
        return Verdict(f"{ex.key}: right.", True)
    if issubclass(want, answer):
        return Verdict(f"{ex.key}: right, and more precisely it is a {want.__name__} (a kind of {answer.__name__}).",
                       True)
    return Verdict(f"{ex.key}: not quite: the library raises something else. Hint: {ex.hint}", False)
