"""CUDA C++ code generation from the kernel IR (what ``wb.show_code`` prints and NVRTC compiles).

Static layout values are already folded into the IR, so they appear as literals; dynamic ones are
kernel parameters named after the tensor (``a_shape0``, ``a_stride1``).  Float constants are
written as exact hexadecimal literals so that both backends use bit-identical values.
"""

from __future__ import annotations

import math
import threading

from ..._element_types import (
    KERNEL_TYPES,
    BFloat16,
    Boolean,
    Float16,
    Float32,
    Int32,
    Int64,
    TFloat32,
    Uint32,
    Uint64,
)
from .. import ir
from ..views import refuse_packed

VEC = {16: "uint4", 8: "uint2", 4: "unsigned int", 2: "unsigned short", 1: "unsigned char"}
_F32 = {"sqrt": "sqrtf", "exp": "expf", "log": "logf", "sin": "sinf", "cos": "cosf", "tan": "tanf", "tanh": "tanhf",
        "floor": "floorf", "ceil": "ceilf", "exp2": "exp2f", "log2": "log2f", "rsqrt": "rsqrtf", "erf": "erff",
        "pow": "powf", "abs": "fabsf", "min": "fminf", "max": "fmaxf"}
_F64 = {"abs": "fabs", "min": "fmin", "max": "fmax"}


def ctype(t) -> str:
    """t's spelling in generated code (the element-type table's kernel_ctype)."""
    if t.kernel_ctype is None:
        raise TypeError(f"Expected an element type the CUDA backend supports ({', '.join(x.name for x in KERNEL_TYPES)}), "
                        f"but got {t}.")
    return t.kernel_ctype


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
            return f"_wb_f2h({expr(e.a)})"
        if e.type is BFloat16:
            return f"_wb_f2bf({expr(e.a)})"
        if e.type is TFloat32:
            return f"_wb_to_tf32({expr(e.a)})"
        if e.a.type is Float16 or e.a.type is BFloat16:   # a 16-bit value (.to(wb.Float16)) widens to float first
            w = f"{'_wb_h2f' if e.a.type is Float16 else '_wb_bf2f'}({expr(e.a)})"
            return w if e.type is Float32 else f"(({ctype(e.type)}){w})"
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
        refuse_packed(e.buf)
        if e.buf.etype is Float16:
            return f"_wb_h2f({e.buf.name}[{expr(e.offset)}])"
        if e.buf.etype is BFloat16:
            return f"_wb_bf2f({e.buf.name}[{expr(e.offset)}])"
        return f"{e.buf.name}[{expr(e.offset)}]"
    if isinstance(e, ir.InstructionExpr):   # a value an op module reads (its own text and preamble)
        _USED.types.add(k)
        return e.cuda()
    raise TypeError(f"codegen: unexpected expression {k.__name__}")


