"""``ldmatrix`` (``SM75_*_LDSM_N/_T`` copy atoms, a warp): ``wb.copy(tiled_copy, src, dst)`` with such an atom loads
8x8 matrices of 16-bit values from shared memory into the warp's registers, each lane giving one 16-byte row.

CUDA: ``ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16``.  CPU: a
:class:`~workbench.dsl.scheduling.Collective` of the warp: the block of matrices is assembled through the atom's
``layout_src_tv`` and read out through ``layout_dst_tv``.
"""

from __future__ import annotations

from ...atoms.copy import CopyAtom
from .. import ir
from ..atoms_in_kernels import COPY_LOWERINGS, tv_indices
from ..backends.cpu import pyexpr
from ..backends.cuda import registers, saddr
from .vector_copy import aligned, chunk_start


class Ldmatrix(ir.Instruction):
    """``ldmatrix.sync.aligned.m8n8.x{n}[.trans].shared.b16``: this lane's source row starts at
    src_buf[src_off] (8 contiguous 16-bit elements); its destination registers are the 16-bit elements
    dst_buf[dst_offs] (static offsets, in the atom's value order)."""

    __slots__ = ("atom", "src_buf", "src_off", "dst_buf", "dst_offs")
    threads = 32

    def __init__(self, atom, src_buf, src_off, dst_buf, dst_offs):
        self.atom, self.src_buf, self.src_off, self.dst_buf, self.dst_offs = atom, src_buf, src_off, dst_buf, dst_offs

    def describe(self):
        return f"ldsm ({self.atom.name})"

    def cuda(self, em, d):
        atom = self.atom
        trans = ".trans" if atom.name.endswith("_T") else ""
        regs = registers(self.dst_buf, self.dst_offs, "B16")
        outs = ", ".join(f'"=r"({r})' for _, r in regs)
        ops = ", ".join(f"%{i}" for i in range(len(regs)))
        addr = saddr(self.src_buf, self.src_off)
        em.w(d, f'asm volatile("ldmatrix.sync.aligned.m8n8.x{atom.matrices}{trans}.shared.b16 {{{ops}}}, [%{len(regs)}];\\n" '
                f': {outs} : "r"({addr}));')

    def python(self, em, d):
        em.w(d, f"_r = yield _Collective({em.collective(self)}, ({self.src_buf.name}, {pyexpr(self.src_off)}))")
        for i, o in enumerate(self.dst_offs):
            em.w(d, f"{self.dst_buf.name}[{o}] = _r[{i}]")

    def emulate(self, lanes):
        return emulate_ldmatrix(self.atom, lanes)


def emulate_ldmatrix(atom: CopyAtom, lanes):
    """One ldmatrix of a warp: lanes[l] = (shared array, element offset) of lane l's row.  The block of matrices
    is assembled through layout_src_tv (a lane's row lands where the atom says; lanes whose rows an x1/x2 load
    ignores map onto earlier lanes' and are skipped) and read out through layout_dst_tv: each lane's values."""
    vs, vd = atom.num_val_src, atom.num_val_dst
    src = tv_indices(atom.layout_src_tv, 32, vs)
    dst = tv_indices(atom.layout_dst_tv, 32, vd)
    block = {}
    for lane, (arr, off) in enumerate(lanes):
        for v in range(vs):
            i = src[lane][v]
            if i not in block:
                if not 0 <= off + v < arr.shape[0]:
                    raise IndexError(f"ldmatrix ({atom.name}): lane {lane} reads shared memory element {off + v}, "
                                     f"outside the buffer of {arr.shape[0]}")
                block[i] = arr[off + v]
    return [tuple(block[i] for i in dst[lane]) for lane in range(32)]


def _ldsm(cx, atom, src, dst, js, jd, vs, vd, _pred):
    if src.buf.space != "smem" or dst.buf.space != "rmem":
        raise ValueError(f"copy({atom.name}): ldmatrix loads shared memory into registers, but got {src.buf.space} to "
                         f"{dst.buf.space}.")
    so = chunk_start(atom, src, js, vs, "source")
    if not aligned(src, so, 16):
        raise ValueError(f"copy({atom.name}): ldmatrix reads 16-byte rows, which must be 16-byte aligned; {src} does not "
                         "prove it.")
    do = [ir.binop("+", dst.offset, dst.layout(jd + v)) for v in range(vd)]
    if any(type(o) is not int for o in do):
        raise ValueError(f"copy({atom.name}): expected the destination at static register positions, but got {dst}.")
    per = max(1, 32 // dst.etype.bits)
    for g in range(0, vd, per):
        if do[g] % per or any(do[g + i] != do[g] + i for i in range(per)):
            raise ValueError(f"copy({atom.name}): each 32-bit register of ldmatrix holds {per} consecutive {dst.etype}, "
                             f"but the destination values {g}..{g + per - 1} lie at {do[g:g + per]}; retile the fragment "
                             "with the tiled copy (retile_D).")
    cx.require_arch(75, atom.name)
    cx.uses_collectives()
    return [Ldmatrix(atom, src.buf, ir.as_expr(so), dst.buf, do)]


COPY_LOWERINGS["ldsm"] = _ldsm
