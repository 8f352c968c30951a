"""CUDA C++ code generation from the kernel IR (what ``wb.show_code`` prints and NVRTC compiles).

Static layout values are already folded into the IR, so they appear as literals; dynamic ones are
kernel parameters named after the tensor (``a_shape0``, ``a_stride1``).  Float constants are
written as exact hexadecimal literals so that both backends use bit-identical values.
"""

from __future__ import annotations

import math

from ..._element_types import (
    BFloat16,
    Boolean,
    Float16,
    Float32,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    TFloat32,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
)
from .. import ir

CTYPE = {Boolean: "bool", Int8: "signed char", Int16: "short", Int32: "int", Int64: "long long",
         Uint8: "unsigned char", Uint16: "unsigned short", Uint32: "unsigned int", Uint64: "unsigned long long",
         Float16: "_wb_f16", Float32: "float", Float64: "double", BFloat16: "_wb_bf16", TFloat32: "float",
         ir.Float8E4M3FN: "unsigned char", ir.Float8E5M2: "unsigned char"}   # fp8: its bits
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
        if e.name == "clusterCtaRank.x":
            return "(int)_wb_cluster_ctarank()"
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
        if e.buf.etype is Float16:
            return f"_wb_h2f({e.buf.name}[{expr(e.offset)}])"
        if e.buf.etype is BFloat16:
            return f"_wb_bf2f({e.buf.name}[{expr(e.offset)}])"
        return f"{e.buf.name}[{expr(e.offset)}]"
    raise TypeError(f"codegen: unexpected expression {k.__name__}")