class Emitter:
    """Writes one kernel's body.  What op modules use in their ``cuda(em, d)``: ``em.w(d, text)`` (a line at depth
    d), ``em.fresh(prefix)`` (a new local name), ``em.kernel`` (the KernelIR being written) and ``em.state`` (a dict
    an op module may keep per-kernel facts in, under its own key)."""

    def __init__(self, kernel=None):
        self.lines: list[str] = []
        self.tmp = 0
        self.kernel = kernel
        self.dynamic_smem = kernel.dynamic_smem if kernel is not None else 0
        self.state: dict = {}

    def w(self, depth, text):
        self.lines.append("    " * depth + text)

    def fresh(self, prefix) -> str:
        n = f"{prefix}{self.tmp}"
        self.tmp += 1
        return n

    def block(self, stmts, depth):
        i = 0
        while i < len(stmts):
            if i + 1 < len(stmts) and self.packed_pair(stmts[i], stmts[i + 1], depth):
                i += 2
                continue
            self.stmt(stmts[i], depth)
            i += 1

    def packed_pair(self, a, b, d) -> bool:
        """Two floats rounded into adjacent 16-bit registers (a fragment's .to(wb.Float16) / .store) as one packed
        cvt (``cvt.rn.f16x2.f32``).  ptxas serializes a kernel's wgmma when scalar 16-bit conversions of the
        accumulators sit in it (warning C7514), and this also halves the instructions."""
        if not (type(a) is ir.Store and type(b) is ir.Store and a.buf is b.buf and a.buf.space == "rmem"
                and a.buf.etype in (Float16, BFloat16)):
            return False
        oa, ob = (_static_offset(x.offset) for x in (a, b))
        if oa is None or ob != oa + 1 or oa % 2:
            return False
        vals = [_rounded_value(x) for x in (a, b)]
        if any(v is None for v in vals):
            return False
        fn = "_wb_f2h2" if a.buf.etype is Float16 else "_wb_f2bf2"
        self.w(d, f"*reinterpret_cast<unsigned*>({a.buf.name} + {oa}) = {fn}({expr(vals[0])}, {expr(vals[1])});")
        return True

    def stmt(self, s, d):
        k = type(s)
        if k is ir.Let:
            q = "" if s.mutable else "const "
            self.w(d, f"{q}{ctype(s.var.type)} {s.var.name} = {expr(s.expr)};")
        elif k is ir.Assign:
            self.w(d, f"{s.var.name} = {expr(s.expr)};")
        elif k is ir.Store:
            refuse_packed(s.buf)
            v = s.value
            v = _unrounded(s)
            if type(v) is ir.Load and v.buf.etype is s.buf.etype and s.buf.etype in (Float16, BFloat16):
                self.w(d, f"{s.buf.name}[{expr(s.offset)}] = {v.buf.name}[{expr(v.offset)}];")   # bits, no round trip
                return
            val = expr(v)
            if s.buf.etype is Float16:
                val = f"_wb_f2h({val})"
            elif s.buf.etype is BFloat16:
                val = f"_wb_f2bf({val})"
            elif s.buf.etype is TFloat32:
                val = f"_wb_to_tf32({val})"
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
        elif k is ir.SharedDecl:
            b = s.buf
            if self.dynamic_smem:   # one extern array for the block; each tensor at its byte offset
                self.w(d, f"{ctype(b.etype)}* const {b.name} = reinterpret_cast<{ctype(b.etype)}*>(_wb_smem + {b.smem_offset});")
            else:
                self.w(d, f"__shared__ __align__({b.align}) {ctype(b.etype)} {b.name}[{b.etype.storage_count(b.count)}];")
        elif k is ir.LocalDecl:   # static indices keep it in registers; aligned for 128-bit copies
            b = s.buf
            self.w(d, f"__align__(16) {ctype(b.etype)} {b.name}[{b.count}];")
        elif k is ir.Comment:
            self.w(d, f"// {s.text}")
        elif isinstance(s, ir.Instruction):   # a hardware operation: its op module writes it
            _USED.types.add(k)
            s.cuda(self, d)
        else:
            raise TypeError(f"codegen: unexpected statement {k.__name__}")


def saddr(buf, off) -> str:
    """The 32-bit shared-memory address of buf[off] (what mbarrier, TMA and descriptors take)."""
    return f"(unsigned)__cvta_generic_to_shared({buf.name} + {expr(off)})"


def registers(buf, offs, code):
    """[(constraint, lvalue)] of the 32/64-bit registers holding buf's elements at offs: f32 and s32 values
    are one register each ("f", "r"), f64 one "d"; narrower values share a 32-bit register ("r")."""
    bits = buf.etype.bits
    if bits == 64:
        return [("d", f"{buf.name}[{o}]") for o in offs]
    if bits == 32 and code in ("F32", "S32"):
        return [("f" if code == "F32" else "r", f"{buf.name}[{o}]") for o in offs]
    per = 32 // bits
    return [("r", f"*reinterpret_cast<unsigned*>(&{buf.name}[{offs[g]}])") for g in range(0, len(offs), per)]


_TF32_HELPER = ("__device__ __forceinline__ float _wb_to_tf32(float x) {  // cvt.rna: tf32 keeps 10 mantissa bits\n"
                "    unsigned r; asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(x)); return __uint_as_float(r);\n}")


