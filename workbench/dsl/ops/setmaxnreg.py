"""``setmaxnreg.inc/dec`` (``wb.warpgroup_reg_alloc`` / ``wb.warpgroup_reg_dealloc``): a warpgroup's register
budget in a warp-specialized kernel.  ptxas honours it only when it knows the register count at entry, which
``__launch_bounds__(threads, 1)`` gives (``@wb.kernel(launch_bounds=threads)`` emits both numbers); without it
ptxas drops the instruction (warning C7508), so it is refused while tracing.  The CPU executor has no register
file: it keeps each warpgroup's last count per block and refuses a setmaxnreg after which the block's warpgroups
together ask more than the register file (``REGISTER_FILE``: 65,536 a block; a GPU's ``setmaxnreg.inc`` waits for
registers that never come: a hang).  While tracing, a setmaxnreg outside any run-time branch (every warpgroup of the
``launch_bounds`` block executes it) is checked the same way; counts inside branches (warpgroup-specialized code)
are checked by the CPU executor only."""

from __future__ import annotations

from .. import ir
from ..backends.cpu import KernelRuntimeError
from ..builtins import builtin

REGISTER_FILE = 65536      # 32-bit registers of one SM, the most a block's warpgroups may hold together


class SetMaxNReg(ir.Instruction):
    __slots__ = ("inc", "n")

    def __init__(self, inc, n):
        self.inc, self.n = inc, n

    def cuda(self, em, d):
        em.w(d, f'asm volatile("setmaxnreg.{"inc" if self.inc else "dec"}.sync.aligned.u32 {self.n};\\n" ::: "memory");')

    def python(self, em, d):
        em.w(d, f"_setmaxnreg(_MB, (_tx + _bdx * (_ty + _bdy * _tz)) // 128, {self.n}, {self.line})")


def _setmaxnreg(mb, wg, n, line):
    regs = mb.setdefault("_setmaxnreg", {})
    regs[wg] = n
    total = 128 * sum(regs.values())
    if total > REGISTER_FILE:
        raise KernelRuntimeError(f"setmaxnreg at line {line}: expected the block's warpgroups to hold at most "
                                 f"{REGISTER_FILE} registers together, but they ask {total} ("
                                 + ", ".join(f"warpgroup {w}: {c}" for w, c in sorted(regs.items()))
                                 + " a thread); a GPU's setmaxnreg.inc would wait for them forever")


SetMaxNReg.cpu_helpers = {"_setmaxnreg": _setmaxnreg}


def _regs(cx, n, what):
    if type(n) is not int or n % 8 or not 24 <= n <= 256:
        raise ValueError(f"{what}: expected a static register count, a multiple of 8 in [24, 256], but got {n!r}.")
    if cx.launch_bounds is None:   # ptxas cannot know the count at entry and drops setmaxnreg (warning C7508)
        raise ValueError(f"{what}: setmaxnreg needs the block's size at compile time; declare it with "
                         f"@wb.kernel(launch_bounds=THREADS) (CUDA's __launch_bounds__), as CUTLASS's kernels do.")
    # outside every run-time branch (and device function) each warpgroup of the block runs it
    if cx.depth == 0 and all(k == "unrolled" for k in cx.loop_kind):
        wgs = -(-cx.launch_bounds[0] // 128)
        if wgs * n * 128 > REGISTER_FILE:
            raise ValueError(f"{what}: every one of the block's {wgs} warpgroups ({cx.launch_bounds[0]} threads) runs "
                             f"it, so they would hold {wgs} x {n} x 128 = {wgs * n * 128} registers, but a block has at "
                             f"most {REGISTER_FILE}; give the warpgroups their counts in branches (a producer's "
                             "dealloc, consumers' alloc) within the budget.")
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
