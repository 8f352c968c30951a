"""DLPackInspector: the DLPack capsule a live tensor produces, field by field, and its reading.

The inspector asks the object for a capsule exactly as a consumer does (``max_version=(1, 3)``,
then the legacy call), notes the capsule's name, consumes it with the workbench importer and
lists every field of the DLTensor (version, flags, device, dtype code/bits/lanes and its name,
shape, strides, byte_offset, data pointer).  Next to it: what ``wb.from_dlpack`` made of the
same object (element type, layout, memory space, alignment, read-only) and which path it took.
"""

from __future__ import annotations

import ctypes
import html

import ipywidgets as W

import workbench as wb
from workbench.dlpack import DLDataTypeCode, DLDeviceType
from workbench.dlpack.abi import (
    DLPACK_FLAG_BITMASK_IS_COPIED,
    DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
    DLPACK_FLAG_BITMASK_READ_ONLY,
)
from workbench.dlpack.dtypes import element_type_of
from workbench.dlpack.importer import consume, exchange_api_of

from .base import SvgFallback
from .canvas import LiveMark
from .svg import table_svg, vstack_svg

_GetName = ctypes.pythonapi.PyCapsule_GetName
_GetName.restype = ctypes.c_char_p
_GetName.argtypes = [ctypes.py_object]

_FLAGS = ((DLPACK_FLAG_BITMASK_READ_ONLY, "READ_ONLY"), (DLPACK_FLAG_BITMASK_IS_COPIED, "IS_COPIED"),
          (DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, "IS_SUBBYTE_TYPE_PADDED"))


def _enum_name(enum, value) -> str:
    try:
        return enum(value).name
    except ValueError:
        return "unknown"


def _capsule_of(obj):
    if type(obj).__name__ == "PyCapsule":
        return obj
    method = getattr(obj, "__dlpack__", None)
    if method is None:
        raise TypeError(f"Expected an object implementing __dlpack__ (or a DLPack capsule), but got {type(obj).__name__}.")
    try:
        return method(max_version=(1, 3))
    except TypeError:  # a producer from before DLPack 1.0 does not know max_version
        return method()


class DLPackInspector(SvgFallback, W.VBox):
    """``DLPackInspector(obj)``: ``capsule_rows()`` and ``interpretation_rows()`` are the two tables."""

    def __init__(self, obj):
        self._kind = f"{type(obj).__module__.split('.')[0]}.{type(obj).__name__}"
        capsule = _capsule_of(obj)
        self._capsule_name = _GetName(capsule).decode()
        self._imported = consume(capsule)      # renames the capsule to used_*; deleter runs once, later
        self._error = ""
        self._tensor = None
        if type(obj).__name__ != "PyCapsule":
            try:
                self._tensor = wb.from_dlpack(obj)
            except (BufferError, ValueError, TypeError) as e:
                self._error = f"{type(e).__name__}: {e}"
        self._exchange = exchange_api_of(type(obj)) is not None
        self.capsule_html = W.HTML(self._table_html(self.capsule_rows()))
        self.interpretation_html = W.HTML(self._table_html(self.interpretation_rows(), self._error))
        super().__init__([W.HTML("<b>DLPack capsule</b>"), self.capsule_html,
                          W.HTML("<b>wb.from_dlpack reads it as</b>"), self.interpretation_html, LiveMark()])

    @property
    def fields(self):
        """The importer's raw fields (a NamedTuple: version, flags, data, device_type, ...)."""
        return self._imported.fields

    @property
    def dltensor(self):
        """The ctypes DLTensor (valid while this inspector lives)."""
        return self._imported.dltensor

    def capsule_rows(self) -> list[tuple[str, str]]:
        f = self._imported.fields
        flags = [name for bit, name in _FLAGS if f.flags & bit]
        try:
            et = element_type_of(f.code, f.bits, f.lanes).name
        except (ValueError, TypeError) as e:
            et = f"not representable ({e})"
        return [
            ("producer", self._kind),
            ("capsule name", self._capsule_name),
            ("version", "legacy (no version field)" if f.version is None else f"{f.version[0]}.{f.version[1]}"),
            ("flags", f"{f.flags:#x}" + (f" ({' | '.join(flags)})" if flags else "")),
            ("device", f"({f.device_type}, {f.device_id}) {_enum_name(DLDeviceType, f.device_type)}"),
            ("dtype", f"code {f.code} ({_enum_name(DLDataTypeCode, f.code)}), bits {f.bits}, lanes {f.lanes} -> {et}"),
            ("ndim", str(f.ndim)),
            ("shape", "NULL" if f.shape is None else str(tuple(f.shape))),
            ("strides", "NULL (row-major)" if f.strides is None else str(tuple(f.strides)) + " elements"),
            ("byte_offset", str(f.byte_offset)),
            ("data", "NULL" if not f.data else f"{f.data:#018x}"),
        ]

    def interpretation_rows(self) -> list[tuple[str, str]]:
        t = self._tensor
        if t is None:
            return [("from_dlpack", "not applied (a raw capsule)" if not self._error else "refused")]
        return [
            ("path", "exchange API (no capsule)" if self._exchange else "capsule"),
            ("tensor", str(t)),
            ("element_type", t.element_type.name),
            ("layout", str(t.layout)),
            ("memspace", t.memspace),
            ("data_ptr", f"{t.data_ptr:#018x} (data + byte_offset)"),
            ("assumed_align", f"{t.assumed_align} bytes"),
            ("leading_dim", str(t.leading_dim)),
            ("read_only", str(t.read_only)),
            ("is_copied", str(t.is_copied)),
        ]

    @staticmethod
    def _table_html(rows, error: str = "") -> str:
        body = "".join(f"<tr><td style='color:var(--jp-ui-font-color2, #555555);padding-right:1em'>{html.escape(k)}</td>"
                       f"<td><code>{html.escape(v)}</code></td></tr>" for k, v in rows)
        err = f"<div class='wb-error' style='color:var(--jp-error-color1, #d7191c);overflow-wrap:anywhere'><code>{html.escape(error)}</code></div>" if error else ""
        return f"<table class='wb-dlpack'>{body}</table>{err}"

    def to_svg(self) -> str:
        return vstack_svg([table_svg("DLPack capsule", self.capsule_rows()),
                           table_svg("wb.from_dlpack reads it as", self.interpretation_rows(), self._error)])

    def __repr__(self) -> str:
        f = self._imported.fields
        return f"DLPackInspector({self._kind}, {self._capsule_name}, shape={f.shape})"
