"""Warpgroup MMA (``wgmma.mma_async``, SM90 GMMA atoms): ``wb.gemm(tiled_mma, acc, a, b, acc)`` with such an atom
issues one wgmma per (m, n, k) of the partitions, A and B read from shared memory through descriptors proven against
the tiles while tracing (``workbench.atoms.gmma_desc``), or A from registers (RS atoms); ``wb.warpgroup_fence()``,
``wb.warpgroup_commit_group()``, ``wb.warpgroup_wait_group(n)``.

CUDA: the accumulators in place ("+f"/"+r"), descriptors built from each tile's shared address and the static
fields, and CUTLASS's ``warpgroup_fence_operand`` around fence and wait so the compiler keeps the accumulator
registers where the asynchronous MMAs write them.  CPU: a :class:`~workbench.dsl.scheduling.Collective` of the
warpgroup (128 threads); A and B are read through the descriptors' own addressing, D = A B^T + C computed exactly
and rounded once, the accumulators gathered and scattered through ``tv_layout_C``.  The executor completes a wgmma
at issue, so it cannot catch an accumulator read before ``warpgroup_wait_group``.
"""

from __future__ import annotations

import numpy as np

from ... import _element_types as et
from ..._element_types import BY_CUTE_CODE
from ...atoms.gmma_desc import make_gmma_desc
from ...atoms.mma import MMAAtom
from ...layout import ComposedLayout, Layout, Swizzle, divisibility_of
from .. import ir
from ..atoms_in_kernels import (
    GEMM_LOWERINGS,
    check_register_pairs,
    decode_register,
    modes3,
    register_offsets,
    same_type,
    tv_indices,
)
from ..backends.cpu import pyexpr
from ..backends.cuda import expr, registers
from ..builtins import builtin, static_group_count
from ..views import KTensor


class Wgmma(ir.Instruction):
    """``wgmma.mma_async`` of a GMMA atom by a warpgroup: acc = (register buffer, static offsets in the atom's
    C order), accumulated in place; a and b = (shared buffer, element offset of the tile's aligned base,
    :class:`~workbench.atoms.gmma_desc.GmmaDescriptor` of the tile from there), or for an RS atom a =
    (register buffer, offsets, None); scale_d = an Int32 expression, the instruction's scale-d predicate
    (0: D = A B^T, the accumulators' old values ignored)."""

    __slots__ = ("atom", "acc", "a", "b", "scale_d")
    threads = 128

    def __init__(self, atom, acc, a, b, scale_d=None):
        self.atom, self.acc, self.a, self.b = atom, acc, a, b
        self.scale_d = ir.as_expr(1) if scale_d is None else scale_d

    @property
    def name(self):
        return self.atom.name

    def describe(self):
        return f"wgmma ({self.atom.name})"

    def cuda(self, em, d):
        """wgmma.mma_async: the accumulators in place ("+f"/"+r"), A and B as descriptors built from each tile's
        shared address and the static fields proven while tracing."""
        atom = self.atom
        head, tail = wgmma_ptx(atom)
        buf, offs = self.acc
        regs = registers(buf, offs, atom.type_codes[0])
        a_regs = registers(self.a[0], self.a[1], atom.type_codes[1]) if self.a[2] is None else []   # RS: A in registers
        descs = []
        for sbuf, base, desc in (self.a, self.b) if not a_regs else (self.b,):
            n = em.fresh("_desc")
            # the start field, (address + start) >> 4, as (buffer >> 4 | the static low word), hoisted out of the
            # loops by the compiler, plus (tile offset >> 4) + start / 16, one add in the k-loop: the same sum,
            # since a shared buffer and start are 16-byte aligned, and no carry out of the 14-bit field, since
            # shared memory ends below 256 KiB (where the 64-bit (address + start) >> 4 & mask | bits took eight)
            st, lo, hi = desc.static_bits(), desc.static_bits() & 0xFFFFFFFF, desc.static_bits() >> 32
            assert desc.start % 16 == 0 and lo & 0x3FFF == 0, (desc.start, hex(st))
            nb = sbuf.etype.bits // 8
            em.w(d, f"const unsigned long long {n} = (0x{hi:08x}ull << 32) | (unsigned)(((((unsigned)"
                    f"__cvta_generic_to_shared({sbuf.name})) >> 4) | 0x{lo:08x}u) + ((unsigned)(({expr(base)}) * {nb}) >> 4)"
                    f" + {desc.start // 16}u);")
            descs.append(n)
        nr = len(regs)
        sd = (str(int(self.scale_d.value)) if type(self.scale_d) is ir.Const
              else f"(int)({expr(self.scale_d)})")
        acc = "{" + ", ".join(f"%{i}" for i in range(nr)) + "}"
        outs = ", ".join(f'"+{c}"({r})' for c, r in regs)
        if a_regs:
            na = len(a_regs)
            a_op = "{" + ", ".join(f"%{nr + i}" for i in range(na)) + "}"
            ops = f"{acc}, {a_op}, %{nr + na}, p" + (f", {tail}" if tail else "")
            text = f"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{nr + na + 1}, 0;\\n{head} {ops};\\n}}\\n"
            ins = ", ".join(f'"{c}"({r})' for c, r in a_regs)
            em.w(d, f'asm volatile("{text}" : {outs} : {ins}, "l"({descs[0]}), "r"({sd}));')
            return
        ops = f"{acc}, %{nr}, %{nr + 1}, p" + (f", {tail}" if tail else "")
        text = f"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{nr + 2}, 0;\\n{head} {ops};\\n}}\\n"
        em.w(d, f'asm volatile("{text}" : {outs} : "l"({descs[0]}), "l"({descs[1]}), "r"({sd}));')

    def python(self, em, d):
        (ab, ao, da), (bb, bo, _) = self.a, self.b
        buf, offs = self.acc
        acc = "(" + "".join(f"{buf.name}.item({o}), " for o in offs) + ")"
        if da is None:   # RS: the thread's A registers, by value
            a_op = "(" + "".join(f"{ab.name}.item({o}), " for o in ao) + "), None"
        else:
            a_op = f"{ab.name}, {pyexpr(ao)}"
        em.w(d, f"_r = yield _Collective({em.collective(self)}, ({a_op}, {bb.name}, {pyexpr(bo)}, {acc}, "
                f"{pyexpr(self.scale_d)}))")
        for i, o in enumerate(offs):
            em.w(d, f"{buf.name}[{o}] = _r[{i}]")

    def emulate(self, lanes):
        return emulate_wgmma(self, lanes)


