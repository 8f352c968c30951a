"""What every view shares: the input conversion, and the static SVG fallback in the mimebundle.

A view is an ipywidgets box; in a live notebook JupyterLab renders the widget, while a saved
notebook (GitHub, nbval, nbconvert) shows the ``image/svg+xml`` entry written next to it.
"""

from __future__ import annotations

from workbench import from_dlpack
from workbench.interop import as_workbench
from workbench.layout import ComposedLayout, Layout, parse_layout


def as_layout(obj) -> tuple[Layout, object]:
    """(layout, tensor or None) for a wb.Layout, a swizzled wb.ComposedLayout, a layout string, a wb.Tensor
    or any __dlpack__ object."""
    obj = as_workbench(obj)  # a CuTe DSL object (traced): the workbench's
    if type(obj) is Layout or type(obj) is ComposedLayout:  # (a swizzled layout's .layout would drop the swizzle)
        return obj, None
    if isinstance(obj, str):
        return parse_layout(obj), None
    lay = getattr(obj, "layout", None)
    if type(lay) is Layout:
        return lay, obj
    if hasattr(obj, "__dlpack__"):
        t = from_dlpack(obj)
        return t.layout, t
    raise TypeError(
        f"Expected a wb.Layout, a layout string such as '(4,2):(1,4)', a wb.Tensor or a __dlpack__ object, "
        f"but got {type(obj).__name__}."
    )


class SvgFallback:
    """Mixin: ``_repr_mimebundle_`` = the widget view plus ``image/svg+xml`` from the view's own
    ``to_svg()`` (every view class defines it)."""

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        if isinstance(data, tuple):  # (data, metadata) form
            data, meta = data
        else:
            meta = None
        data = dict(data or {})
        data["image/svg+xml"] = self.to_svg()
        data["text/plain"] = repr(self)
        return (data, meta) if meta is not None else data

    def save_svg(self, path) -> None:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(self.to_svg())

    def save(self, path) -> None:
        """Write the view to ``path`` by its suffix: ``.svg`` (the static picture), ``.png`` (that picture
        rasterized, no browser) or ``.tex`` (TikZ, as CuTe's ``print_latex``; where the view has it)."""
        suffix = str(path).rsplit(".", 1)[-1].lower() if "." in str(path) else ""
        formats = ["svg", "png"] + (["tex"] if hasattr(self, "to_tikz") else [])
        if suffix not in formats:
            raise ValueError(f"Expected a file name ending in {', '.join('.' + f for f in formats)} for "
                             f"{type(self).__name__}, but got {str(path)!r}.")
        if suffix == "svg":
            self.save_svg(path)
        elif suffix == "png":
            from .raster import save_png

            save_png(self.to_svg(), path)
        else:
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(self.to_tikz())
