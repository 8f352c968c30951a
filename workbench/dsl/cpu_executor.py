"""The CPU reference executor: runs the same IR as the GPU, on host memory, without a GPU.

The IR is translated to a Python function per thread.  A kernel that calls ``sync_threads``
becomes a generator that yields at each barrier; the threads of a block are interleaved
barrier by barrier (every live thread runs to its next barrier before any passes it), which is
what ``__syncthreads`` guarantees.  A thread that exits early no longer takes part (as on Volta
and later); threads that wait at *different* barriers raise, since CUDA leaves that undefined.

Semantics match the CUDA backend for in-range values: integer ``//`` and ``%`` truncate
toward zero as in C; float arithmetic is evaluated in double and rounded to the element type
on store (the GPU rounds each float32 operation: results agree to float32 rounding error).
Every global access is bounds-checked against the tensor's extent.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

from ..element_types import Boolean, Float16, Float32, Float64
from . import ir


class KernelRuntimeError(RuntimeError):
    """A kernel misbehaved on the CPU executor (out-of-bounds access, divergent barrier)."""


def _oob(i, name):
    raise KernelRuntimeError(f"out-of-bounds access to '{name}' at element offset {i}")


def _cdiv(a, b):
    if type(a) is float or type(b) is float:
        return math.floor(a / b)
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _cmod(a, b):
    if type(a) is float or type(b) is float:
        return a - math.floor(a / b) * b
    return a - _cdiv(a, b) * b


_HELPERS = {
    "_cdiv": _cdiv, "_cmod": _cmod, "_math": math, "_oob": _oob, "_INF": math.inf, "_NAN": math.nan,
    "_exp2": lambda x: 2.0 ** x, "_rsqrt": lambda x: 1.0 / math.sqrt(x), "_KernelRuntimeError": KernelRuntimeError,
}
_PYMATH = {"sqrt": "_math.sqrt", "exp": "_math.exp", "log": "_math.log", "sin": "_math.sin", "cos": "_math.cos",
           "tan": "_math.tan", "tanh": "_math.tanh", "floor": "_math.floor", "ceil": "_math.ceil", "erf": "_math.erf",
           "exp2": "_exp2", "log2": "_math.log2", "rsqrt": "_rsqrt", "pow": "_math.pow", "abs": "abs",
           "min": "min", "max": "max"}


def _const(v, t):
    if ir.is_float_type(t):
        v = float(v)
        if math.isnan(v):
            return "_NAN"
        if math.isinf(v):
            return "_INF" if v > 0 else "(-_INF)"
        return repr(v)
    if t is Boolean:
        return "True" if v else "False"
    return repr(int(v))


def pyexpr(e) -> str:
    k = type(e)
    if k is ir.Const:
        return _const(e.value, e.type)
    if k is ir.Var:
        return e.name
    if k is ir.Special:
        return {"threadIdx": "_t", "blockIdx": "_b", "blockDim": "_bd", "gridDim": "_gd"}[e.name[:-2]] + e.name[-1]
    if k is ir.BinOp:
        a, b = pyexpr(e.a), pyexpr(e.b)
        op = e.op
        if op == "//":
            return f"_cdiv({a}, {b})"
        if op == "%":
            return f"_cmod({a}, {b})"
        if op == "&&":
            return f"({a} and {b})"
        if op == "||":
            return f"({a} or {b})"
        if op == "/":
            return f"({a} / {b})"
        return f"({a} {op} {b})"
    if k is ir.UnOp:
        return f"(not {pyexpr(e.a)})" if e.op == "!" else f"({e.op}{pyexpr(e.a)})"
    if k is ir.Cast:
        a = pyexpr(e.a)
        if ir.is_float_type(e.type):
            return f"float({a})"
        if e.type is Boolean:
            return f"bool({a})"
        return f"int({a})"
    if k is ir.Select:
        return f"({pyexpr(e.a)} if {pyexpr(e.c)} else {pyexpr(e.b)})"
    if k is ir.Call:
        args = ", ".join(pyexpr(a) for a in e.args)
        r = f"{_PYMATH[e.fn]}({args})"
        if e.fn in ("floor", "ceil") and ir.is_float_type(e.type):
            r = f"float({r})"
        return r
    if k is ir.Load:
        return f"{e.buf.name}.item({_index(e.buf, e.offset)})"
    raise TypeError(f"cpu executor: unexpected expression {k.__name__}")


def _index(buf, off):
    o = pyexpr(off)
    if buf.space == "smem":
        return o
    return f"_ix_{buf.name}({o})"


class _PyEmitter:
    def __init__(self):
        self.lines = []
        self.tmp = 0

    def w(self, d, text):
        self.lines.append("    " * d + text)

    def block(self, stmts, d):
        n = len(self.lines)
        for s in stmts:
            self.stmt(s, d)
        if len(self.lines) == n:
            self.w(d, "pass")

    def stmt(self, s, d):
        k = type(s)
        if k is ir.Let or k is ir.Assign:
            self.w(d, f"{s.var.name} = {_conv(s.expr, s.var.type)}")
        elif k is ir.Store:
            self.w(d, f"{s.buf.name}[{_index(s.buf, s.offset)}] = {pyexpr(s.value)}")
        elif k is ir.If:
            self.w(d, f"if {pyexpr(s.cond)}:")
            self.block(s.then, d + 1)
            if s.orelse:
                self.w(d, "else:")
                self.block(s.orelse, d + 1)
        elif k is ir.For:
            self.w(d, f"for {s.var.name} in range({pyexpr(s.start)}, {pyexpr(s.stop)}, {s.step}):")
            self.block(s.body, d + 1)
        elif k is ir.While:
            self.w(d, f"while {pyexpr(s.cond)}:")
            self.block(s.body, d + 1)
        elif k is ir.Break:
            self.w(d, "break")
        elif k is ir.Continue:
            self.w(d, "continue")
        elif k is ir.Return:
            self.w(d, "return")
        elif k is ir.SyncThreads:
            self.w(d, f"yield {s.line}")
        elif k is ir.SharedDecl or k is ir.Comment:
            pass
        elif k is ir.VecCopy:
            names = []
            for sb, so, _, _ in s.pairs:
                n = f"_r{self.tmp}"
                self.tmp += 1
                names.append(n)
                if s.lanes == 1:
                    self.w(d, f"{n} = {sb.name}.item({_index(sb, so)})")
                else:
                    o = f"_o{self.tmp}"
                    self.w(d, f"{o} = {_index(sb, so)}")
                    if sb.space != "smem":
                        self.w(d, f"_ix_{sb.name}({o} + {s.lanes - 1}); _al_{sb.name}({o}, {s.lanes})")
                    self.w(d, f"{n} = {sb.name}[{o}:{o} + {s.lanes}].copy()")
            for n, (_, _, db, do) in zip(names, s.pairs):
                if s.lanes == 1:
                    self.w(d, f"{db.name}[{_index(db, do)}] = {n}")
                else:
                    o = f"_o{self.tmp}"
                    self.tmp += 1
                    self.w(d, f"{o} = {_index(db, do)}")
                    if db.space != "smem":
                        self.w(d, f"_ix_{db.name}({o} + {s.lanes - 1}); _al_{db.name}({o}, {s.lanes})")
                    self.w(d, f"{db.name}[{o}:{o} + {s.lanes}] = {n}")
        else:
            raise TypeError(f"cpu executor: unexpected statement {k.__name__}")


def _conv(e, t):
    s = pyexpr(e)
    if isinstance(e, ir.Expr) and e.type is not t:
        if ir.is_float_type(t):
            return f"float({s})"
        if ir.is_int_type(t):
            return f"int({s})"
    return s


def generate_python(k: ir.KernelIR) -> str:
    """Python source of a factory: make(params, shared) -> thread(tx, ty, tz, bx, by, bz)."""
    em = _PyEmitter()
    em.block(k.body, 2)
    names = [p.name for p in k.params]
    shared = _shared(k.body)
    lines = ["def _make(_P, _S, _IX, _AL, _bdx, _bdy, _bdz, _gdx, _gdy, _gdz):"]
    if names:
        lines.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = _P")
    for p in k.params:
        if p.kind == "ptr":
            lines.append(f"    _ix_{p.name} = _IX['{p.name}']; _al_{p.name} = _AL['{p.name}']")
    for b in shared:
        lines.append(f"    {b.name} = _S['{b.name}']")
    lines.append("    def _thread(_tx, _ty, _tz, _bx, _by, _bz):")
    lines += em.lines
    if k.uses_sync:
        lines.append("        if False:\n            yield 0")
    lines.append("    return _thread")
    return "\n".join(lines) + "\n"


def _shared(stmts, out=None):
    out = [] if out is None else out
    for s in stmts:
        if type(s) is ir.SharedDecl:
            out.append(s.buf)
        for sub in ("then", "orelse", "body"):
            if hasattr(s, sub):
                _shared(getattr(s, sub), out)
    return out


_NP = {Float16: np.float16}


def host_view(address: int, etype, lo: int, hi: int):
    """A writable numpy view of elements [lo, hi) relative to ``address`` (may be negative)."""
    dt = np.dtype(_NP.get(etype) or etype.numpy)
    n = max(hi - lo, 0)
    if n == 0:
        return np.zeros(0, dt)
    buf = (ctypes.c_char * (n * dt.itemsize)).from_address(address + lo * dt.itemsize)
    return np.frombuffer(buf, dtype=dt)


class CompiledCPU:
    """A specialization's Python translation, ready to run grids on host memory."""

    def __init__(self, k: ir.KernelIR):
        self.ir = k
        self.source = generate_python(k)
        ns = dict(_HELPERS)
        exec(compile(self.source, f"<wb.kernel {k.name} (cpu)>", "exec"), ns)  # noqa: S102
        self.make = ns["_make"]
        self.shared = _shared(k.body)

    def run(self, grid, block, values, extents):
        """values: the kernel parameters in order (ptr params: (address, etype)); extents: name -> (lo, hi)."""
        P, IX, AL = [], {}, {}
        for p, v in zip(self.ir.params, values):
            if p.kind == "ptr":
                lo, hi = extents[p.name]
                arr = host_view(v, p.etype, lo, hi)
                P.append(arr)
                IX[p.name] = _indexer(p.name, -lo, hi - lo)
                AL[p.name] = _aligner(p.name, v, p.etype.bits // 8, lo)
            else:
                P.append(v)
        P = tuple(P)
        gx, gy, gz = grid
        bx, by, bz = block
        for gbz in range(gz):
            for gby in range(gy):
                for gbx in range(gx):
                    S = {b.name: np.zeros(b.count, dtype=np.dtype(_NP.get(b.etype) or b.etype.numpy)) for b in self.shared}
                    th = self.make(P, S, IX, AL, bx, by, bz, gx, gy, gz)
                    if not self.ir.uses_sync:
                        for tz in range(bz):
                            for ty in range(by):
                                for tx in range(bx):
                                    th(tx, ty, tz, gbx, gby, gbz)
                    else:
                        self._run_block(th, (bx, by, bz), (gbx, gby, gbz))

    @staticmethod
    def _run_block(th, block, bidx):
        gens = [th(tx, ty, tz, *bidx) for tz in range(block[2]) for ty in range(block[1]) for tx in range(block[0])]
        live = gens
        while live:
            nxt, lines = [], set()
            for g in live:
                try:
                    lines.add(next(g))
                    nxt.append(g)
                except StopIteration:
                    pass
            if len(lines) > 1:
                raise KernelRuntimeError(f"threads of block {bidx} wait at different sync_threads() (lines {sorted(lines)}): "
                                         "a barrier inside divergent control flow is undefined in CUDA.")
            live = nxt


def _indexer(name, base, n):
    def ix(i):
        j = i + base
        if j < 0 or j >= n:
            _oob(i, name)
        return j
    return ix


def _aligner(name, address, es, lo):
    def al(j, lanes):
        # j is a view index: check the real address the 128-bit access would use on the GPU
        addr = address + (j + lo) * es
        if addr % (lanes * es):
            raise KernelRuntimeError(f"misaligned {lanes * es * 8}-bit access to '{name}' at address {addr:#x}")
    return al


_ = (Float32, Float64)
