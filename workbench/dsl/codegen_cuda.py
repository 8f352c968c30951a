"""CUDA C++ code generation from the kernel IR (what ``wb.show_code`` prints and NVRTC compiles).

Static layout values are already folded into the IR, so they appear as literals; dynamic ones are
kernel parameters named after the tensor (``a_shape0``, ``a_stride1``).  Float constants are
written as exact hexadecimal literals so that both backends use bit-identical values.
"""

from __future__ import annotations

import math

from .._element_types import (
    Boolean,
    Float16,
    Float32,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
)
from . import ir

CTYPE = {Boolean: "bool", Int8: "signed char", Int16: "short", Int32: "int", Int64: "long long",
         Uint8: "unsigned char", Uint16: "unsigned short", Uint32: "unsigned int", Uint64: "unsigned long long",
         Float16: "__half", Float32: "float", Float64: "double"}
VEC = {16: "uint4", 8: "uint2", 4: "unsigned int", 2: "unsigned short", 1: "unsigned char"}
_F32 = {"sqrt": "sqrtf", "exp": "expf", "log": "logf", "sin": "sinf", "cos": "cosf", "tan": "tanf", "tanh": "tanhf",
        "floor": "floorf", "ceil": "ceilf", "exp2": "exp2f", "log2": "log2f", "rsqrt": "rsqrtf", "erf": "erff",
        "pow": "powf", "abs": "fabsf", "min": "fminf", "max": "fmaxf"}
_F64 = {"abs": "fabs", "min": "fmin", "max": "fmax"}


def ctype(t) -> str:
    if t not in CTYPE:
        raise TypeError(f"Expected an element type the CUDA backend supports ({', '.join(x.name for x in CTYPE)}), but got {t}.")
    return CTYPE[t]


def const(v, t) -> str:
    if t is Boolean:
        return "true" if v else "false"
    if ir.is_float_type(t):
        v = float(v)
        if math.isnan(v):
            return "__int_as_float(0x7fc00000)" if t is Float32 else "__longlong_as_double(0x7ff8000000000000LL)"
        if math.isinf(v):
            s = "-" if v < 0 else ""
            return f"{s}__int_as_float(0x7f800000)" if t is Float32 else f"{s}__longlong_as_double(0x7ff0000000000000LL)"
        return f"{v.hex()}f" if t is Float32 else v.hex()
    suffix = {Int64: "LL", Uint32: "u", Uint64: "ull"}.get(t, "")
    if t is Int32 and v == -(1 << 31):
        return "(-2147483647 - 1)"
    if t is Int64 and v == -(1 << 63):
        return "(-9223372036854775807LL - 1)"
    return f"{v}{suffix}"


def expr(e) -> str:
    k = type(e)
    if k is ir.Const:
        return const(e.value, e.type)
    if k is ir.Var:
        return e.name
    if k is ir.Special:
        return f"(int){e.name}"
    if k is ir.BinOp:
        a, b = expr(e.a), expr(e.b)
        if e.op in ("//", "%") and ir.is_float_type(e.type):
            f = "floorf" if e.type is Float32 else "floor"
            q = f"{f}({a} / {b})"
            return q if e.op == "//" else f"({a} - {q} * {b})"
        op = {"//": "/"}.get(e.op, e.op)
        return f"({a} {op} {b})"
    if k is ir.UnOp:
        return f"({e.op}{expr(e.a)})"
    if k is ir.Cast:
        if e.type is Float16:
            return f"__float2half({expr(e.a)})"
        return f"(({ctype(e.type)}){expr(e.a)})"
    if k is ir.Select:
        return f"({expr(e.c)} ? {expr(e.a)} : {expr(e.b)})"
    if k is ir.Call:
        args = ", ".join(expr(a) for a in e.args)
        if ir.is_float_type(e.type):
            name = _F32[e.fn] if e.type is Float32 else _F64.get(e.fn, e.fn)
        else:
            name = {"abs": "llabs" if e.type in (Int64, Uint64) else "abs"}.get(e.fn, e.fn)
        return f"{name}({args})"
    if k is ir.Load:
        if e.buf.etype is Float16:
            return f"__half2float({e.buf.name}[{expr(e.offset)}])"
        return f"{e.buf.name}[{expr(e.offset)}]"
    raise TypeError(f"codegen: unexpected expression {k.__name__}")


