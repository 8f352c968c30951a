"""The teaching series' exercises: ``check("01.3", answer)`` says right, or what is wrong.

Each exercise is registered once (notebook and number, e.g. ``"04.2"``) with a function that
computes the reference answer from the library, how to compare an answer with it, and a hint.
The reference is never stored as a literal: it is what the workbench itself computes, so an
exercise cannot drift from the code it teaches.  A verdict is one deterministic line (the
notebooks are validated by nbval).  Answers are judged strictly by kind, and ``==`` is never
applied to an object of a foreign type (``mock.ANY``, a numpy array, a torch tensor: each is told what kind was expected):

* an int, a bool, a string, or a (nested) tuple of them: the same Python type (``True`` is not an int, ``32.0``
  and ``np.int64(32)`` are not ints, ``"20"`` is not 20) and the same value; strings ignore spaces and case;
* a layout (``wb.Layout`` or layout text, spaces allowed): equal *as a function* (every index maps to the same
  offset), and with the reference's shape where the lesson is the shape (``shape=True``); a different but
  equivalent representation is right, with CuTe's form given;
* an exception class (``"which error does ... raise?"``): exactly the class the library raises (``Exception``
  names every error and is not an answer);
* an exercise may accept other spellings of its answer (``accept``: ``"S<3,3,3>"`` for a swizzle's (B, M, S));
* an object exercise (``objects=True``: a design built with the library, a kernel the learner fixed) is judged by
  building or running the object: its solver returns the real object a learner would pass, and ``accept`` turns the
  reference and the answer alike into what is compared (or returns the verdict itself: a kernel run on the CPU
  executor).  ``accept`` refuses every answer that is not such an object, so no description of the reference (a
  tuple of its fields, its name) passes for it;
* a wrong answer is told that it is wrong, never which way (an int is "not it", never "too large") nor which
  item of a tuple (either would let the answer be found by search).

``check`` always returns a verdict, whatever it is given.  The reference answers are computed by a solver that
the registry keeps to itself: an ``Exercise`` holds the question and the hint, not the answer.

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
    hint: str                      # what to look at again when the answer is wrong
    shape: bool = False            # a layout answer must also have the reference's shape
    accept: Callable[[Any], Any] | None = None   # other spellings of an answer -> the reference's kind
    objects: bool = False          # answered with a real object: accept() applies to the reference too


EXERCISES: dict[str, Exercise] = {}


def _registry():
    """The solvers, out of reach of the registry's objects (``EXERCISES[k]`` has no answer to hand out)."""
    solvers: dict[str, Callable[[], Any]] = {}

    def register(key, solve):
        solvers[key] = solve

    def reference(key):
        return solvers[key]()
    return register, reference


_register, _reference = _registry()


def exercise(key: str, question: str, hint: str, shape: bool = False, accept=None, objects: bool = False):
    """Register the decorated zero-argument function as the solution of exercise ``key`` (the decorator returns
    None: the solver is not left in the exercise module's namespace).  With ``objects=True`` the solution is the
    real object a learner would pass, and ``accept`` (required) judges or describes answer and reference alike."""
    if objects and accept is None:
        raise ValueError(f"Expected accept= for the object exercise {key!r}: it says what an object is judged by.")

    def register(solve):
        if key in EXERCISES:
            raise ValueError(f"Expected a new exercise key, but {key!r} is registered twice.")
        EXERCISES[key] = Exercise(key, question, hint, shape, accept, objects)
        _register(key, solve)
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
    """Check ``answer`` to exercise ``key`` (e.g. ``"01.2"``) and print the verdict (never raises)."""
    if not EXERCISES:
        _load_all()
    ex = EXERCISES.get(key) if type(key) is str else None
    if ex is None:
        v = Verdict(f"Expected an exercise key such as {sorted(EXERCISES)[:3]}, but got {_what(key)}.", False)
    elif answer is None or answer is ...:
        v = Verdict(f"{key}: not answered yet. {ex.question}", False)
    else:
        try:
            v = _judge(ex, answer)
        except Exception as e:   # a verdict, whatever the answer does (a layout past int64, a foreign __len__)
            v = Verdict(f"{key}: that answer cannot be judged ({type(e).__name__}: {str(e)[:200]}). Hint: {ex.hint}",
                        False)
    print(v)
    return v


