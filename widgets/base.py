"""What every view shares: the input conversion, and the static picture displayed next to the widget.

Displaying a view writes two outputs: first its static picture (``image/svg+xml``, the same picture as
``image/png`` for viewers that render no SVG in an untrusted notebook, and ``text/plain``), then the live
widget.  A saved notebook therefore shows the picture everywhere without a kernel (JupyterLab trusted or
not, VS Code, GitHub, nbviewer, nbconvert).  A notebook is stored with its widget outputs' ``model_id``
blank (``tests/store_notebooks.py``): JupyterLab hides a widget output with no model id instead of saying
"model not found".  In a live notebook the widget's own CSS (:data:`STATIC_CSS`, loaded with the view's
module) hides the picture right before a rendered view, so the page shows the view once.
"""

from __future__ import annotations

import os
import tempfile

from workbench import from_dlpack
from workbench.interop import as_workbench
from workbench.layout import ComposedLayout, F2Layout, Layout, parse_layout


def as_layout(obj) -> tuple[Layout, object]:
    """(layout, tensor or None) for a wb.Layout, a swizzled wb.ComposedLayout, a layout string, a wb.Tensor
    or any __dlpack__ object."""
    obj = as_workbench(obj)  # a CuTe DSL object (traced): the workbench's
    if type(obj) is Layout or type(obj) is ComposedLayout or type(obj) is F2Layout:  # (a swizzled layout's .layout would drop the swizzle)
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


# The picture is marked so that the live view can find it: JupyterLab draws a trusted SVG as
# <img src="data:image/svg+xml,...">, so the marker is in the image's address.  A live view (.wb-live) in
# the next output hides the picture before it; a stored notebook has no live view, so the picture shows.
STATIC_MARK = 'class="wb-static"'
STATIC_CSS = """
.jp-OutputArea-child:has(img[src*="wb-static"]):has(+ .jp-OutputArea-child .wb-live) { display: none; }
.wb-live { max-width: 100%; }
"""


def static_bundle(svg: str, text: str) -> dict:
    """The static picture's output: the SVG (marked), the same picture as PNG, and a line of text."""
    from .raster import png_bytes

    marked = svg.replace("<svg ", f"<svg {STATIC_MARK} ", 1)
    import base64

    return {"image/svg+xml": marked, "image/png": base64.b64encode(png_bytes(svg)).decode("ascii"),
            "text/plain": text}


def write_atomically(path, text: str | None = None, data: bytes | None = None) -> None:
    """Write a file whole or not at all: a save that raises leaves no empty or partial file behind."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".wb-save-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data if data is not None else text.encode("utf-8"))
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


class SvgFallback:
    """Mixin: displaying the view writes its static picture (``to_svg()``, which every view class
    defines) as an output of its own, then the widget (see the module docstring)."""

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        if isinstance(data, tuple):  # (data, metadata) form
            data, meta = data
        else:
            meta = None
        data = dict(data or {})
        data["text/plain"] = repr(self)
        return (data, meta) if meta is not None else data

    def static_bundle(self) -> dict:
        """The mimebundle of the static picture output (``image/svg+xml``, ``image/png``, ``text/plain``)."""
        return static_bundle(self.to_svg(), f"picture of {self!r}")

    def _ipython_display_(self, **kwargs):
        from IPython.display import publish_display_data

        publish_display_data(self.static_bundle())
        data = self._repr_mimebundle_()
        if isinstance(data, tuple):
            data, meta = data
        else:
            meta = None
        publish_display_data(data, metadata=meta)

    def save_svg(self, path) -> None:
        write_atomically(path, self.to_svg())

    def save(self, path) -> None:
        """Write the view to ``path`` by its suffix: ``.svg`` (the static picture), ``.png`` (that picture
        rasterized, no browser) or ``.tex`` (TikZ, as CuTe's ``print_latex``; where the view has it).
        The file is written whole or not at all: a view too large for TikZ leaves no empty file."""
        suffix = str(path).rsplit(".", 1)[-1].lower() if "." in str(path) else ""
        formats = ["svg", "png"] + (["tex"] if hasattr(self, "to_tikz") else [])
        if suffix not in formats:
            raise ValueError(f"Expected a file name ending in {', '.join('.' + f for f in formats)} for "
                             f"{type(self).__name__}, but got {str(path)!r}.")
        if suffix == "svg":
            self.save_svg(path)
        elif suffix == "png":
            from .raster import png_bytes

            write_atomically(path, data=png_bytes(self.to_svg()))
        else:
            write_atomically(path, self.to_tikz())
