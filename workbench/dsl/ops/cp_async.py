"""``cp.async`` (``SM80_CP_ASYNC_*`` copy atoms): ``wb.copy(tiled_copy, src, dst, pred)`` copies 4/8/16 bytes a
thread from global to shared memory asynchronously (``.cg`` for CACHEGLOBAL atoms, else ``.ca``), zero-filling
where ``pred`` is false; ``wb.cp_async_commit_group()`` closes a group, ``wb.cp_async_wait_group(n)`` waits until at
most n groups are in flight.

CPU semantics: the source is read (bounds- and alignment-checked) when the copy is issued and lands in shared memory
when its group completes at a wait, so a kernel that reads the tile before waiting sees the old bytes, as it could
on the GPU.
"""

from __future__ import annotations

from .. import ir
from ..atoms_in_kernels import COPY_LOWERINGS
from ..backends.cpu import KernelRuntimeError, index, pyexpr
from ..backends.cuda import expr, saddr
from ..builtins import builtin, static_group_count
from .vector_copy import aligned, chunk_start, divisibility

_QUEUE = "_cpq = []; _cpq_cur = []   # this thread's cp.async: committed groups, the open group"


class CpAsync(ir.Instruction):
    """``cp.async.{ca,cg}.shared.global [dst], [src], nbytes, src_size``: nbytes from global to shared
    memory, asynchronously; where ``pred`` is false nothing is read and the destination is zero-filled."""

    __slots__ = ("src_buf", "src_off", "dst_buf", "dst_off", "nbytes", "pred", "cache_global")

    def __init__(self, src_buf, src_off, dst_buf, dst_off, nbytes, pred, cache_global):
        self.src_buf, self.src_off, self.dst_buf, self.dst_off = src_buf, src_off, dst_buf, dst_off
        self.nbytes, self.pred, self.cache_global = nbytes, pred, cache_global

    def cuda(self, em, d):
        space = "cg" if self.cache_global else "ca"
        dst = saddr(self.dst_buf, self.dst_off)
        src = f"{self.src_buf.name} + {expr(self.src_off)}"
        if self.pred is None:
            em.w(d, f'asm volatile("cp.async.{space}.shared.global [%0], [%1], {self.nbytes};\\n" :: "r"({dst}), "l"({src}));')
        else:   # src-size 0: nothing is read, the destination is zero-filled
            em.w(d, f'asm volatile("cp.async.{space}.shared.global [%0], [%1], {self.nbytes}, %2;\\n" :: "r"({dst}), '
                    f'"l"({src}), "r"(({expr(self.pred)}) ? {self.nbytes} : 0));')

    def python(self, em, d):
        em.prologue.append(_QUEUE)
        sb, db = self.src_buf, self.dst_buf
        n = self.nbytes // (sb.etype.bits // 8)
        so, do = f"_o{em.tmp}", f"_p{em.tmp}"
        em.tmp += 1
        em.w(d, f"{do} = {pyexpr(self.dst_off)}; _smem_chk({db.name}, {do}, {n}, {self.nbytes})")
        src = f"{sb.name}[{so}:{so} + {n}].copy()"
        read = [f"{so} = {index(sb, self.src_off)}", f"_ixr_{sb.name}({so}, {n}); _al_{sb.name}({so}, {n})"]
        if self.pred is None:
            for line in read:
                em.w(d, line)
            em.w(d, f"_cpq_cur.append(({db.name}, {do}, {src}))")
        else:   # a false predicate reads nothing (the address may lie outside the tensor) and zero-fills
            em.w(d, f"if {pyexpr(self.pred)}:")
            for line in read:
                em.w(d + 1, line)
            em.w(d + 1, f"_cpq_cur.append(({db.name}, {do}, {src}))")
            em.w(d, "else:")
            em.w(d + 1, f"_cpq_cur.append(({db.name}, {do}, _zeros({n}, {db.name}.dtype)))")


def _cp_done(group):
    """A committed cp.async group completes: its (already read) bytes land in shared memory."""
    for arr, off, vals in group:
        arr[off:off + len(vals)] = vals


def _smem_chk(arr, off, n, nbytes):
    """A cp.async destination: n elements inside the shared buffer, aligned to the copy's width."""
    if off < 0 or off + n > arr.shape[0]:
        raise KernelRuntimeError(f"cp.async writes shared memory elements {off}..{off + n - 1}, outside the buffer "
                                 f"of {arr.shape[0]}")
    if (off * arr.itemsize) % nbytes:
        raise KernelRuntimeError(f"misaligned {nbytes}-byte cp.async to shared memory element {off}")


CpAsync.cpu_helpers = {"_cp_done": _cp_done, "_smem_chk": _smem_chk}


class CpAsyncCommit(ir.Instruction):
    """``cp.async.commit_group``: the thread's cp.async issued since the last commit form one group."""

    __slots__ = ()

    def cuda(self, em, d):
        em.w(d, 'asm volatile("cp.async.commit_group;\\n" ::: "memory");')

    def python(self, em, d):
        em.prologue.append(_QUEUE)
        em.w(d, "_cpq.append(_cpq_cur); _cpq_cur = []")


class CpAsyncWait(ir.Instruction):
    """``cp.async.wait_group n``: wait until at most n of the thread's committed groups are pending."""

    __slots__ = ("n",)

    def __init__(self, n):
        self.n = n

    def cuda(self, em, d):
        em.w(d, f'asm volatile("cp.async.wait_group {self.n};\\n" ::: "memory");')

    def python(self, em, d):
        em.prologue.append(_QUEUE)
        em.w(d, f"while len(_cpq) > {self.n}: _cp_done(_cpq.pop(0))")


def _cp_async(cx, atom, src, dst, js, jd, vs, vd, pred):
    nbytes = atom.num_bits // 8
    if src.buf.space != "gmem" or dst.buf.space != "smem":
        raise ValueError(f"copy({atom.name}): cp.async copies global to shared memory, but got {src.buf.space} to "
                         f"{dst.buf.space}.")
    so, do = chunk_start(atom, src, js, vs, "source"), chunk_start(atom, dst, jd, vd, "destination")
    for t, off, w in ((src, so, "source"), (dst, do, "destination")):
        if not aligned(t, off, nbytes):
            raise ValueError(f"copy({atom.name}): cp.async of {nbytes} bytes needs a {nbytes}-byte aligned {w}, which "
                             f"{t} (assumed alignment {t.buf.align}, offset divisible by {divisibility(off)}) does not "
                             "prove; pass tensors with assumed_align=16 and tiles whose rows are multiples of 16 bytes.")
    cx.require_arch(80, atom.name)
    return [CpAsync(src.buf, ir.as_expr(so), dst.buf, ir.as_expr(do), nbytes, None if pred is True else pred,
                    "CACHEGLOBAL" in atom.name)]


_cp_async.zero_fills = True   # it takes the predicate itself: src-size 0
COPY_LOWERINGS["cp_async"] = _cp_async


@builtin
def cp_async_commit_group(cx):
    """``cp.async.commit_group``: the cp.async this thread issued since the last commit form one group."""
    cx.emit(CpAsyncCommit())


@builtin
def cp_async_wait_group(cx, n):
    """``cp.async.wait_group n``: wait until at most n committed groups of this thread are in flight (n static).
    Other threads' copies are visible after a ``wb.sync_threads()`` that follows."""
    cx.emit(CpAsyncWait(static_group_count(n, "cp_async_wait_group")))