def _accumulators(em):
    """(accumulator buffer, C type code) of every wgmma of the kernel, once: fenced around fence and wait."""
    accs = em.state.get("wgmma_accs")
    if accs is None:
        accs = em.state["wgmma_accs"] = []

        def walk(stmts):
            for s in stmts:
                if type(s) is Wgmma and all(b is not s.acc[0] for b, _ in accs):
                    accs.append((s.acc[0], s.atom.type_codes[0]))
                for sub in ("then", "orelse", "body"):
                    if hasattr(s, sub):
                        walk(getattr(s, sub))
        walk(em.kernel.body)
    return accs


def _fence_accumulators(em, d):
    """CUTLASS's warpgroup_fence_operand: the compiler may not move reads or writes of the accumulator registers
    across the asynchronous MMAs' fence and wait."""
    for buf, code in _accumulators(em):
        for c, r in registers(buf, list(range(buf.count)), code):
            em.w(d, f'asm volatile("" : "+{c}"({r}) :: "memory");')


class WgmmaFence(ir.Instruction):
    """``wgmma.fence``: registers written before it are what the next wgmma reads."""

    __slots__ = ()

    def cuda(self, em, d):
        _fence_accumulators(em, d)
        em.w(d, 'asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");')

    def python(self, em, d):
        pass   # the executor's wgmma complete at issue


class WgmmaCommit(ir.Instruction):
    """``wgmma.commit_group``: the wgmma issued since the last commit form one group."""

    __slots__ = ()

    def cuda(self, em, d):
        em.w(d, 'asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");')

    def python(self, em, d):
        pass


class WgmmaWait(ir.Instruction):
    """``wgmma.wait_group n``: at most n groups in flight; the accumulators of the others are final."""

    __slots__ = ("n",)

    def __init__(self, n):
        self.n = n

    def cuda(self, em, d):
        _fence_accumulators(em, d)
        em.w(d, f'asm volatile("wgmma.wait_group.sync.aligned {self.n};\\n" ::: "memory");')
        _fence_accumulators(em, d)

    def python(self, em, d):
        pass


@builtin
def warpgroup_fence(cx):
    """``wgmma.fence``: registers written before it are what the next wgmma reads (``wb.gemm`` with a GMMA atom
    also issues it)."""
    cx.uses_collectives()
    cx.emit(WgmmaFence())


@builtin
def warpgroup_commit_group(cx):
    """``wgmma.commit_group``: the wgmma this warpgroup issued since the last commit form one group."""
    cx.emit(WgmmaCommit())


