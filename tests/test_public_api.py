"""The public API is explicit: ``workbench.__all__`` names every export, nothing internal leaks to
the top level, and no public name shadows a Python builtin or a submodule."""

import builtins
import pkgutil

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
    from workbench.dsl import compile_ptx  # still reachable through their own module
    from workbench._mdspan import MdspanMapping
    assert callable(compile_ptx) and MdspanMapping


def test_element_types_are_all_exported():
    from workbench._element_types import ALL_SCALAR_TYPES

    assert all(getattr(wb, t.name) is t for t in ALL_SCALAR_TYPES)