class _Emitter:
    def __init__(self):
        self.lines: list[str] = []
        self.tmp = 0

    def w(self, depth, text):
        self.lines.append("    " * depth + text)

    def block(self, stmts, depth):
        for s in stmts:
            self.stmt(s, depth)

    def stmt(self, s, d):
        k = type(s)
        if k is ir.Let:
            q = "" if s.mutable else "const "
            self.w(d, f"{q}{ctype(s.var.type)} {s.var.name} = {expr(s.expr)};")
        elif k is ir.Assign:
            self.w(d, f"{s.var.name} = {expr(s.expr)};")
        elif k is ir.Store:
            v = s.value
            val = expr(v)
            if s.buf.etype is Float16:
                val = f"__float2half({val})"
            elif v.type is not s.buf.etype:
                val = f"({ctype(s.buf.etype)}){val}"
            self.w(d, f"{s.buf.name}[{expr(s.offset)}] = {val};")
        elif k is ir.If:
            self.w(d, f"if ({expr(s.cond)}) {{")
            self.block(s.then, d + 1)
            if s.orelse:
                self.w(d, "} else {")
                self.block(s.orelse, d + 1)
            self.w(d, "}")
        elif k is ir.For:
            v = s.var
            cmp = "<" if s.step > 0 else ">"
            inc = f"++{v.name}" if s.step == 1 else f"{v.name} += {s.step}"
            self.w(d, f"for ({ctype(v.type)} {v.name} = {expr(s.start)}; {v.name} {cmp} {expr(s.stop)}; {inc}) {{")
            self.block(s.body, d + 1)
            self.w(d, "}")
        elif k is ir.While:
            self.w(d, f"while ({expr(s.cond)}) {{")
            self.block(s.body, d + 1)
            self.w(d, "}")
        elif k is ir.Break:
            self.w(d, "break;")
        elif k is ir.Continue:
            self.w(d, "continue;")
        elif k is ir.Return:
            self.w(d, "return;")
        elif k is ir.SyncThreads:
            self.w(d, "__syncthreads();")
        elif k is ir.SharedDecl:
            b = s.buf
            self.w(d, f"__shared__ __align__(16) {ctype(b.etype)} {b.name}[{b.count}];")
        elif k is ir.LocalDecl:   # static indices keep it in registers; aligned for 128-bit copies
            b = s.buf
            self.w(d, f"__align__(16) {ctype(b.etype)} {b.name}[{b.count}];")
        elif k is ir.Comment:
            self.w(d, f"// {s.text}")
        elif k is ir.VecCopy:
            self.veccopy(s, d)
        else:
            raise TypeError(f"codegen: unexpected statement {k.__name__}")

    def veccopy(self, s, d):
        es = s.pairs[0][0].etype.bits // 8
        vb = es * s.lanes
        names = []
        if s.lanes == 1:
            for sb, so, _, _ in s.pairs:
                n = f"_r{self.tmp}"
                self.tmp += 1
                names.append(n)
                self.w(d, f"const {ctype(sb.etype)} {n} = {sb.name}[{expr(so)}];")
            for n, (_, _, db, do) in zip(names, s.pairs):
                self.w(d, f"{db.name}[{expr(do)}] = {n};")
            return
        vt = VEC[vb]
        self.w(d, f"// {s.lanes}-wide ({vb * 8}-bit) copy: static layout and alignment proven")
        for sb, so, _, _ in s.pairs:
            n = f"_v{self.tmp}"
            self.tmp += 1
            names.append(n)
            self.w(d, f"const {vt} {n} = *reinterpret_cast<const {vt}*>({sb.name} + {expr(so)});")
        for n, (_, _, db, do) in zip(names, s.pairs):
            self.w(d, f"*reinterpret_cast<{vt}*>({db.name} + {expr(do)}) = {n};")


def generate(k: ir.KernelIR, header: str = "") -> str:
    """The whole translation unit: one ``extern "C" __global__`` function."""
    params = []
    for p in k.params:
        if p.kind == "ptr":
            q = "" if p.buf.written else "const "
            params.append(f"{q}{ctype(p.etype)}* {p.name}")
        else:
            params.append(f"{ctype(p.etype)} {p.name}")
    em = _Emitter()
    em.block(k.body, 1)
    uses_half = any(p.etype is Float16 for p in k.params) or "__half" in "\n".join(em.lines)
    out = []
    if header:
        out += [f"// {h}" for h in header.splitlines()]
    if uses_half:
        out.append("#include <cuda_fp16.h>")
    out.append(f'extern "C" __global__ void {k.name}({", ".join(params)}) {{')
    out += em.lines
    out.append("}")
    return "\n".join(out) + "\n"
