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


@exercise("05.2", "How many wavefronts do 32-bit loads, one row per thread, need for a 32x32 fp32 tile with row stride 33?",
          hint="row r now starts in bank r (33 mod 32 = 1), so a column spreads over all 32 banks; the tile is still read "
               "in 32 steps of 32 threads")
def _():
    return wb.bank_conflicts(_rows("UniversalCopy_U32", wb.Float32, 32, 32), wb.make_layout((32, 32), stride=(33, 1))).total


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
