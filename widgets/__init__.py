"""Interactive layout views and their deterministic SVG renderer.

Each view is an ipywidgets box (custom drawing on one anywidget canvas) with ``.to_svg()``; displaying it
writes that static picture (SVG and PNG) as an output of its own before the widget, so a saved notebook shows it
in every viewer (see :mod:`widgets.base`).
"""

from .atoms_view import CopyView, MMAView
from .charts import plot_overhead, progress
from .dlpack_inspector import DLPackInspector
from .explain_view import ExplainView
from .hopper_view import GmmaDescView, TmaBoxView
from .layout_view import LayoutView
from .marking import MarkingExplorer
from .playground import AlgebraPlayground
from .tmem_view import TmemView, UmmaInstrDescView, UmmaSmemDescView
from .triton_view import TritonLayoutView, linear_layout_view
from .tv_view import TVLayoutView

__all__ = ["LayoutView", "TVLayoutView", "MarkingExplorer", "DLPackInspector", "AlgebraPlayground",
           "plot_overhead", "progress", "MMAView", "CopyView", "ExplainView", "GmmaDescView", "TmaBoxView",
           "TmemView", "UmmaSmemDescView", "UmmaInstrDescView", "TritonLayoutView", "linear_layout_view"]
