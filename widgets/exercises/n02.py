"""Exercises of notebook 02 (inside DLPack: the capsule, its fields, ownership and the traps)."""

import numpy as np

import workbench as wb

from . import exercise


@exercise("02.1", "a = np.zeros((3, 5), np.float64)[:, ::2] has a.strides == (40, 16) (bytes). "
                  "What strides does its DLPack capsule carry?",
          hint="DLPack counts strides in elements, not bytes: divide by the element size (8 bytes for float64)")
def _():
    return wb.from_dlpack(np.zeros((3, 5), np.float64)[:, ::2]).stride


@exercise("02.2", "What (code, bits, lanes) does torch put in the capsule of a bfloat16 tensor?",
          hint="bfloat16 has its own type code in DLPack (kDLBfloat), 16 bits, one lane: "
               "DLPackInspector(torch.zeros(2, dtype=torch.bfloat16)).fields shows it")
def _():
    import torch

    from widgets import DLPackInspector

    f = DLPackInspector(torch.zeros(2, dtype=torch.bfloat16)).fields
    return (f.code, f.bits, f.lanes)


@exercise("02.3", "What strides does torch 2.13 hand over for torch.empty(3, 1, 5)?",
          hint="torch stores (and exports) the row-major strides it computed, the extent-1 mode included: "
               "nothing rewrites them to 1")
def _():
    import torch

    return wb.from_dlpack(torch.empty(3, 1, 5)).stride


@exercise("02.4", "t = wb.from_dlpack(np.arange(4.0)[::-1]). Which exception does t.__dlpack__() raise "
                  "(what torch.from_dlpack(t) would meet)?",
          hint="the export rule: a workbench tensor never hands negative strides to a consumer it cannot see; "
               "DLPack's own error for 'cannot export this' is what the spec asks for")
def _():
    t = wb.from_dlpack(np.arange(4.0)[::-1])
    try:
        t.__dlpack__(max_version=(1, 3))
    except Exception as e:  # the class is the answer
        return type(e)
    raise AssertionError("a negative-stride tensor was exported")


@exercise("02.5", "c = torch.tensor([1 + 2j, 3 - 1j]). Which does wb.from_dlpack refuse: 'a' = c.imag.neg(), "
                  "'b' = c.conj().imag? Answer 'a', 'b', 'both' or 'neither'.",
          hint="an ordinary operation computes new memory; a lazy view (conj, then .imag) keeps a negative bit "
               "that DLPack cannot carry")
def _():
    import torch

    c = torch.tensor([1 + 2j, 3 - 1j])
    refused = []
    for name, z in (("a", c.imag.neg()), ("b", c.conj().imag)):
        try:
            wb.from_dlpack(z)
        except BufferError:
            refused.append(name)
    return {0: "neither", 1: refused[0] if refused else "", 2: "both"}[len(refused)]
