"""Exercises of notebook 05: thread/value layouts, swizzles and bank conflicts."""

import re

import workbench as wb

from . import exercise

_TILE32 = wb.make_layout((32, 32), stride=(32, 1))   # a row-major 32 x 32 tile


def _bms(answer):
    """(B, M, S) of a wb.Swizzle or of its text ``S<3,3,3>`` / ``Sw<3,3,3>`` (CuTe's spellings); else unchanged."""
    if type(answer) is wb.Swizzle:
        return (answer.bits, answer.base, answer.shift)
    if type(answer) is str:
        m = re.fullmatch(r"\s*Sw?\s*<\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*>\s*", answer)
        if m:
            return tuple(int(g) for g in m.groups())
    return answer


def _rows(copy_name, element_type, rows, cols):
    """One row per thread: 32 threads down the rows, ``cols`` values each, through ``copy_name``."""
    return wb.make_tiled_copy(wb.copy_atom(copy_name, element_type), (rows, 1), (1, cols))


@exercise("05.1", "Which (m, n) does thread 9 hold as value 3 of make_layout_tv((8,4):(4,1), (2,2):(2,1))?",
          hint="thread 9 stands at (2, 1) of the row-major thread grid and holds a whole 2x2 block, which starts at "
               "row 2*2, column 2*1; the values are numbered as val_layout numbers them (row-major here)")
def _():
    tiler_mn, tv = wb.make_layout_tv(wb.make_layout((8, 4), stride=(4, 1)), wb.make_layout((2, 2), stride=(2, 1)))
    return wb.idx2crd(tv((9, 3)), tiler_mn)


@exercise("05.2", "Design a padding: which is the smallest row stride (32 or more floats) that makes 32-bit loads, one row "
                  "per thread, of a 32x32 fp32 tile conflict-free?",
          hint="at each step the 32 threads read one column: row r starts in bank (r * stride) mod 32, and the 32 rows "
               "must land in 32 different banks")
def _():
    copy = _rows("UniversalCopy_U32", wb.Float32, 32, 32)
    return next(s for s in range(32, 128)
                if wb.bank_conflicts(copy, wb.make_layout((32, 32), stride=(s, 1))).max_ways == 1)


@exercise("05.3", "Which bank holds element (5, 0) of S<3,2,3> o (32,32):(32,1) in fp32?",
          hint="offset 5*32 = 160; bits 5..7 (the row mod 8, here 5) are XORed into bits 2..4; the bank of an fp32 "
               "offset is the offset mod 32")
def _():
    return wb.make_composed_layout(wb.Swizzle(3, 2, 3), 0, _TILE32)((5, 0)) % 32


@exercise("05.4", "How many ways is the worst conflict of 8-byte loads, one row per thread, on a row-major 32x32 fp32 tile?",
          hint="8-byte loads run in phases of 16 threads; the 16 rows are 128 bytes apart, so their 8 bytes fall in the "
               "same 2 banks")
def _():
    return wb.bank_conflicts(_rows("UniversalCopy_U64", wb.Float32, 32, 32), _TILE32).max_ways


@exercise("05.5", "Which Swizzle (B, M, S) does suggest_swizzle pick for 16-byte loads, one row per thread, of a "
                  "row-major 32x64 fp16 tile?",
          hint="M keeps 16 bytes whole (8 halves: 3 bits); a row is 128 bytes, 8 chunks of 16 bytes to permute by the "
               "row mod 8",
          accept=_bms)
def _():
    s = wb.suggest_swizzle(_rows("UniversalCopy_U128", wb.Float16, 32, 64), wb.make_layout((32, 64), stride=(64, 1)),
                           wb.Float16).swizzle
    return (s.bits, s.base, s.shift)


@exercise("05.6", "Inverse: local_partition of a 4 x 32 tile over the thread grid (4,8):(8,1) deals the elements out. "
                  "Which thread holds element (2, 13)?",
          hint="the grid is laid over the tile again and again: element (m, n) goes to the thread standing at "
               "(m mod 4, n mod 8) of the grid, and the grid's layout gives its number")
def _():
    ident = wb.make_identity_tensor((4, 32))
    thr = wb.make_layout((4, 8), stride=(8, 1))
    return next(t for t in range(32) if (2, 13) in list(wb.local_partition(ident, thr, t)))
