"""The Hopper operand views: a GMMA descriptor and a TMA box, each its fields over the shared layout it stands for.

``GmmaDescView(desc, tile)``: the 64-bit word's fields (start, LBO, SBO, swizzle mode, the word itself) above the
operand tile as a (MN, K) grid, each cell the element offset the descriptor's walk reads it from (the tile's own
offset: ``make_gmma_desc`` proved them equal), coloured by *core matrix* (8 rows of 16 bytes, the unit LBO and SBO
step between).  ``TmaBoxView(tma)``: the descriptor's fields in the driver's terms (dimensions innermost first)
above the box's shared layout coloured by 16-byte chunk, so that a swizzle shows as chunks changing places row by
row.  Both are a LayoutView underneath (any size, hover read-outs, the same static picture).
"""

from __future__ import annotations

import html

import ipywidgets as W

import workbench as wb
from workbench.atoms.gmma_desc import GmmaDescriptor, check_reads

from .base import SvgFallback
from .layout_view import LayoutView
from .svg import table_svg, vstack_svg

_BY_BITS = {8: wb.Int8, 16: wb.Float16, 32: wb.Float32}


# the driver's CUtensorMapDataType, named (a bare code teaches nothing)
TMA_DATA_TYPES = ("UINT8", "UINT16", "UINT32", "INT32", "UINT64", "INT64", "FLOAT16", "FLOAT32", "FLOAT64", "BFLOAT16",
                  "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ", "16U4_ALIGN8B", "16U4_ALIGN16B", "16U6_ALIGN16B")


def _header_html(rows) -> str:
    # sized to its content (the names' column as wide as the longest name, the values right after it), compact rows
    body = "".join(f"<tr><td style='color:var(--jp-ui-font-color2, #555555);padding:0 1em 0 0;vertical-align:top;"
                   f"white-space:nowrap'>{html.escape(k)}</td><td style='padding:0;overflow-wrap:break-word'>"
                   f"<code style='white-space:pre-wrap'>{html.escape(v)}</code></td></tr>" for k, v in rows)
    return (f"<table class='wb-fields' style='table-layout:auto;width:auto;max-width:100%;border-collapse:collapse;"
            f"line-height:1.35'>{body}</table>")


class _FieldsOverGrid(SvgFallback, W.VBox):
    """A table of fields above a LayoutView (``.layout_view``); each view gives its ``title`` and ``rows()``."""

    title = ""

    def _build(self, layout_view: LayoutView):
        self.layout_view = layout_view
        self.info = W.HTML(_header_html(self.rows()))
        W.VBox.__init__(self, [self.info, layout_view])

    def to_svg(self) -> str:
        return vstack_svg([table_svg(self.title, self.rows()), self.layout_view.to_svg()])


class GmmaDescView(_FieldsOverGrid):
    """``GmmaDescView(desc, tile)``: ``desc`` from ``make_gmma_desc(tile, bits, major, mn, k)``, ``tile`` the layout
    it was made from (one wgmma's k-block of an operand: index ``x + mn * y`` is element (x, y))."""

    title = "GMMA descriptor"

    def __init__(self, desc: GmmaDescriptor, tile):
        if type(desc) is not GmmaDescriptor:
            raise TypeError(f"Expected a GmmaDescriptor (make_gmma_desc(tile, ...)), but got {type(desc).__name__}.")
        check_reads(desc, tile, "GmmaDescView")     # the caption says the descriptor reads these cells
        self.desc = desc
        per_row = 128 // desc.element_bits      # elements in a core matrix's 16-byte row
        self.core_matrix = (8, per_row) if desc.major == "K" else (per_row, 8)
        grid = wb.composition(tile, wb.make_layout((desc.mn, desc.k)))   # cell (x, y) = tile(x + mn * y)
        self._build(LayoutView(grid, color_by="tile", tile=self.core_matrix,
                               element_type=_BY_BITS[desc.element_bits]))

    def rows(self) -> list[tuple[str, str]]:
        d = self.desc
        f = d.fields()
        swz = "none (interleaved)" if not d.swizzle_bits else f"Swizzle<{d.swizzle_bits},4,3> on byte addresses"
        if d.major == "K":
            lbo = ("to the core matrix next along K" if not d.swizzle_bits
                   else "unused: a swizzled row holds the k-block's K")
            sbo = "to the next 8 rows along MN"
        else:
            lbo = ("to the core matrix next along K" if not d.swizzle_bits
                   else "to the next swizzle-row group along MN")
            sbo = "to the next 8 along MN" if not d.swizzle_bits else "to the next 8 along K"
        r, c = self.core_matrix
        return [("operand", f"{d.mn} x {d.k} of {d.element_bits}-bit, {d.major}-major"),
                ("swizzle", f"{d.swizzle} ({swz}); buffer aligned to {d.alignment} B"),
                ("start", f"{d.start} B from the buffer (bits 0-13 hold (address + start) / 16)"),
                ("LBO", f"{d.lbo} B: {lbo}"),
                ("SBO", f"{d.sbo} B: {sbo}"),
                ("word", f"{f['word']} (buffer at shared address 0)"),
                ("cells", f"the element offset the walk reads; colour: core matrices of {r} x {c} elements")]

    def __repr__(self) -> str:
        return f"GmmaDescView({self.desc!r})"


class TmaBoxView(_FieldsOverGrid):
    """``TmaBoxView(tma)``: a ``wb.make_tma_load`` descriptor's fields and the shared layout of its box."""

    title = "TMA box"

    def __init__(self, tma):
        from workbench.dsl.ops.tma import TmaLoad
        if type(tma) is not TmaLoad:
            raise TypeError(f"Expected a TMA descriptor (wb.make_tma_load(tensor, smem_layout)), but got "
                            f"{type(tma).__name__}.")
        self.tma = tma
        self._build(LayoutView(tma.smem_layout, color_by="chunk", element_type=tma.element_type))

    def rows(self) -> list[tuple[str, str]]:
        t = self.tma
        rows = [(k, str(v)) for k, v in t.fields().items() if k != "global_address"]   # a pointer: run to run
        rows = [(k, f"{v} (CU_TENSOR_MAP_DATA_TYPE_{TMA_DATA_TYPES[int(v)]})" if k == "data_type" and v.isdigit()
                 and int(v) < len(TMA_DATA_TYPES) else v) for k, v in rows]
        rows.append(("box", f"{t.box} ({t.nbytes} bytes, what arrive_and_expect_tx announces)"))
        rows.append(("cells", "each element's offset in shared memory; colour: its 16-byte chunk of the 128-byte row"))
        return rows

    def __repr__(self) -> str:
        return f"TmaBoxView({self.tma!r})"
