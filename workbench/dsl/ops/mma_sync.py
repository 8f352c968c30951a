"""``mma.sync`` (SM75/SM80/SM89 tensor-core atoms, a warp): ``wb.gemm(tiled_mma, d, a, b, c)`` with such an atom
issues one ``mma.sync.aligned`` per (m, n, k) of the fragments, k outermost and n in serpentine order (CuTe's,
reusing a's registers).

CUDA: inline PTX over 32-bit registers made of the fragments' elements (16-bit values in pairs, 8-bit in fours, as
the atom's value order puts them), f32/s32 accumulators one register each.  CPU: a
:class:`~workbench.dsl.scheduling.Collective` of the warp; the tiles are assembled through the atom's
``tv_layout_A/B/C`` (what the views draw), D = A B^T + C computed exactly and rounded once, scattered back.
"""

from __future__ import annotations

import struct

from ..._element_types import BY_CUTE_CODE
from ...atoms.mma import MMAAtom
from .. import ir
from ..atoms_in_kernels import (
    GEMM_LOWERINGS,
    check_fragments,
    check_register_pairs,
    decode_register,
    register_offsets,
    tv_indices,
)
from ..backends.cuda import registers


def _ptx_types(atom):
    """(D, A, B, C) PTX types of an atom: the element-type table's ptx of the types its name spells."""
    return tuple(BY_CUTE_CODE[c].ptx for c in atom.type_codes)


def mma_ptx(atom: MMAAtom) -> str:
    """The PTX instruction (without operands) of an SM75/SM80/SM89 atom, e.g.
    ``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32``."""
    m, n, k = atom.shape_mnk
    d, a, b, c = _ptx_types(atom)
    sat = ".satfinite" if atom.name.endswith("_SATURATE") else ""
    return f"mma.sync.aligned.m{m}n{n}k{k}.row.col{sat}.{d}.{a}.{b}.{c}"


class MmaSync(ir.Instruction):
    """One warp-wide ``mma.sync`` of ``atom``: each operand is (register buffer, [static element offsets in the
    atom's value order]).  Every lane of the warp executes it together."""

    __slots__ = ("atom", "d", "a", "b", "c")
    threads = 32

    def __init__(self, atom, d, a, b, c):
        self.atom, self.d, self.a, self.b, self.c = atom, d, a, b, c

    def describe(self):
        return f"mma ({self.atom.name})"

    def cuda(self, em, d):
        atom = self.atom
        outs, ins = [], []
        for (buf, offs), code, out in ((self.d, atom.type_codes[0], True), (self.a, atom.type_codes[1], False),
                                       (self.b, atom.type_codes[2], False), (self.c, atom.type_codes[3], False)):
            regs = registers(buf, offs, code)
            (outs if out else ins).append([(("=" if out else "") + c, r) for c, r in regs])
        n = 0
        groups = []
        for ops in outs + ins:
            groups.append("{" + ", ".join(f"%{n + i}" for i in range(len(ops))) + "}")
            n += len(ops)
        text = f"{mma_ptx(atom)} {', '.join(groups)};"
        o = ", ".join(f'"{c}"({r})' for c, r in outs[0])
        i = ", ".join(f'"{c}"({r})' for ops in ins for c, r in ops)
        em.w(d, f'asm volatile("{text}\\n" : {o} : {i});')

    def python(self, em, d):
        regs = []
        for buf, offs in (self.a, self.b, self.c):
            regs.append("(" + "".join(f"{buf.name}.item({o}), " for o in offs) + ")")
        em.w(d, f"_r = yield _Collective({em.collective(self)}, ({', '.join(regs)}))")
        db, do = self.d
        for i, o in enumerate(do):
            em.w(d, f"{db.name}[{o}] = _r[{i}]")

    def emulate(self, lanes):
        return emulate_mma(self.atom, lanes)


def emulate_mma(atom: MMAAtom, lanes):
    """One mma.sync of a warp: lanes[l] = (a values, b values, c values) of lane l in the atom's value order.
    The tiles are assembled through tv_layout_A/B/C (what the views draw), D = A B^T + C computed exactly
    (floats in float64, integers as ints) and rounded once to D's type, and scattered back the same way:
    returns each lane's d values."""
    M, N, K = atom.shape_mnk
    dcode, acode, bcode, _ = atom.type_codes
    is_int = dcode == "S32"
    zero = 0 if is_int else 0.0
    A = [[zero] * K for _ in range(M)]
    B = [[zero] * K for _ in range(N)]
    C = [[zero] * N for _ in range(M)]
    ia = tv_indices(atom.tv_layout_A, 32, atom.tv_layout_A[1].size)
    ib = tv_indices(atom.tv_layout_B, 32, atom.tv_layout_B[1].size)
    ic = tv_indices(atom.tv_layout_C, 32, atom.tv_layout_C[1].size)
    for lane, (av, bv, cv) in enumerate(lanes):
        for v, x in enumerate(av):
            i = ia[lane][v]
            A[i % M][i // M] = decode_register(acode, x)
        for v, x in enumerate(bv):
            i = ib[lane][v]
            B[i % N][i // N] = decode_register(bcode, x)
        for v, x in enumerate(cv):
            i = ic[lane][v]
            C[i % M][i // M] = x
    D = [[C[m][n] + sum(A[m][k] * B[n][k] for k in range(K)) for n in range(N)] for m in range(M)]
    if is_int:
        lo, hi = -(1 << 31), (1 << 31) - 1
        sat = atom.name.endswith("_SATURATE")
        D = [[(min(max(x, lo), hi) if sat else ((x - lo) % (1 << 32)) + lo) for x in row] for row in D]
    elif dcode == "F32":
        D = [[struct.unpack("<f", struct.pack("<f", x))[0] for x in row] for row in D]
    return [tuple(D[i % M][i // M] for i in ic[lane]) for lane in range(32)]


def _gemm(cx, tiled_mma, atom, d, a, b, c):
    """The atom calls of wb.gemm: one mma.sync per (m, n, k), k outermost, n serpentine."""
    am, bm, cm, dm, M, N, K = check_fragments(atom, d, a, b, c)
    cx.require_arch(atom.arch, atom.name)
    for k in range(K):
        for m in range(M):
            for nn in range(N):
                n = nn if m % 2 == 0 else N - 1 - nn      # serpentine
                ao = register_offsets(a, am[0], am[1](m) + am[2](k), "a")
                bo = register_offsets(b, bm[0], bm[1](n) + bm[2](k), "b")
                co = register_offsets(c, cm[0], cm[1](m) + cm[2](n), "c")
                do = register_offsets(d, dm[0], dm[1](m) + dm[2](n), "d")
                for buf, offs, w in ((a.buf, ao, "a"), (b.buf, bo, "b"), (c.buf, co, "c"), (d.buf, do, "d")):
                    check_register_pairs(atom, buf, offs, w)
                cx.emit(MmaSync(atom, (d.buf, do), (a.buf, ao), (b.buf, bo), (c.buf, co)))
    cx.mark_written(d.buf)
    cx.uses_collectives()


GEMM_LOWERINGS["mma.sync"] = _gemm
