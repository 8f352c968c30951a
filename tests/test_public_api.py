"""The public API is explicit: ``workbench.__all__`` names every export, nothing internal leaks to
the top level, and no public name shadows a Python builtin or a submodule.  The package's imports
have no cycle and ``workbench.layout`` imports nothing else of the workbench (DESIGN.md's arrows).
Docstrings and error messages name no internal design document or tracker item."""

import ast
import builtins
import inspect
import pkgutil
import re
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import numpy as np
import pytest

import workbench as wb

INTERNAL = ["Specialization", "compile_ptx", "MdspanMapping", "by_name", "ALL_SCALAR_TYPES", "DLPackTensorWrapper",
            "format_inttuple", "prefix_product", "value_of", "known_value", "divisibility_of", "filter", "tensor"]


def test_all_names_every_public_export_and_each_exists():
    assert len(wb.__all__) == len(set(wb.__all__))
    public = {n for n in vars(wb) if not n.startswith("_")}
    submodules = {m.name for m in pkgutil.iter_modules(wb.__path__)}
    assert public - submodules == set(wb.__all__)
    assert all(getattr(wb, n) is not None for n in wb.__all__)


def test_no_public_name_shadows_a_builtin_or_a_submodule():
    assert not [n for n in wb.__all__ if hasattr(builtins, n)]
    # modules of one idea are private (_tensor, _mdspan), so wb.Tensor has no wb.tensor beside it.
    # Note: the packages DESIGN.md names (layout, dlpack, dsl, ...) stay public namespaces.
    modules = {m.name for m in pkgutil.iter_modules(wb.__path__) if not m.ispkg and m.name != "__main__"}
    assert all(m.startswith("_") for m in modules), modules
    assert not [n for n in wb.__all__ if n in {m.name for m in pkgutil.iter_modules(wb.__path__)}]


def test_internals_are_not_top_level():
    assert not [n for n in INTERNAL if n in wb.__all__]
    from workbench._mdspan import MdspanMapping
    from workbench.dsl import compile_ptx  # still reachable through their own module
    assert callable(compile_ptx) and MdspanMapping


def test_element_types_are_all_exported():
    from workbench._element_types import ALL_SCALAR_TYPES

    assert all(getattr(wb, t.name) is t for t in ALL_SCALAR_TYPES)


def _import_graph():
    """Every module of workbench/ -> the workbench modules it imports, read from the source (AST), imports
    inside functions included: ``from .x import y`` names the submodule x.y when there is one, else x."""
    root = Path(wb.__file__).resolve().parent
    mods = {}
    for path in root.rglob("*"):
        suffix = next((x for x in (".py", ".c", *EXTENSION_SUFFIXES) if path.name.endswith(x)), None)
        if suffix:  # C extensions (dsl/_launch.c, dlpack/_native.c; built or not) are modules with no imports to read
            name = ".".join(path.relative_to(root.parent).parts).removesuffix(suffix)
            mods[name.removesuffix(".__init__")] = path
    edges = {}
    for name, path in mods.items():
        if path.suffix != ".py":
            edges[name] = set()
            continue
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        out = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                out |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
                out |= {f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names}
        edges[name] = {m for m in out if m in mods and m != name}
    return edges


def _find_cycle(edges):
    """One import cycle as a list of modules (first == last), or None (depth-first search)."""
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(edges.get(m, ())):
            if state.get(n) == "open":
                return stack[stack.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        state[m] = "done"
        stack.pop()
        return None

    return next((c for m in sorted(edges) if m not in state and (c := visit(m))), None)


def test_the_package_has_no_import_cycle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]  # the check works
    edges = _import_graph()
    assert {"workbench", "workbench.layout.layout", "workbench.dsl.frontend", "workbench._mdspan"} <= set(edges)
    assert "workbench.layout.values" in edges["workbench.dsl.ir"]                  # relative imports resolved
    assert "workbench.dsl.ops.tma" in edges["workbench.dsl.runtime.args"]           # function-local imports seen
    assert "workbench.dsl.runtime._launch" in edges["workbench.dsl.runtime.launch"]                 # a C extension is a module
    assert _find_cycle(edges) is None, " -> ".join(_find_cycle(edges))


def test_the_layout_core_imports_nothing_else_of_the_workbench():
    edges = _import_graph()
    core = {m for m in edges if m == "workbench.layout" or m.startswith("workbench.layout.")}
    assert len(core) > 10
    outside = sorted((m, n) for m in core for n in edges[m] if n not in core)
    assert not outside, outside


# Internal design documents ("seed 003") and tracker items ("issue 2") mean nothing to a user.
INTERNAL_REFERENCE = re.compile(r"\bseeds?\s*#?\s*\d|\bissue\s*#?\s*\d", re.IGNORECASE)


def _public_docstrings():
    """(where, docstring) of every name in wb.__all__, its public members and the module defining it."""
    seen = set()
    for name in wb.__all__:
        obj = getattr(wb, name)
        owners = [(f"wb.{name}", obj)]
        cls = obj if inspect.isclass(obj) else type(obj) if not callable(obj) else None
        if cls is not None:
            owners += [(f"wb.{name}.{m}", getattr(cls, m)) for m in dir(cls) if not m.startswith("_")]
        module = sys.modules.get(getattr(obj, "__module__", None) or "")
        if module is not None and module.__name__.startswith("workbench"):
            owners.append((module.__name__, module))
        for where, o in owners:
            doc = inspect.getdoc(o)
            if doc and (where, doc) not in seen:
                seen.add((where, doc))
                yield where, doc


def _raised_message_literals():
    """(file:line, text) of every string literal inside a ``raise`` of workbench/ and widgets/."""
    root = Path(wb.__file__).resolve().parent.parent
    for path in sorted([*(root / "workbench").rglob("*.py"), *(root / "widgets").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                for part in ast.walk(node.exc):
                    if isinstance(part, ast.Constant) and isinstance(part.value, str):
                        yield f"{path.relative_to(root)}:{node.lineno}", part.value


def test_no_internal_references_in_docstrings_or_error_messages():
    assert INTERNAL_REFERENCE.search("refused (seed 003)") and INTERNAL_REFERENCE.search("issue #12's targets")
    assert not INTERNAL_REFERENCE.search("a seeded suite of 1,000 pairs; the instruction issues 4 phases")
    docs = list(_public_docstrings())
    assert len(docs) > 200 and any(w == "wb.to_dlpack_tensor" for w, _ in docs)  # the walk reaches them
    bad = [(w, m.group(0)) for w, d in docs if (m := INTERNAL_REFERENCE.search(d))]
    assert not bad, f"expected no internal references in public docstrings, but got {bad}"
    literals = list(_raised_message_literals())
    assert len(literals) > 300
    bad = [(w, s) for w, s in literals if INTERNAL_REFERENCE.search(s)]
    assert not bad, f"expected no internal references in raised messages, but got {bad}"
    # Messages assembled at run time: the device-view refusals, as a user meets them.
    dev = wb.make_mdspan(np.zeros(6, np.float32).ctypes.data, wb.Float32, (2, 3), accessor="device")
    for access in (lambda: dev[0, 0], lambda: dev.__setitem__((0, 0), 1.0), dev.numpy):
        with pytest.raises(TypeError) as info:
            access()
        msg = str(info.value)
        assert "device_mdspan" in msg and "compile error in C++" in msg
        assert not INTERNAL_REFERENCE.search(msg), msg
