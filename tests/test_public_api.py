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


# -- the kernel DSL's shape: one module per hardware operation (README, "Architecture") ------------------------------
ROOT = Path(wb.__file__).parent
# the PTX (or CUDA) text that names each instruction family: written in exactly one module, an op module
PTX_FAMILIES = {
    "mma.sync": ["mma.sync.aligned"], "ldmatrix": ["ldmatrix.sync"], "cp.async": ["cp.async.ca.", "cp.async.cg.",
    "cp.async.commit_group", "cp.async.wait_group"], "wgmma": ["wgmma.mma_async", "wgmma.fence", "wgmma.wait_group",
    "wgmma.commit_group"], "tma": ["cp.async.bulk."], "mbarrier": ["mbarrier.", "fence.mbarrier_init"],
    "setmaxnreg": ["setmaxnreg."], "named barriers": ["bar.sync", "bar.arrive"], "__syncthreads": ["__syncthreads"],
    "fence.proxy.async": ["fence.proxy.async"], "clusters": ["barrier.cluster", "%cluster_ctarank"],
    # one entry per tcgen05 instruction (each op module of its own; ld, st and their waits together)
    "tcgen05.alloc": ["tcgen05.alloc", "tcgen05.dealloc", "tcgen05.relinquish_alloc_permit"],
    "tcgen05.mma": ["tcgen05.mma"], "tcgen05.commit": ["tcgen05.commit"], "tcgen05.fence": ["tcgen05.fence"],
    "tcgen05.ld/st": ["tcgen05.ld", "tcgen05.st", "tcgen05.wait"], "tcgen05.cp": ["tcgen05.cp"],
}


def _code_strings(path) -> str:
    """The string constants of a module that are not docstrings (what it could emit)."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return "\n".join(n.value for n in ast.walk(tree)
                     if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs)


def test_each_instruction_is_written_in_one_op_module():
    where = {fam: set() for fam in PTX_FAMILIES}
    for p in ROOT.rglob("*.py"):
        text = _code_strings(p)
        for fam, marks in PTX_FAMILIES.items():
            if any(m in text for m in marks):
                where[fam].add(str(p.relative_to(ROOT)))
    found = {fam: ps for fam, ps in where.items() if ps}
    assert set(found) == set(PTX_FAMILIES), set(PTX_FAMILIES) - set(found)   # every family is in the DSL
    for fam, ps in found.items():
        assert len(ps) == 1 and next(iter(ps)).startswith("dsl/ops/"), (fam, ps)


def test_the_backends_know_no_instruction():
    """The CUDA and CPU backends dispatch to the node (ir.Instruction.cuda/python): no instruction's class, PTX or
    scheduling tag appears in them."""
    from workbench.dsl import ir
    names = {c.__name__ for c in ir.INSTRUCTIONS}
    assert {"MmaSync", "Wgmma", "TmaCopy", "MbarWait", "SyncThreads", "VecCopy"} <= names
    for b in ("cuda.py", "cpu.py"):
        p = ROOT / "dsl" / "backends" / b
        tree = ast.parse(p.read_text())
        used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} | \
               {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert not names & used, (b, names & used)
        text = _code_strings(p)
        assert not [m for ms in PTX_FAMILIES.values() for m in ms if m in text], b
        assert not {"mma", "ldsm", "wgmma", "spin", "bar", "bararrive"} & set(re.findall(r"'(\w+)'", text)), b


def _imports(path):
    """(module, names) of every import of a module, relative ones resolved."""
    rel = path.relative_to(ROOT.parent).with_suffix("")
    pkg = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.Import):
            for a in n.names:
                yield a.name, ()
        elif isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:
                base = ".".join(pkg[:len(pkg) - n.level + 1] + ([base] if base else []))
            yield base, tuple(a.name for a in n.names)


def test_shipped_kernels_use_only_public_names():
    """workbench/kernels/ is written as a user writes kernels: ``import workbench as wb`` and wb's public names."""
    public = set(wb.__all__)
    for p in (ROOT / "kernels").glob("*.py"):
        for mod, names in _imports(p):
            if mod.startswith("workbench"):
                assert mod in ("workbench", "workbench.kernels") or mod.startswith("workbench.kernels."), (p.name, mod)
                assert not [x for x in names if x.startswith("_")], (p.name, mod, names)
        tree = ast.parse(p.read_text())
        used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                and n.value.id == "wb"}
        assert used <= public, (p.name, sorted(used - public))


def test_no_module_below_the_kernels_imports_the_top_level_package():
    """Arrows point one way: the layout core, atoms and the DSL never import ``workbench`` itself (kernels/, bench/
    and the command line use the public API)."""
    for p in ROOT.rglob("*.py"):
        top = p.relative_to(ROOT).parts[0]
        if top in ("kernels", "bench", "__main__.py", "__init__.py"):
            continue
        top_level = [(m, names) for m, names in _imports(p) if m == "workbench" and not all(
            (ROOT / f"{x}.py").exists() or (ROOT / x).is_dir() for x in names)]   # a submodule is no top-level use
        assert not top_level, (p, top_level)


def test_the_dsl_reaches_into_no_private_name():
    """Modules of the DSL use each other's public names (a private module such as the C launcher may be imported
    whole, never a module's private name)."""
    for p in list((ROOT / "dsl").rglob("*.py")) + list((ROOT / "kernels").glob("*.py")):
        tree = ast.parse(p.read_text())
        for mod, names in _imports(p):
            if mod.startswith("workbench"):
                private = [x for x in names if x.startswith("_") and not (ROOT.parent / mod.replace(".", "/") / x).
                           with_suffix(".py").exists() and x not in ("_launch",)]
                assert not private, (p, mod, private)
        aliases = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                   for a in n.names}
        reach = {f"{n.value.id}.{n.attr}" for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                 and isinstance(n.value, ast.Name) and n.value.id in aliases and n.attr.startswith("_")
                 and not n.attr.startswith("__")}
        assert not reach, (p, reach)
