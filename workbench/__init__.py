"""Layout Workbench: see and measure CuTe-style tensor layouts.

``import workbench as wb`` gives the public API of DESIGN.md section 3: layouts and their
algebra, element types, ``from_dlpack`` / ``make_ptr`` / ``make_tensor``, the mdspan views,
and the kernel DSL.
"""

from .element_types import *  # noqa: F401,F403
from .element_types import (  # noqa: F401
    Boolean, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Float16, Float32, Float64,
    BFloat16, Float8E3M4, Float8E4M3, Float8E4M3B11FNUZ, Float8E4M3FN, Float8E4M3FNUZ, Float8E5M2,
    Float8E5M2FNUZ, Float8E8M0FNU, Float6E2M3FN, Float6E3M2FN, Float4E2M1FN, Complex32, Complex64,
    Complex128, ElementType, vector_type,
)
from .layout import *  # noqa: F401,F403
from .layout import Dyn, Layout, make_layout, parse_layout, size, cosize, rank, depth  # noqa: F401
from .tensor import *  # noqa: F401,F403
from .mdspan import *  # noqa: F401,F403
from .dsl import *  # noqa: F401,F403

__version__ = "0.1.0"
