"""``setmaxnreg.inc/dec`` (``wb.warpgroup_reg_alloc`` / ``wb.warpgroup_reg_dealloc``): a warpgroup's register
budget in a warp-specialized kernel.  ptxas honours it only when it knows the register count at entry, which
``__launch_bounds__(threads, 1)`` gives (``@wb.kernel(launch_bounds=threads)`` emits both numbers); without it
ptxas drops the instruction (warning C7508), so it is refused while tracing.  The CPU executor has no register
file: it runs nothing."""

from __future__ import annotations

from .. import ir
from ..builtins import builtin


class SetMaxNReg(ir.Instruction):
    __slots__ = ("inc", "n")

    def __init__(self, inc, n):
        self.inc, self.n = inc, n

    def cuda(self, em, d):
        em.w(d, f'asm volatile("setmaxnreg.{"inc" if self.inc else "dec"}.sync.aligned.u32 {self.n};\\n" ::: "memory");')

    def python(self, em, d):
        pass


def _regs(cx, n, what):
    if type(n) is not int or n % 8 or not 24 <= n <= 256:
        raise ValueError(f"{what}: expected a static register count, a multiple of 8 in [24, 256], but got {n!r}.")
    if cx.launch_bounds is None:   # ptxas cannot know the count at entry and drops setmaxnreg (warning C7508)
        raise ValueError(f"{what}: setmaxnreg needs the block's size at compile time; declare it with "
                         f"@wb.kernel(launch_bounds=THREADS) (CUDA's __launch_bounds__), as CUTLASS's kernels do.")
    return n


@builtin
def warpgroup_reg_alloc(cx, n):
    """``setmaxnreg.inc``: this warpgroup may use up to n registers a thread (consumers of a warp-specialized
    kernel)."""
    cx.require_arch(90, "setmaxnreg")
    cx.emit(SetMaxNReg(True, _regs(cx, n, "warpgroup_reg_alloc")))


@builtin
def warpgroup_reg_dealloc(cx, n):
    """``setmaxnreg.dec``: this warpgroup gives registers back, keeping n a thread (a producer)."""
    cx.require_arch(90, "setmaxnreg")
    cx.emit(SetMaxNReg(False, _regs(cx, n, "warpgroup_reg_dealloc")))