@builtin
def warpgroup_wait_group(cx, n):
    """``wgmma.wait_group n``: at most n groups in flight; the accumulators of the others are final."""
    cx.emit(WgmmaWait(static_group_count(n, "warpgroup_wait_group")))


# -- wb.gemm with a GMMA atom --------------------------------------------------------------------------------
def _smem_operand(t: KTensor, which, atom):
    """(inner swizzle or None, base element offset expression, [mode layouts V, MN, K]) of a GMMA operand."""
    if type(t) is not KTensor or t.buf.space != "smem":
        raise ValueError(f"gemm({atom.name}): an SS GMMA atom reads {which} from shared memory through a descriptor: pass "
                         f"thr_mma.partition_{which}(shared tile), but got {t}.")
    lay = t.layout
    sw, inner_off = None, 0
    if type(lay) is ComposedLayout:
        sw, inner_off, lay = lay.inner, lay.offset, lay.outer
    r = lay.rank if type(lay.shape) is tuple else 1
    if r > 3:
        raise ValueError(f"gemm({atom.name}): expected {which} of rank <= 3 (V, {'M' if which == 'A' else 'N'}, K), but got {t}.")
    modes = [lay[i] for i in range(r)] if r > 1 else [lay]
    modes += [Layout(1, 0)] * (3 - r)
    return sw, inner_off, modes


