"""Interactive layout views and their deterministic SVG renderer.

Each view is an ipywidgets box (custom drawing on one anywidget canvas) with ``.to_svg()`` and an
``image/svg+xml`` fallback in its mimebundle, so a saved notebook still shows it.
"""

from .atoms_view import CopyView, MMAView
from .charts import plot_overhead, progress
from .dlpack_inspector import DLPackInspector
from .explain_view import ExplainView
from .layout_view import LayoutView
from .marking import MarkingExplorer
from .playground import AlgebraPlayground
from .tv_view import TVLayoutView

__all__ = ["LayoutView", "TVLayoutView", "MarkingExplorer", "DLPackInspector", "AlgebraPlayground",
           "plot_overhead", "progress", "MMAView", "CopyView", "ExplainView"]