class _Emitter:
    def __init__(self):
        self.lines: list[str] = []
        self.tmp = 0
        self.dynamic_smem = 0
        self.wgmma_accs = []     # (accumulator buffer, C type code) of every wgmma: fenced around fence/wait

    def w(self, depth, text):
        self.lines.append("    " * depth + text)

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
        elif k is ir.SyncThreads:
            self.w(d, "__syncthreads();")
        elif k is ir.ClusterSync:   # the non-.aligned forms: threads may reach it from divergent code
            self.w(d, 'asm volatile("barrier.cluster.arrive.release;\\nbarrier.cluster.wait.acquire;\\n" ::: "memory");')
        elif k is ir.NamedBarrier:
            self.w(d, f'asm volatile("bar.{"arrive" if s.arrive else "sync"} {s.id}, {s.count};\\n" ::: "memory");')
        elif k is ir.SharedDecl:
            b = s.buf
            if self.dynamic_smem:   # one extern array for the block; each tensor at its byte offset
                self.w(d, f"{ctype(b.etype)}* const {b.name} = reinterpret_cast<{ctype(b.etype)}*>(_wb_smem + {b.smem_offset});")
            else:
                self.w(d, f"__shared__ __align__({b.align}) {ctype(b.etype)} {b.name}[{b.count}];")
        elif k is ir.MmaSync:
            self.mma(s, d)
        elif k is ir.Ldmatrix:
            self.ldmatrix(s, d)
        elif k is ir.CpAsync:
            space = "cg" if s.cache_global else "ca"
            dst = _saddr(s.dst_buf, s.dst_off)
            src = f"{s.src_buf.name} + {expr(s.src_off)}"
            if s.pred is None:
                self.w(d, f'asm volatile("cp.async.{space}.shared.global [%0], [%1], {s.nbytes};\\n" :: "r"({dst}), "l"({src}));')
            else:   # src-size 0: nothing is read, the destination is zero-filled
                self.w(d, f'asm volatile("cp.async.{space}.shared.global [%0], [%1], {s.nbytes}, %2;\\n" :: "r"({dst}), '
                          f'"l"({src}), "r"(({expr(s.pred)}) ? {s.nbytes} : 0));')
        elif k is ir.CpAsyncCommit:
            self.w(d, 'asm volatile("cp.async.commit_group;\\n" ::: "memory");')
        elif k is ir.CpAsyncWait:
            self.w(d, f'asm volatile("cp.async.wait_group {s.n};\\n" ::: "memory");')
        elif k is ir.LocalDecl:   # static indices keep it in registers; aligned for 128-bit copies
            b = s.buf
            self.w(d, f"__align__(16) {ctype(b.etype)} {b.name}[{b.count}];")
        elif k is ir.Comment:
            self.w(d, f"// {s.text}")
        elif k is ir.VecCopy:
            self.veccopy(s, d)
        elif k is ir.Wgmma:
            self.wgmma(s, d)
        elif k is ir.MbarInit:
            self.w(d, f'asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\\n" :: "r"({_saddr(s.bar_buf, s.bar_off)}), '
                      f'"r"((unsigned)({expr(s.count)})) : "memory");')
        elif k is ir.MbarArrive:
            a = _saddr(s.bar_buf, s.bar_off)
            if s.cta is not None:   # the same mbarrier in block `cta` of the cluster
                self.w(d, f'asm volatile("{{\\n.reg .b32 ra;\\nmapa.shared::cluster.u32 ra, %0, %1;\\n'
                          f'mbarrier.arrive.shared::cluster.b64 _, [ra];\\n}}\\n" :: "r"({a}), '
                          f'"r"((unsigned)({expr(s.cta)})) : "memory");')
            elif s.tx is None:
                self.w(d, f'asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\\n" :: "r"({a}) : "memory");')
            else:
                self.w(d, f'asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n" :: "r"({a}), '
                          f'"r"({s.tx}u) : "memory");')
        elif k is ir.MbarWait:   # try_wait suspends the thread for a while; loop until the phase has completed
            self.w(d, "for (unsigned _ok = 0; !_ok;) {")
            self.w(d + 1, f'asm volatile("{{\\n.reg .pred p;\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n'
                          f'selp.u32 %0, 1, 0, p;\\n}}\\n" : "=r"(_ok) : "r"({_saddr(s.bar_buf, s.bar_off)}), '
                          f'"r"((unsigned)({expr(s.phase)})) : "memory");')
            self.w(d, "}")
        elif k is ir.TmaCopy:
            self.tma(s, d)
        elif k is ir.AsyncOp:
            self.async_op(s, d)
        else:
            raise TypeError(f"codegen: unexpected statement {k.__name__}")

    def mma(self, s, d):
        """mma.sync as inline PTX: 32-bit registers made of the fragments' elements (16-bit values in pairs,
        8-bit in fours, as the atom's value order puts them), f32/s32 accumulators one register each."""
        from ..atoms_in_kernels import mma_ptx
        atom = s.atom
        outs, ins = [], []
        for (buf, offs), code, out in ((s.d, atom.type_codes[0], True), (s.a, atom.type_codes[1], False),
                                       (s.b, atom.type_codes[2], False), (s.c, atom.type_codes[3], False)):
            regs = _registers(buf, offs, code)
            (outs if out else ins).append([(("=" if out else "") + c, r) for c, r in regs])
        n = 0
        groups = []
        for ops in outs + ins:
            groups.append("{" + ", ".join(f"%{n + i}" for i in range(len(ops))) + "}")
            n += len(ops)
        text = f"{mma_ptx(atom)} {', '.join(groups)};"
        o = ", ".join(f'"{c}"({r})' for c, r in outs[0])
        i = ", ".join(f'"{c}"({r})' for ops in ins for c, r in ops)
        self.w(d, f'asm volatile("{text}\\n" : {o} : {i});')

    def wgmma(self, s, d):
        """wgmma.mma_async: the accumulators in place ("+f"/"+r"), A and B as descriptors built from each tile's
        shared address and the static fields proven while tracing."""
        from ..hopper import wgmma_ptx
        atom = s.atom
        head, tail = wgmma_ptx(atom)
        buf, offs = s.acc
        regs = _registers(buf, offs, atom.type_codes[0])
        a_regs = _registers(s.a[0], s.a[1], atom.type_codes[1]) if s.a[2] is None else []   # RS: A in registers
        descs = []
        for sbuf, base, desc in (s.a, s.b) if not a_regs else (s.b,):
            n = f"_desc{self.tmp}"
            self.tmp += 1
            self.w(d, f"const unsigned long long {n} = ((unsigned long long)((({_saddr(sbuf, base)}) + {desc.start}u) >> 4) "
                      f"& 0x3FFFull) | 0x{desc.static_bits():016x}ull;")
            descs.append(n)
        nr = len(regs)
        acc = "{" + ", ".join(f"%{i}" for i in range(nr)) + "}"
        outs = ", ".join(f'"+{c}"({r})' for c, r in regs)
        if a_regs:
            na = len(a_regs)
            a_op = "{" + ", ".join(f"%{nr + i}" for i in range(na)) + "}"
            ops = f"{acc}, {a_op}, %{nr + na}, p" + (f", {tail}" if tail else "")
            text = f"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{nr + na + 1}, 0;\\n{head} {ops};\\n}}\\n"
            ins = ", ".join(f'"{c}"({r})' for c, r in a_regs)
            self.w(d, f'asm volatile("{text}" : {outs} : {ins}, "l"({descs[0]}), "r"(1));')
            return
        ops = f"{acc}, %{nr}, %{nr + 1}, p" + (f", {tail}" if tail else "")
        text = f"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{nr + 2}, 0;\\n{head} {ops};\\n}}\\n"
        self.w(d, f'asm volatile("{text}" : {outs} : "l"({descs[0]}), "l"({descs[1]}), "r"(1));')

    def tma(self, s, d):
        r = len(s.coords)
        crd = ", ".join(f"%{i + 2}" for i in range(r))
        coords = "".join(f', "r"((int)({expr(c)}))' for c in s.coords)
        smem = _saddr(s.smem_buf, s.smem_off)
        desc = f"reinterpret_cast<unsigned long long>(&{s.tma.name})"
        if s.bar_buf is not None and s.multicast:
            self.w(d, f'asm volatile("cp.async.bulk.tensor.{r}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes'
                      f'.multicast::cluster [%0], [%1, {{{crd}}}], [%{r + 2}], %{r + 3};\\n" :: "r"({smem}), "l"({desc})'
                      f'{coords}, "r"({_saddr(s.bar_buf, s.bar_off)}), "h"((unsigned short){s.multicast}) : "memory");')
        elif s.bar_buf is not None:
            self.w(d, f'asm volatile("cp.async.bulk.tensor.{r}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes '
                      f'[%0], [%1, {{{crd}}}], [%{r + 2}];\\n" :: "r"({smem}), "l"({desc}){coords}, '
                      f'"r"({_saddr(s.bar_buf, s.bar_off)}) : "memory");')
        else:
            self.w(d, f'asm volatile("cp.async.bulk.tensor.{r}d.global.shared::cta.tile.bulk_group [%1, {{{crd}}}], [%0];\\n" '
                      f':: "r"({smem}), "l"({desc}){coords} : "memory");')

    def async_op(self, s, d):
        k = s.kind
        if k in ("wgmma_fence", "wgmma_wait"):   # the accumulators stay where the async MMAs write them
            self.fence_accumulators(d)
        text = {"wgmma_fence": "wgmma.fence.sync.aligned;", "wgmma_commit": "wgmma.commit_group.sync.aligned;",
                "wgmma_wait": f"wgmma.wait_group.sync.aligned {s.n};",
                "mbarrier_init_fence": "fence.mbarrier_init.release.cluster;",
                "fence_proxy_async": "fence.proxy.async.shared::cta;",
                "setmaxnreg_inc": f"setmaxnreg.inc.sync.aligned.u32 {s.n};",
                "setmaxnreg_dec": f"setmaxnreg.dec.sync.aligned.u32 {s.n};",
                "bulk_commit": "cp.async.bulk.commit_group;",
                "bulk_wait": f"cp.async.bulk.wait_group.read {s.n};"}[k]
        self.w(d, f'asm volatile("{text}\\n" ::: "memory");')
        if k == "wgmma_wait":
            self.fence_accumulators(d)

    def fence_accumulators(self, d):
        """CUTLASS's warpgroup_fence_operand: the compiler may not move reads or writes of the accumulator registers
        across the asynchronous MMAs' fence and wait."""
        for buf, code in self.wgmma_accs:
            for c, r in _registers(buf, list(range(buf.count)), code):
                self.w(d, f'asm volatile("" : "+{c}"({r}) :: "memory");')

    def ldmatrix(self, s, d):
        atom = s.atom
        trans = ".trans" if atom.name.endswith("_T") else ""
        regs = _registers(s.dst_buf, s.dst_offs, "B16")
        outs = ", ".join(f'"=r"({r})' for _, r in regs)
        ops = ", ".join(f"%{i}" for i in range(len(regs)))
        addr = _saddr(s.src_buf, s.src_off)
        self.w(d, f'asm volatile("ldmatrix.sync.aligned.m8n8.x{atom.matrices}{trans}.shared.b16 {{{ops}}}, [%{len(regs)}];\\n" '
                  f': {outs} : "r"({addr}));')

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


