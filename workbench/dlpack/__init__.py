"""The DLPack bridge: ABI mirror, dtype table, import (consumer) and export (producer)."""

from .abi import *  # noqa: F401,F403  (the ABI names are the public surface of this package)
from .abi import __all__ as _abi_all
from .dtypes import dldtype_of, element_type_of

__all__ = list(_abi_all) + ["element_type_of", "dldtype_of"]