def gemm_gmma(cx, tiled_mma, atom: MMAAtom, d, a, b, c, accumulate=True):
    """wb.gemm with an SM90 GMMA atom: one wgmma.mma_async per (m, n, k) of the partitions, accumulating in place;
    ``accumulate=False`` (static or a run-time condition, the same in every thread of the warpgroup): the first
    k-block's wgmma ignore the accumulators' old values (the instruction's scale-d), so no ``acc.fill(0.0)`` is
    needed (CuTe DSL: ``tiled_mma.set(warpgroup.Field.ACCUMULATE, False)``)."""
    rs = atom.a_source == "rmem"      # an RS atom: A from the warpgroup's registers, B through a descriptor
    if rs and a.buf.space != "rmem":
        raise ValueError(f"gemm({atom.name}): an RS atom reads A from registers: pass a fragment "
                         f"(tiled_mma.make_fragment_A, filled from shared memory), but got {a}.")
    if d.buf is not c.buf or d.offset != c.offset or str(d.layout) != str(c.layout):
        raise ValueError(f"gemm({atom.name}): wgmma accumulates in place: pass the same fragment as d and c "
                         "(wb.gemm(tiled_mma, acc, a, b, acc)); start from acc.fill(0.0).")
    same_type(c, atom.c_type, atom, "C")
    if rs:
        swa, offa, am = None, 0, modes3(a, "a", "V, M, K")
    else:
        swa, offa, am = _smem_operand(a, "A", atom)
    swb, offb, bm = _smem_operand(b, "B", atom)
    for t, w in ((a, "A"), (b, "B")):
        want = atom.a_type if w == "A" else atom.b_type
        if t.etype.bits != want.bits or (t.etype is not want and not (want is et.TFloat32 and t.etype is et.Float32)):
            raise TypeError(f"gemm({atom.name}): the atom's {w} operand is {want}, but the "
                            f"{'fragment' if rs and w == 'A' else 'shared tile'} holds {t.etype}.")
    M_atom, N_atom, K_atom = atom.shape_mnk
    cm = modes3(c, "c", "V, M, N")
    M, N, K = am[1].size, bm[1].size, am[2].size
    if bm[2].size != K:
        raise ValueError(f"gemm({atom.name}): A has {K} k-blocks but B has {bm[2].size}.")
    vc = atom.tv_layout_C[1].size
    va = atom.tv_layout_A[1].size if rs else M_atom * K_atom     # a thread's A values, or the whole tile
    for modes, want, w in ((am, (va, M, K), "a"), (bm, (N_atom * K_atom, N, K), "b"),
                           (cm, (vc, M, N), "c")):
        got = tuple(x.size for x in modes)
        if got != want:
            raise ValueError(f"gemm({atom.name}): expected {w} of shape (V, ...) = {want}, but got {got}; partition the "
                             f"shared tiles with thr_mma.partition_A/B and the accumulator with make_fragment_C.")
    bits = a.etype.bits
    ops = {}
    for t, sw, inner_off, w in ((a, swa, offa, "A"), (b, swb, offb, "B")) if not rs else ((b, swb, offb, "B"),):
        period = sw.size * (bits // 8) if sw is not None and sw.bits else 16
        outer_dyn, outer_static = _peel(t.offset)
        inner_dyn, inner_static = _peel(inner_off)
        for x, what in ((outer_dyn, "offset"), (outer_static, "offset"), (inner_dyn, "offset inside the swizzle")):
            dv = divisibility_of(x) if x != 0 else 1 << 30
            if (dv * bits // 8) % period:
                raise ValueError(f"gemm({atom.name}): the {w} tile's {what} {x} must be a multiple of the swizzle's "
                                 f"period ({period} bytes) so that the descriptor's swizzle is the tile's, but it is only "
                                 f"known to be a multiple of {dv * bits // 8} bytes; pass a whole stage "
                                 f"(tCs{w}[None, None, None, stage]) and let wb.gemm walk its k-blocks.")
        if t.buf.align < period:
            raise ValueError(f"gemm({atom.name}): the {w} tile's buffer must be {period}-byte aligned for the "
                             f"descriptor's swizzle, but it is {t.buf.align}-byte aligned.")
        ops[w] = (t, sw, ir.as_expr(ir.binop("+", t.offset, inner_dyn)), inner_static)
    cx.scalar(accumulate, "accumulate (True, False or a condition)")
    acc0 = (ir.cast(ir.as_expr(accumulate), ir.Int32) if isinstance(accumulate, ir.Expr)
            else ir.as_expr(int(bool(accumulate))))
    cx.require_arch(90, atom.name)
    cx.uses_collectives()
    cx.emit(WgmmaFence())
    for k in range(K):
        for m in range(M):
            for n in range(N):
                descs = []
                if rs:   # the thread's A values of this call, 32-bit registers of contiguous values
                    ao = register_offsets(a, am[0], am[1](m) + am[2](k), "a")
                    check_register_pairs(atom, a.buf, ao, "A")
                    descs.append((a.buf, tuple(ao), None))
                for w, modes, mn, idx in (("A", am, M_atom, m), ("B", bm, N_atom, n))[1 if rs else 0:]:
                    t, sw, base, static = ops[w]
                    off = static + modes[1](idx) + modes[2](k)
                    tile = ComposedLayout(sw, off, modes[0]) if sw is not None else \
                        (ComposedLayout(_NOSWIZZLE, off, modes[0]) if off else modes[0])
                    major = atom.major_a if w == "A" else atom.major_b
                    try:
                        desc = make_gmma_desc(tile, bits, major, mn, K_atom)
                    except ValueError as e:
                        raise ValueError(f"gemm({atom.name}), operand {w} (call m={m}, n={n}, k={k}): {e}") from None
                    descs.append((t.buf, base, desc))
                co = register_offsets(c, cm[0], cm[1](m) + cm[2](n), "c")
                cx.emit(Wgmma(atom, (c.buf, co), descs[0], descs[1], acc0 if k == 0 else None))
    cx.mark_written(c.buf)


def _peel(x):
    """(dynamic part, static int) of an offset expression x == dynamic + static (constants of its sums)."""
    if type(x) is int:
        return 0, x
    if type(x) is ir.Const and type(x.value) is int:
        return 0, x.value
    if type(x) is ir.BinOp and x.op == "+":
        da, sa = _peel(x.a)
        db, sb = _peel(x.b)
        return ir.binop("+", da, db), sa + sb
    return x, 0


_NOSWIZZLE = Swizzle(0, 4, 3)   # an identity swizzle: carries a static offset into an unswizzled tile
GEMM_LOWERINGS["wgmma"] = gemm_gmma


def wgmma_ptx(atom: MMAAtom) -> tuple:
    """(instruction, operands after the descriptors) of a GMMA atom's wgmma."""
    m, n, k = atom.shape_mnk
    d, a, b = (BY_CUTE_CODE[c].ptx for c in atom.type_codes[:3])
    sat = ".satfinite" if atom.name.endswith("_SATURATE") else ""
    head = f"wgmma.mma_async.sync.aligned.m{m}n{n}k{k}{sat}.{d}.{a}.{b}"
    if a in ("f16", "bf16") and atom.a_source == "rmem":   # A from registers is K-major: no transpose bit for it
        tail = f"1, 1, {int(atom.major_b == 'MN')}"
    elif a in ("f16", "bf16"):
        tail = f"1, 1, {int(atom.major_a == 'MN')}, {int(atom.major_b == 'MN')}"
    elif a in ("s8", "u8"):
        tail = ""
    else:
        tail = "1, 1"
    return head, tail


# -- what the CPU executor runs ---------------------------------------------------------------------------
def emulate_wgmma(stmt, lanes):
    """One wgmma of a warpgroup: lanes[l] = (A array, A base, B array, B base, accumulators, scale-d) of thread l.  A and B
    are read through the descriptors' addressing (``GmmaDescriptor.address``, the hardware's walk), the tile
    D = A B^T + C computed exactly and rounded once, the accumulators gathered and scattered through
    ``tv_layout_C`` (what the views draw)."""
    atom = stmt.atom
    M, N, K = atom.shape_mnk
    dcode, acode, bcode = atom.type_codes[:3]
    arrA, baseA, arrB, baseB = lanes[0][:4]
    rs = stmt.a[2] is None        # A is each thread's registers (lanes[l][0]: its values), gathered via tv_layout_A
    for lane, op in enumerate(lanes):
        if (not rs and (op[0] is not arrA or op[1] != baseA)) or op[2] is not arrB or op[3] != baseB:
            raise ValueError(f"{atom.name}: the threads of a warpgroup must pass the same A and B tiles to a wgmma, but "
                             f"thread {lane} of the warpgroup differs (its A at {op[1]}, B at {op[3]}; thread 0's at "
                             f"{baseA}, {baseB})")
    scale_d = bool(lanes[0][5])
    if any(bool(op[5]) != scale_d for op in lanes):
        raise ValueError(f"{atom.name}: the threads of a warpgroup must pass the same accumulate (scale-d) to a wgmma "
                         f"(.sync.aligned), but they differ: {sorted({bool(op[5]) for op in lanes})}")
    (_, _, da), (_, _, db) = stmt.a, stmt.b
    if rs:
        ia = np.asarray(tv_indices(atom.tv_layout_A, 128, atom.tv_layout_A[1].size), dtype=np.int64)
        flat = np.zeros(M * K, dtype=object if acode in ("S8", "U8") else np.float64)
        flat[ia.reshape(-1)] = [_register_value(acode, x) for op in lanes for x in op[0]]
        A = flat.reshape(K, M).T                          # tile index i = m + M * k
    else:
        A = _gather(arrA, baseA, da, M, K, acode)
    B = _gather(arrB, baseB, db, N, K, bcode)
    is_int = dcode == "S32"
    ic = np.asarray(tv_indices(atom.tv_layout_C, 128, atom.tv_layout_C[1].size), dtype=np.int64)
    C = np.zeros(M * N, dtype=object if is_int else np.float64)
    if scale_d:        # else D = A B^T: the accumulators' old values (even NaN) are not read
        C[ic.reshape(-1)] = [x for op in lanes for x in op[4]]
    C = C.reshape(N, M).T                                # tile index i = m + M * n
    if is_int:   # exact integers, wrapped to 32 bits
        D = C + np.asarray(A, dtype=object) @ np.asarray(B, dtype=object).T
        lo = -(1 << 31)
        D = np.vectorize(lambda x: ((int(x) - lo) % (1 << 32)) + lo, otypes=[object])(D)
    else:        # exact products of <= 16-bit inputs, summed in float64, rounded once to D's type
        D = C + A @ B.T
        if dcode == "F32":
            D = D.astype(np.float32).astype(np.float64)
    flat = D.T.reshape(-1)
    return [tuple(flat[i].item() if hasattr(flat[i], "item") else flat[i] for i in row) for row in ic]


def _register_value(code, x):
    if code in ("S8", "U8"):
        return int(x)
    if code in ("F16", "F32"):
        return float(x)
    return decode_register(code, x)


_WALKS: dict = {}


def _gather(arr, base, desc, mn, k, code):
    """The (mn, k) operand tile as float64 (or exact ints), read where the descriptor's walk puts each element."""
    key = (desc.major, desc.swizzle_bits, desc.lbo, desc.sbo, desc.start, desc.element_bits, mn, k)
    rel = _WALKS.get(key)
    if rel is None:   # the descriptor's walk, once per distinct descriptor
        e = desc.element_bits // 8
        rel = _WALKS[key] = np.array([[desc.address(x, y) // e for y in range(k)] for x in range(mn)], dtype=np.int64)
    idx = base + rel
    if idx.min() < 0 or idx.max() >= arr.shape[0]:
        raise IndexError(f"wgmma reads shared elements {int(idx.min())}..{int(idx.max())} (descriptor {desc}), outside "
                         f"the buffer of {arr.shape[0]}")
    raw = arr[idx]
    if code in ("S8", "U8", "S32"):
        return raw.astype(object)
    if code in ("F16", "F32"):
        return raw.astype(np.float64)
    return np.vectorize(lambda x: decode_register(code, x), otypes=[np.float64])(raw)