def _saddr(buf, off) -> str:
    """The 32-bit shared-memory address of buf[off] (what mbarrier, TMA and descriptors take)."""
    return f"(unsigned)__cvta_generic_to_shared({buf.name} + {expr(off)})"


def _wgmma_accumulators(stmts, out):
    for s in stmts:
        if type(s) is ir.Wgmma and all(b is not s.acc[0] for b, _ in out):
            out.append((s.acc[0], s.atom.type_codes[0]))
        for sub in ("then", "orelse", "body"):
            if hasattr(s, sub):
                _wgmma_accumulators(getattr(s, sub), out)
    return out


def _registers(buf, offs, code):
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
    em = _Emitter()
    em.dynamic_smem = k.dynamic_smem
    em.wgmma_accs = _wgmma_accumulators(k.body, [])
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
    bounds = f"__launch_bounds__({k.launch_bounds[0]}, {k.launch_bounds[1]}) " if k.launch_bounds else ""
    if k.cluster != (1, 1, 1):
        bounds += f"__cluster_dims__({k.cluster[0]}, {k.cluster[1]}, {k.cluster[2]}) "
    if "_wb_cluster_ctarank()" in body:
        out.append("__device__ __forceinline__ unsigned _wb_cluster_ctarank() { unsigned r; "
                   'asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }')
    out.append(f'extern "C" __global__ void {bounds}{k.name}({", ".join(params)}) {{')
    if k.dynamic_smem:
        out.append("    extern __shared__ __align__(1024) unsigned char _wb_smem[];   // SW128 tiles: 1024-byte aligned")
    out += em.lines
    out.append("}")
    return "\n".join(out) + "\n"
