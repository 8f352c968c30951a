"""Layout Workbench: see and measure CuTe-style tensor layouts.

``import workbench as wb`` gives the public API of DESIGN.md section 3: layouts and their
algebra, element types, ``from_dlpack`` / ``make_ptr`` / ``make_tensor``, the mdspan views,
and the kernel DSL.  The submodules' public names do not overlap (a test checks it).
"""

from .dsl import *  # noqa: F403
from .element_types import *  # noqa: F403
from .layout import *  # noqa: F403
from .mdspan import *  # noqa: F403
from .tensor import *  # noqa: F403

__version__ = "0.1.0"
