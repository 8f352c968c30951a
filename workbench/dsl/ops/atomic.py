"""``atom.add.acq_rel.gpu.s32`` (``old = wb.atomic_add(t, crd, v)``): add v to the Int32 element t[crd] of a global
tensor and return what it held, one indivisible read-modify-write at GPU scope.  Acquire-release: the thread's own
earlier writes are visible to whoever reads the sum (release), and what the earlier adders wrote before their adds is
visible to this thread afterwards (acquire).  Other threads of the block take part through a barrier: they write,
meet at ``wb.barrier``/``sync_threads``, then one thread adds (and, on the reading side, one thread adds, then they
meet, then they read), the pattern CUTLASS's stream-K fixup and ``cutlass/barrier.h`` use.

What it is for: counting arrivals between blocks that never wait for one another (the last of n blocks to add sees
``old == n - 1`` and may read what the others wrote), e.g. the stream-K GEMM's partial tiles
(``workbench/kernels/gemm_hopper.py``).  A block that *waits* for another block's add (a spin) is deliberately not
offered: CUDA does not promise that the other block runs at the same time.

CPU semantics: the executor runs a grid's blocks (clusters) one after another, each to its end, in the grid's order
or, inside ``workbench.dsl.backends.cpu.block_order("reverse")``, last to first (a GPU promises neither, so a kernel
whose blocks meet through a count is tested both ways); each thread's add happens where that thread reaches it, the
read-modify-write exact (two's complement wrap) and its index bounds-checked like any global access.
"""

from __future__ import annotations

from .. import ir
from ..backends.cpu import index, pyexpr
from ..backends.cuda import expr
from ..builtins import builtin
from ..views import KTensor


class AtomicAdd(ir.Instruction):
    """``old = atom.add.acq_rel.gpu.s32 [buf + offset], value``: ``var`` (an Int32 variable) receives the old value."""

    __slots__ = ("var", "buf", "offset", "value")

    def __init__(self, var, buf, offset, value):
        self.var, self.buf, self.offset, self.value = var, buf, offset, value

    def cuda(self, em, d):
        em.w(d, f"int {self.var.name};")
        em.w(d, f'asm volatile("atom.acq_rel.gpu.add.s32 %0, [%1], %2;\\n" : "=r"({self.var.name}) : '
                f'"l"(reinterpret_cast<unsigned long long>({self.buf.name} + {expr(self.offset)})), '
                f'"r"((int)({expr(self.value)})) : "memory");')

    def python(self, em, d):
        ix = em.fresh("_aix")
        em.w(d, f"{ix} = {index(self.buf, self.offset)}")
        em.w(d, f"{self.var.name} = int({self.buf.name}[{ix}])")
        em.w(d, f"{self.buf.name}[{ix}] = ((({self.var.name} + ({pyexpr(self.value)})) + 2147483648) & 4294967295) "
                f"- 2147483648")


@builtin
def atomic_add(cx, t, crd, value):
    """``old = wb.atomic_add(t, crd, value)``: t[crd] += value as one atomic operation at GPU scope (acquire-release,
    ``atom.add.acq_rel.gpu.s32``); returns the value t[crd] held before.  t: a global Int32 tensor; crd: an integer
    index or coordinate; value: an Int32 (static or run-time)."""
    if type(t) is not KTensor or t.buf.space != "gmem" or t.buf.etype is not ir.Int32:
        raise TypeError(f"atomic_add: expected a global tensor of Int32 (a kernel argument), but got "
                        f"{t if type(t) is KTensor else type(t).__name__}.")
    if crd is None or (isinstance(crd, tuple) and any(c is None for c in crd)):
        raise ValueError(f"atomic_add: expected one element's index or coordinate, but got {crd!r}.")
    cx.scalar(value, "the value atomic_add adds")
    if isinstance(value, ir.Expr) and not ir.is_int_type(value.type):
        raise TypeError(f"atomic_add: expected an integer value to add, but got one of type {value.type}.")
    off = ir.as_expr(t.offset_of(crd))
    cx.mark_written(t.buf)
    var = ir.Var(cx.fresh("old"), ir.Int32)
    cx.emit(AtomicAdd(var, t.buf, off, ir.as_expr(value, ir.Int32) if type(value) is int else value))
    return var
