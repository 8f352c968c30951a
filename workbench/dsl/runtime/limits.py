"""The DSL's bounds on work (issue 20): every one is a located error naming the bound, never a hang.

Tracing runs the kernel's Python (static loops unrolled, device functions inlined) and keeps what it emits, so
a few lines can ask for unbounded time and memory: nested static ``range(64)`` loops (64**4 bodies), device
functions calling each other twice per level (2**depth inlined bodies), a static integer squared 64 times.
:class:`TraceBudget` counts what one lowering does and refuses past the bounds below.  The CPU executor runs
generated Python, whose compiler has its own limits (20 statically nested loops, 100 indentation levels, 200
nested parentheses): the lowering refuses kernels past them with the kernel's line, where CUDA would compile.

Measured on the 2-core CI machine (shared, under load): three nested static range(64) loops are refused at the
statement bound after 1.5 s (they ran 16 s and took 2.7 GB before), four nested ones at the step bound after 0.8
s (they never finished); the largest kernel of the DSL test files visits 408 nodes and emits 34 statements, so
the bounds leave room for unrolled tensor-core kernels.
"""

from __future__ import annotations

MAX_TRACE_STEPS = 1 << 18          # AST nodes lowered per kernel (static loops and inlining included)
MAX_STATEMENTS = 1 << 14           # IR statements one kernel emits (each a line of CUDA and of Python)
MAX_NESTING = 64                   # dynamic if/for/while blocks nested (Python allows 100 indentation levels)
MAX_LOOP_NESTING = 16              # dynamic loops nested (Python allows 20 statically nested blocks)
MAX_EXPR_DEPTH = 40                # operators nested in one expression (Python's parser: 200 parentheses)
MAX_STATIC_INT_BITS = 4096         # a static (trace-time) integer; kernels index with 64-bit values
MAX_SPECIALIZATIONS = 128          # compiled specializations kept per kernel (least recently used dropped)
MAX_CPU_LOOP_STEPS = 1 << 27       # loop iterations one CPU-executor launch runs, all threads together (~24 s)

# CUDA's launch limits (compute capability >= 3.0): the executor refuses what cuLaunchKernel would,
# before it starts a loop of 2**31 * 65535**2 blocks.
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024
# Shared memory per block: ptxas refuses more than 48 KiB of static __shared__; static plus dynamic may reach the
# device's opt-in maximum (cudaDevAttrMaxSharedMemoryPerBlockOptin), which differs by GPU: the executor applies
# an H100's (sm_90: 232448 bytes = 227 KiB; an A100 has 163 KiB).  The GPU launch applies the same check.
MAX_STATIC_SMEM = 48 * 1024
MAX_SMEM_OPTIN = 227 * 1024


class TraceBudget:
    """What one lowering has spent; ``step``/``statement``/``enter`` raise ValueError past a bound (the
    frontend locates it at the kernel line being lowered)."""

    __slots__ = ("steps", "statements", "nesting", "loops")

    def __init__(self):
        self.steps = self.statements = self.nesting = self.loops = 0

    def step(self):
        self.steps += 1
        if self.steps > MAX_TRACE_STEPS:
            raise ValueError(f"Expected a kernel that traces in at most {MAX_TRACE_STEPS} steps (limits.MAX_TRACE_STEPS), "
                             "but lowering it has not finished: static range() loops are unrolled and device functions "
                             "inlined, so nested ones multiply; give a loop dynamic bounds (a kernel argument) to keep "
                             "it a loop.")

    def statement(self, stmt):
        self.statements += 1
        if self.statements > MAX_STATEMENTS:
            raise ValueError(f"Expected a kernel of at most {MAX_STATEMENTS} statements once unrolled and inlined "
                             "(limits.MAX_STATEMENTS), but it emits more: give a static loop dynamic bounds to keep "
                             "it a loop.")
        for e in _exprs(stmt):
            d = depth(e)
            if d > MAX_EXPR_DEPTH:
                raise ValueError(f"Expected expressions nested at most {MAX_EXPR_DEPTH} operators deep "
                                 f"(limits.MAX_EXPR_DEPTH: the CPU executor's Python parser stops at 200 parentheses), "
                                 f"but got one {d} deep; split it with intermediate variables.")

    def enter(self, loop: bool):
        if self.nesting + 1 > MAX_NESTING:
            raise ValueError(f"Expected dynamic if/for/while blocks nested at most {MAX_NESTING} deep "
                             "(limits.MAX_NESTING: the CPU executor's Python has 100 indentation levels), but this "
                             "one is nested deeper (inlined device functions count).")
        if loop and self.loops + 1 > MAX_LOOP_NESTING:
            raise ValueError(f"Expected dynamic loops nested at most {MAX_LOOP_NESTING} deep (limits.MAX_LOOP_NESTING: "
                             "Python allows 20 statically nested blocks), but this one is nested deeper (inlined "
                             "device functions count).")
        self.nesting += 1
        self.loops += loop

    def leave(self, loop: bool):
        self.nesting -= 1
        self.loops -= loop


def check_static_int(v):
    """A trace-time integer result: refuse one past MAX_STATIC_INT_BITS (2**2**64 would never finish)."""
    if type(v) is int:
        check_static_bits(v.bit_length())
    return v


def check_static_bits(bits):
    """Refuse a static integer of ``bits`` bits before it is computed (``a ** b``, ``a << b``)."""
    if bits > MAX_STATIC_INT_BITS:
        raise ValueError(f"Expected static integers of at most {MAX_STATIC_INT_BITS} bits (limits.MAX_STATIC_INT_BITS), "
                         f"but this one would have about {bits} bits.")


_EXPR_FIELDS = ("expr", "value", "offset", "cond", "start", "stop")


def _exprs(stmt):
    for f in _EXPR_FIELDS:
        e = getattr(stmt, f, None)
        if e is not None and hasattr(e, "type"):
            yield e


def depth(e, _memo=None) -> int:
    """Operators nested in expression e (a DAG: shared subexpressions are measured once)."""
    memo = {} if _memo is None else _memo
    k = id(e)
    if k in memo:
        return memo[k]
    kids = [getattr(e, f) for f in ("a", "b", "c") if hasattr(e, f) and hasattr(getattr(e, f), "type")]
    kids += [x for x in getattr(e, "args", ()) if hasattr(x, "type")]
    off = getattr(e, "offset", None)
    if off is not None and hasattr(off, "type"):
        kids.append(off)
    d = 1 + max((depth(x, memo) for x in kids), default=0) if kids else 0
    memo[k] = d
    return d