# 16-bit floats are their bits in a 2-byte struct (pointer parameters keep the ABI of __half/__nv_bfloat16),
# converted with the very instructions cuda_fp16.hpp/cuda_bf16.hpp use, so results are bit-identical to
# __float2half (round to nearest even) and friends: NVRTC then parses neither header (tens of ms per compile).
_F16_HELPERS = """struct __align__(2) _wb_f16 { unsigned short x; };
__device__ __forceinline__ float _wb_h2f(_wb_f16 h) { float f; asm("{  cvt.f32.f16 %0, %1;}\\n" : "=f"(f) : "h"(h.x)); return f; }
__device__ __forceinline__ _wb_f16 _wb_f2h(float f) { _wb_f16 h; asm("{  cvt.rn.f16.f32 %0, %1;}\\n" : "=h"(h.x) : "f"(f)); return h; }
__device__ __forceinline__ unsigned _wb_f2h2(float lo, float hi) {   // two rounded at once, lo in the low half
    unsigned r;
#if __CUDA_ARCH__ >= 800
    asm("{  cvt.rn.f16x2.f32 %0, %1, %2;}\\n" : "=r"(r) : "f"(hi), "f"(lo));
#else
    r = (unsigned)_wb_f2h(lo).x | ((unsigned)_wb_f2h(hi).x << 16);
#endif
    return r;
}"""
# bf16: cuda_bf16.hpp's choice per architecture (cvt.f32.bf16 from sm_90, cvt.rn.bf16.f32 from sm_80; before
# sm_80 its software rounding: NaN -> 0x7fff, else round to nearest even)
_BF16_HELPERS = """struct __align__(2) _wb_bf16 { unsigned short x; };
__device__ __forceinline__ float _wb_bf2f(_wb_bf16 h) {
    float f;
#if __CUDA_ARCH__ >= 900
    asm("{ cvt.f32.bf16 %0, %1;}\\n" : "=f"(f) : "h"(h.x));
#else
    asm("{ mov.b32 %0, {0,%1};}\\n" : "=f"(f) : "h"(h.x));
#endif
    return f;
}
__device__ __forceinline__ _wb_bf16 _wb_f2bf(float f) {
    _wb_bf16 h;
#if __CUDA_ARCH__ >= 800
    asm("{  cvt.rn.bf16.f32 %0, %1;}\\n" : "=h"(h.x) : "f"(f));
#else
    const unsigned u = __float_as_uint(f);
    unsigned rem;
    if ((u & 0x7fffffffu) > 0x7f800000u) { rem = 0u; h.x = 0x7fffu; } else { rem = u << 16; h.x = u >> 16; }
    if (rem > 0x80000000u || (rem == 0x80000000u && (h.x & 1u))) h.x++;
#endif
    return h;
}
__device__ __forceinline__ unsigned _wb_f2bf2(float lo, float hi) {
    unsigned r;
#if __CUDA_ARCH__ >= 800
    asm("{  cvt.rn.bf16x2.f32 %0, %1, %2;}\\n" : "=r"(r) : "f"(hi), "f"(lo));
#else
    r = (unsigned)_wb_f2bf(lo).x | ((unsigned)_wb_f2bf(hi).x << 16);
#endif
    return r;
}"""


def _static_offset(o):
    t = type(o)
    return o if t is int else (o.value if t is ir.Const and type(o.value) is int else None)


def _unrounded(s):
    """A Store's value, without a rounding to the buffer's own 16-bit type that the store repeats (``.to()``)."""
    v = s.value
    if s.buf.etype in (Float16, BFloat16) and type(v) is ir.Cast and type(v.a) is ir.Cast and v.a.type is s.buf.etype:
        return v.a.a
    return v


def _rounded_value(s):
    """The 32-bit float a Store into a 16-bit buffer rounds (None when it stores 16-bit bits as they are)."""
    v = _unrounded(s)
    return v if v.type is Float32 else None


_USED = threading.local()   # the instruction types one generate() call met (NVRTC compiles may run in threads)


def generate(k: ir.KernelIR, header: str = "") -> str:
    """The whole translation unit: one ``extern "C" __global__`` function."""
    params = []
    for p in k.params:
        if p.kind == "tma":   # the descriptor by value in parameter space, as the TMA unit reads it
            params.append(f"const __grid_constant__ _wb_tma_desc {p.name}")
        elif p.kind == "ptr":
            q = "" if p.buf.written else "const "
            params.append(f"{q}{ctype(p.etype)}* {p.name}")
        else:
            params.append(f"{ctype(p.etype)} {p.name}")
    em = Emitter(k)
    _USED.types = set()
    em.block(k.body, 1)
    body = "\n".join(em.lines)
    used = body + "".join(params)
    out = []
    if header:
        out += [f"// {h}" for h in header.splitlines()]
    if "_wb_f16" in used:
        out.append(_F16_HELPERS)
    if "_wb_bf16" in used:
        out.append(_BF16_HELPERS)
    if "_wb_to_tf32" in body:
        out.append(_TF32_HELPER)
    if any(p.kind == "tma" for p in k.params):
        out.append("struct __align__(64) _wb_tma_desc { unsigned long long v[16]; };   // a CUtensorMap")
    for t in ir.INSTRUCTIONS:   # the device functions the kernel's instructions call, once each, in a fixed order
        if t.cuda_preamble and t in _USED.types and t.cuda_preamble not in out:
            out.append(t.cuda_preamble)
    bounds = f"__launch_bounds__({k.launch_bounds[0]}, {k.launch_bounds[1]}) " if k.launch_bounds else ""
    if k.cluster != (1, 1, 1):
        bounds += f"__cluster_dims__({k.cluster[0]}, {k.cluster[1]}, {k.cluster[2]}) "
    out.append(f'extern "C" __global__ void {bounds}{k.name}({", ".join(params)}) {{')
    if k.dynamic_smem:
        out.append("    extern __shared__ __align__(1024) unsigned char _wb_smem[];   // SW128 tiles: 1024-byte aligned")
    out += em.lines
    out.append("}")
    return "\n".join(out) + "\n"
