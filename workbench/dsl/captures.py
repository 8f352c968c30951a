"""What a kernel captured: the one rule for globals, closure variables and attributes of user modules.

A name a kernel (or a device function it calls) reads from its globals, its closure or a user module is a
compile-time constant, as in CuTe DSL and Triton: its value is read when a specialization is lowered and
compiled in.  Each specialization records what it read (:class:`Capture`); before a launch selects a
specialization, every recorded name is read again, and a specialization whose captured value changed is dropped
and lowered again with the new value (Triton re-specializes the same way).  A value never silently stays old.

Values are compared as a Constexpr argument is: numbers, bools, strings, tuples and layouts by value (rebinding
``N = 1000`` to another 1000 keeps the specialization), everything else by identity (a device function or an
element type rebound is a change; mutating an object in place is not seen).  Modules and the workbench's own
functions are the library, not state: ``wb``, ``math`` and ``wb.size`` are not watched, so a kernel that reads
only them pays nothing per launch; the rest costs one dictionary read per captured name and launch.
"""

from __future__ import annotations

import inspect

from ..layout import ComposedLayout, Layout

_MISSING = object()
_BY_VALUE = (int, float, bool, str, tuple, Layout, ComposedLayout, type(None))


class Capture:
    """One name a specialization read: from a namespace dict (globals, a module's ``__dict__``) or a cell."""

    __slots__ = ("ns", "name", "value")

    def __init__(self, ns, name, value):
        self.ns, self.name, self.value = ns, name, value

    def current(self):
        if type(self.ns) is dict:
            return self.ns.get(self.name, _MISSING)
        try:
            return self.ns.cell_contents
        except ValueError:       # an emptied cell (del of the closure variable)
            return _MISSING


def watched(value) -> bool:
    """Whether a captured value is state to watch: not a module, not one of the workbench's functions or types."""
    if inspect.ismodule(value):
        return False
    if inspect.isfunction(value) or inspect.isbuiltin(value) or inspect.isclass(value):
        mod = getattr(value, "__module__", None) or ""
        return mod.split(".")[0] not in ("workbench", "math", "builtins")
    return True


def user_module(mod) -> bool:
    """A module whose attributes a kernel reads as captured values (not the workbench, not the standard library)."""
    name = getattr(mod, "__name__", "")
    return name.split(".")[0] not in ("workbench", "math", "builtins", "numpy", "torch", "cupy")


def same(old, new, key) -> bool:
    """Whether a captured value still holds: ``key`` is the Constexpr cache key (args.const_key)."""
    if old is new:
        return True
    if type(old) is not type(new) or type(old) not in _BY_VALUE:
        return False
    try:
        return key(old) == key(new)
    except Exception:   # an un-comparable tuple element: a change
        return False


def describe(c: Capture) -> str:
    where = "closure variable" if type(c.ns) is not dict else ("global" if "__builtins__" in c.ns else "module attribute")
    return f"{where} '{c.name}'"