def _judge(ex: Exercise, answer) -> Verdict:
    if ex.accept is not None:
        answer = ex.accept(answer)
        if type(answer) is Verdict:       # refused, or an exercise that runs the learner's object gives its verdict
            return answer
    want = _reference(ex.key)
    if ex.objects:                        # the reference is a real object: described exactly as the answer was
        want = ex.accept(want)
        if type(want) is Verdict:
            raise AssertionError(f"{ex.key}: the reference object is not accepted by its own exercise: {want}")
    if isinstance(want, type) and issubclass(want, BaseException):
        return _judge_exception(ex, want, answer)
    if type(want) is Layout:
        return _judge_layout(ex, want, answer)
    if type(want) is str and type(answer) is Layout:
        answer = str(answer)          # layout text asked, a layout given: its text
    if _same(answer, want):
        return Verdict(f"{ex.key}: right.", True)
    return Verdict(f"{ex.key}: not quite: {_difference(answer, want)} Hint: {ex.hint}", False)


def _norm(s: str) -> str:
    """Harmless spelling: spaces and case do not matter in a text answer."""
    return "".join(s.split()).casefold()


def _same(a, b) -> bool:
    """Strict: the type first (no ``==`` on a foreign object), then the value."""
    tb = type(b)
    if tb is tuple:
        return type(a) in (tuple, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if tb is bool:
        return type(a) is bool and a is b
    if tb is int:
        return type(a) is int and a == b
    if tb is str:
        return type(a) is str and _norm(a) == _norm(b)
    raise TypeError(f"an exercise's reference is a {tb.__name__}: compare it by kind here")


def _kind(b) -> str:
    """What kind of answer the reference is (never its value)."""
    tb = type(b)
    if tb is tuple:
        return f"a tuple of {len(b)} items"
    return {bool: "True or False", int: "an int", str: "a string"}.get(tb, tb.__name__)


def _what(a) -> str:
    """An answer's type, named without calling anything on it."""
    t = type(a)
    if t in (int, bool, float, str, tuple, list):
        return t.__name__ + (f" {_short(a)}" if t is int else f" {a!r}" if t in (bool, float) else "")
    return f"{t.__module__}.{t.__qualname__}" if t.__module__ != "builtins" else t.__qualname__


def _short(i: int) -> str:
    return str(i) if abs(i) < 10**30 else f"of about {int(i.bit_length() * 0.30103)} digits"


def _difference(a, b) -> str:
    """How ``a`` differs from ``b``, without giving ``b`` away."""
    if isinstance(b, tuple):
        if type(a) not in (tuple, list):
            return f"expected {_kind(b)}, but got {_what(a)}."
        if len(a) != len(b):
            return f"expected {len(b)} items, but got {len(a)}."
        wrong = [i for i, (x, y) in enumerate(zip(a, b)) if not _same(x, y)]
        kinds = [i for i in wrong if type(b[i]) is not tuple and type(a[i]) is not type(b[i])]
        if kinds:
            i = kinds[0]
            return f"item {i}: expected {_kind(b[i])}, but got {_what(a[i])}."
        # never which item, nor which way: a tuple of small answers would fall to a search item by item
        return "not every item is right."
    if type(a) is not type(b):
        return f"expected {_kind(b)}, but got {_what(a)}."
    if type(b) is bool:
        return f"{a!r} is not it."
    if type(b) is int:
        return f"{_short(a)} is not it."        # never 'too large/too small': that would let it be bisected
    return "that is not it."


def _judge_layout(ex: Exercise, want: Layout, answer) -> Verdict:
    if type(answer) is str:
        try:
            got = parse_layout(answer.strip())
        except (ValueError, TypeError) as e:
            return Verdict(f"{ex.key}: that is not layout text ({e}).", False)
    else:
        got = answer
    if type(got) is not Layout:
        return Verdict(f"{ex.key}: expected a layout (wb.Layout or text like '(4,2):(2,1)'), but got "
                       f"{_what(answer)}.", False)
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
    if ex.shape and wb.shape(got) != wb.shape(want):
        return Verdict(f"{ex.key}: not quite: the same function, but the lesson is the shape and yours is "
                       f"{wb.shape(got)}. Hint: {ex.hint}", False)
    return Verdict(f"{ex.key}: right as a function (every index maps to the same offset); CuTe writes it {want}.",
                   True)


def _judge_exception(ex: Exercise, want: type, answer) -> Verdict:
    if not (isinstance(answer, type) and issubclass(answer, BaseException)):
        return Verdict(f"{ex.key}: expected an exception class such as ValueError, but got {_what(answer)}.", False)
    if answer is want:
        return Verdict(f"{ex.key}: right.", True)
    if issubclass(want, answer):
        return Verdict(f"{ex.key}: not quite: {answer.__name__} is too general (every error of that family is one); "
                       f"name the exact class. Hint: {ex.hint}", False)
    return Verdict(f"{ex.key}: not quite: the library raises something else. Hint: {ex.hint}", False)
