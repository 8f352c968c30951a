"""Frontend: one AST visitor that lowers a Python kernel function to the typed IR.

Static things (Python ints, layouts, tuples, element types, loop indices of unrolled loops)
are evaluated while lowering, as CuTe DSL does; dynamic things (thread indices, kernel
parameters, loads) become IR expressions.  A name that a dynamic ``if``/loop assigns is
materialized as a C variable before the region; a name first bound inside a dynamic region
cannot be read after it.  Anything outside the subset raises :class:`KernelError` pointing at
the user's source line.
"""

from __future__ import annotations

import ast
import builtins as _py
import inspect
import linecache
import math
import textwrap

from .._element_types import Boolean, ElementType, Float32, Float64, Int32, Int64
from ..layout import Layout
from ..layout import inttuple as it
from . import builtins as B
from . import ir
from . import views as V

UNROLL_MAX = 64          # static range() loops up to this trip count are unrolled
_MATH1 = {"sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil", "fabs", "exp2", "log2", "rsqrt", "erf"}


class KernelError(Exception):
    """A kernel uses something outside the DSL's subset (or misuses a type): points at the line."""

    def __init__(self, msg, filename=None, lineno=None, line=None, col=None, end_col=None, func=None):
        self.msg, self.filename, self.lineno = msg, filename, lineno
        text = msg
        if lineno is not None:
            caret = ""
            if line is not None and col is not None:
                width = max(1, (end_col or col + 1) - col)
                caret = "\n    " + " " * (col - (len(line) - len(line.lstrip()))) + "^" * width
            where = f'File "{filename}", line {lineno}' + (f", in {func}" if func else "")
            text = f"{where}\n    {line.strip() if line else ''}{caret}\n{msg}"
        super().__init__(text)


class KernelTypeError(KernelError, TypeError):
    pass


class KernelValueError(KernelError, ValueError):
    pass


class KernelNameError(KernelError, NameError):
    pass


class KernelIndexError(KernelError, IndexError):
    pass


class KernelAttributeError(KernelError, AttributeError):
    pass


_KINDS = {KernelError: KernelError, TypeError: KernelTypeError, ValueError: KernelValueError,
          NameError: KernelNameError, IndexError: KernelIndexError, AttributeError: KernelAttributeError}


class Triple:
    """thread_idx() & co: .x/.y/.z, indexable and unpackable."""

    __slots__ = ("vals",)

    def __init__(self, vals):
        self.vals = tuple(vals)


class KPointer:
    """A pointer parameter (from wb.make_ptr): turned into a tensor by wb.make_tensor in the kernel."""

    __slots__ = ("buf",)

    def __init__(self, buf):
        self.buf = buf


class FunctionSource:
    """A Python function's AST with what is needed to point errors at its original lines."""

    def __init__(self, fn):
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as e:
            raise TypeError(f"Expected a function whose source is available to @wb.kernel, but got {fn!r}: {e}") from None
        src = "".join(lines)
        ded = textwrap.dedent(src)
        self.indent = len(lines[0]) - len(lines[0].lstrip()) if ded != src else 0
        tree = ast.parse(ded)
        fdef = tree.body[0]
        if not isinstance(fdef, ast.FunctionDef):
            raise TypeError(f"Expected a plain 'def' function for @wb.kernel, but got {type(fdef).__name__}.")
        self.fn, self.fdef, self.first = fn, fdef, first
        self.filename = inspect.getsourcefile(fn) or "<kernel>"
        self.name = fn.__name__
        self.globals = fn.__globals__
        cv = inspect.getclosurevars(fn)
        self.closure = dict(cv.nonlocals)
        a = fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
            raise self.error(fdef, "a kernel takes plain positional parameters (no defaults, *args, **kwargs or keyword-only)")
        self.params = [p.arg for p in a.args]
        self.constexpr = set()
        for p in a.args:
            if p.annotation is not None:
                ann = self._resolve_annotation(p.annotation)
                if ann is B.Constexpr:
                    self.constexpr.add(p.arg)

    def _resolve_annotation(self, node):
        try:
            return eval(compile(ast.Expression(node), "<ann>", "eval"), dict(self.globals), dict(self.closure))  # noqa: S307
        except Exception:
            return None

    def error(self, node, msg, cls=KernelError):
        cls = _KINDS.get(cls, KernelError)
        lineno = getattr(node, "lineno", None)
        if lineno is None:
            return cls(msg)
        real = lineno + self.first - 1
        line = linecache.getline(self.filename, real) or None
        col = getattr(node, "col_offset", None)
        end = getattr(node, "end_col_offset", None) if getattr(node, "end_lineno", lineno) == lineno else None
        if col is not None:
            col += self.indent
            end = end + self.indent if end is not None else None
        return cls(msg, self.filename, real, line.rstrip("\n") if line else None, col, end, self.name)


class _Poison:
    __slots__ = ("msg",)

    def __init__(self, msg):
        self.msg = msg


def _assigned(stmts) -> set:
    """Names assigned anywhere in stmts (not in nested functions)."""
    out = set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
    return out


class Lowering:
    """Lowers one kernel (and the device functions it calls, inlined) to a KernelIR."""

    def __init__(self, src: FunctionSource, bindings: dict, params: list, name: str):
        self.src = src
        self.env = dict(bindings)
        self.params = params
        self.name = name
        self.out: list = []
        self.names: dict = {}
        self.mutable: set = set()
        self.shared: list = []
        self.shared_bytes = 0
        self.uses_sync = False
        self.written_args: set = set()
        self.loop_kind: list = []      # 'unrolled' | 'dynamic'
        self.depth = 0
        self.node = src.fdef

    # -- helpers -----------------------------------------------------------------------------
    def err(self, node, msg, cls=KernelError):
        return self.src.error(node, msg, cls)

    def fresh(self, base):
        base = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in base) or "t"
        n = self.names.get(base, 0)
        self.names[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def emit(self, stmt, node=None):
        stmt.line = getattr(node or self.node, "lineno", 0) + self.src.first - 1
        self.out.append(stmt)

    def block(self, stmts):
        saved = self.out
        self.out = []
        try:
            for s in stmts:
                self.stmt(s)
            return self.out
        finally:
            self.out = saved

    def scalar(self, v, node, what="a number"):
        if isinstance(v, ir.Expr) or type(v) in (int, float, bool):
            return v
        raise self.err(node, f"Expected {what}, but got {_describe(v)}.", TypeError)

    def bind_value(self, name, v, node):
        """Bind a freshly computed value to a name: dynamic expressions become a const C variable."""
        if isinstance(v, ir.Expr) and not isinstance(v, (ir.Var, ir.Const, ir.Special)):
            var = ir.Var(self.fresh(name), v.type, v.div)
            self.emit(ir.Let(var, v), node)
            v = var
        self.env[name] = v

    # -- entry -------------------------------------------------------------------------------
    def run(self):
        for s in self.src.fdef.body:
            self.stmt(s)
        return ir.KernelIR(self.name, self.params, self.out, self.uses_sync, self.shared_bytes, self.written_args)

    # -- statements --------------------------------------------------------------------------
    def stmt(self, node):
        self.node = node
        m = getattr(self, "s_" + type(node).__name__, None)
        if m is None:
            raise self.err(node, f"'{type(node).__name__}' statements are not supported in a kernel "
                                 "(supported: assignment, if/elif/else, for ... in range(...), while, break, continue, return, calls).")
        m(node)

    def s_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        v = self.expr(node.value)
        if v is not None and not isinstance(v, ir.Expr):
            return
        if isinstance(v, ir.Expr):
            raise self.err(node, "Expected a statement, but got an expression whose value is unused.")

    def s_Pass(self, node):
        pass

    def s_Assign(self, node):
        if len(node.targets) != 1:
            raise self.err(node, "Expected a single assignment target (a = b), but got a chained assignment.")
        v = self.expr(node.value)
        self.assign(node.targets[0], v, node)

    def s_AnnAssign(self, node):
        if node.value is None:
            raise self.err(node, "Expected an annotated assignment with a value.")
        v = self.expr(node.value)
        ann = self.expr(node.annotation)
        if type(ann) is ElementType:
            v = ir.cast(v, ann)
        self.assign(node.target, v, node)

    def s_AugAssign(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.err(node, f"unsupported operator in '{type(node.op).__name__}=' in a kernel.")
        if isinstance(node.target, ast.Subscript):
            t = self.expr(node.target.value)
            old = self.subscript_load(t, node.target)
            self.store(t, node.target, self.arith(op, old, self.expr(node.value), node), node)
            return
        if not isinstance(node.target, ast.Name):
            raise self.err(node, "Expected a name or a tensor element on the left of an augmented assignment.")
        old = self.load_name(node.target.id, node.target)
        self.assign(node.target, self.arith(op, old, self.expr(node.value), node), node)

    def assign(self, target, v, node):
        if isinstance(target, ast.Name):
            name = target.id
            cur = self.env.get(name)
            if isinstance(cur, ir.Var) and id(cur) in self.mutable:
                self.emit(ir.Assign(cur, self.convert(v, cur.type, node, name)), node)
                return
            self.bind_value(name, v, node)
            return
        if isinstance(target, ast.Tuple):
            vals = v.vals if type(v) is Triple else v
            if type(vals) is not tuple or len(vals) != len(target.elts):
                raise self.err(node, f"Expected {len(target.elts)} values to unpack, but got {_describe(v)}.")
            for t, x in zip(target.elts, vals):
                self.assign(t, x, node)
            return
        if isinstance(target, ast.Subscript):
            self.store(self.expr(target.value), target, v, node)
            return
        raise self.err(target, f"Expected a name, a tuple of names or a tensor element as assignment target, but got {type(target).__name__}.")

    def convert(self, v, t, node, name):
        v = self.scalar(v, node)
        if not isinstance(v, ir.Expr):
            return ir.cast(v, t)
        if v.type is t:
            return v
        if ir.is_float_type(t) and (ir.is_int_type(v.type) or v.type is Float32):
            return ir.cast(v, t)
        if ir.is_int_type(t) and ir.is_int_type(v.type) and v.type.width <= t.width:
            return ir.cast(v, t)
        if t is Boolean and v.type is Boolean:
            return v
        raise self.err(node, f"Variable '{name}' has type {t} but is assigned a {v.type}; cast explicitly, e.g. wb.{t}(...).", TypeError)

    def store(self, t, target, v, node):
        if type(t) is not V.KTensor:
            raise self.err(target, f"Expected a tensor to assign an element of, but got {_describe(t)}.", TypeError)
        crd = self.index(target.slice)
        if V.has_none(crd):
            raise self.err(target, "Expected a full coordinate when writing a tensor element, but got a slice (None).")
        v = self.scalar(v, node, "a number to store")
        et = t.etype
        off = self.checked(lambda: t.offset_of(crd), target)
        if isinstance(v, ir.Expr) and v.type is not ir._value_type(et):
            if ir.is_float_type(v.type) and ir.is_int_type(et):
                raise self.err(node, f"Expected a value of the tensor's type {et}, but got {v.type}; cast explicitly, e.g. wb.{et}(...).", TypeError)
        val = ir.as_expr(v, ir._value_type(et)) if not isinstance(v, ir.Expr) else v
        t.buf.written = True
        if t.buf.param is not None:
            self.written_args.add(t.buf.param)
        self.emit(ir.Store(t.buf, ir.as_expr(off), val), node)

    def checked(self, fn, node):
        try:
            return fn()
        except KernelError:
            raise
        except (TypeError, ValueError, ZeroDivisionError, IndexError) as e:
            raise self.err(node, str(e), type(e) if type(e) in (TypeError, ValueError) else ValueError) from None

    # -- control flow ------------------------------------------------------------------------
    def _materialize(self, stmts, node, extra=()):
        """Before a dynamic region: names it assigns that hold scalars become mutable C variables."""
        for name in sorted(_assigned(stmts) | set(extra)):
            v = self.env.get(name)
            if v is None or isinstance(v, _Poison):
                continue
            if isinstance(v, ir.Var) and id(v) in self.mutable:
                continue
            if isinstance(v, ir.Expr) or type(v) in (int, float, bool):
                e = ir.as_expr(v)
                var = ir.Var(self.fresh(name), e.type, 1)
                self.emit(ir.Let(var, e, mutable=True), node)
                self.mutable.add(id(var))
                self.env[name] = var

    def _region(self, stmts, line):
        """Lower a dynamic region; afterwards names it bound (other than mutable vars) are unreadable."""
        before = dict(self.env)
        body = self.block(stmts)
        for k, v in list(self.env.items()):
            if before.get(k) is not v:
                self.env[k] = _Poison(f"'{k}' is assigned inside dynamic control flow (line {line}) and cannot be used "
                                      f"after it; assign it before the if/loop so that it becomes a variable.")
        return body

    def s_If(self, node):
        c = ir.truth(self.expr(node.test))
        if not isinstance(c, ir.Expr):       # static condition: only the taken branch exists
            for s in (node.body if c else node.orelse):
                self.stmt(s)
            return
        self._materialize(node.body + node.orelse, node)
        line = node.lineno + self.src.first - 1
        self.loop_kind.append("if")
        try:
            then = self._region(node.body, line)
            orelse = self._region(node.orelse, line)
        finally:
            self.loop_kind.pop()
        self.emit(ir.If(c, then, orelse), node)

    def s_For(self, node):
        if node.orelse:
            raise self.err(node, "for ... else is not supported in a kernel.")
        call = node.iter
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "range"
                and self.lookup("range", call.func) is _py.range):
            raise self.err(node.iter, "Expected 'for ... in range(...)' in a kernel, but got another iterable.")
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise self.err(node.iter, "Expected range(stop), range(start, stop) or range(start, stop, step).")
        args = [self.scalar(self.expr(a), a, "an integer range bound") for a in call.args]
        for a, n in zip(args, call.args):
            if type(a) is float or (isinstance(a, ir.Expr) and not ir.is_int_type(a.type)):
                raise self.err(n, f"Expected an integer range bound, but got {_describe(a)}.", TypeError)
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
        if not isinstance(node.target, ast.Name):
            raise self.err(node.target, "Expected a single loop variable name.")
        if type(step) is not int or step == 0:
            raise self.err(call, f"Expected a static non-zero range step, but got {_describe(step)}.")
        name = node.target.id
        if type(start) is int and type(stop) is int and len(range(start, stop, step)) <= UNROLL_MAX:
            self.loop_kind.append("unrolled")
            try:
                for i in range(start, stop, step):
                    self.env[name] = i
                    for s in node.body:
                        self.stmt(s)
            finally:
                self.loop_kind.pop()
            return
        self._materialize(node.body, node)
        t = ir.promote(*(ir.as_expr(x).type for x in (start, stop))) if any(isinstance(x, ir.Expr) for x in (start, stop)) else Int32
        var = ir.Var(self.fresh(name), t)
        self.env[name] = var
        line = node.lineno + self.src.first - 1
        self.loop_kind.append("dynamic")
        try:
            body = self._region(node.body, line)
        finally:
            self.loop_kind.pop()
        self.env[name] = _Poison(f"the loop variable '{name}' of the loop at line {line} cannot be used after the loop.")
        self.emit(ir.For(var, ir.as_expr(start, t), ir.as_expr(stop, t), step, body), node)

    def s_While(self, node):
        if node.orelse:
            raise self.err(node, "while ... else is not supported in a kernel.")
        self._materialize(node.body, node)
        c = ir.truth(self.expr(node.test))
        if not isinstance(c, ir.Expr):
            if not c:
                return
            c = ir.Const(True, Boolean)
        line = node.lineno + self.src.first - 1
        self.loop_kind.append("dynamic")
        try:
            body = self._region(node.body, line)
        finally:
            self.loop_kind.pop()
        self.emit(ir.While(c, body), node)

    def _in_dynamic_loop(self, node, what):
        for k in reversed(self.loop_kind):
            if k == "dynamic":
                return
            if k == "unrolled":
                raise self.err(node, f"'{what}' inside a loop that is unrolled (static range bounds) is not supported; "
                                     "use a while loop or dynamic bounds.")
        raise self.err(node, f"'{what}' outside a loop.")

    def s_Break(self, node):
        self._in_dynamic_loop(node, "break")
        self.emit(ir.Break(), node)

    def s_Continue(self, node):
        self._in_dynamic_loop(node, "continue")
        self.emit(ir.Continue(), node)

    def s_Return(self, node):
        if self.depth > 0:
            raise self.err(node, "A device function may return only as its last statement.")
        if node.value is not None:
            raise self.err(node, "A kernel returns nothing: write results into a tensor argument.")
        self.emit(ir.Return(), node)

    # -- expressions -------------------------------------------------------------------------
    def expr(self, node):
        m = getattr(self, "e_" + type(node).__name__, None)
        if m is None:
            raise self.err(node, f"'{type(node).__name__}' expressions are not supported in a kernel.")
        return m(node)

    def e_Constant(self, node):
        v = node.value
        if v is None or type(v) in (int, float, bool):
            return v
        raise self.err(node, f"Expected an int, float or bool constant, but got {type(v).__name__} {v!r}.", TypeError)

    def lookup(self, name, node):
        if name in self.env:
            v = self.env[name]
            if isinstance(v, _Poison):
                raise self.err(node, v.msg)
            return v
        if name in self.src.closure:
            return self.src.closure[name]
        if name in self.src.globals:
            return self.src.globals[name]
        if hasattr(_py, name):
            return getattr(_py, name)
        raise self.err(node, f"name '{name}' is not defined", NameError)

    def load_name(self, name, node):
        v = self.lookup(name, node)
        return v

    def e_Name(self, node):
        v = self.lookup(node.id, node)
        if type(v) is list:
            raise self.err(node, f"Expected a tuple, but '{node.id}' is a list (lists are mutable; use a tuple).", TypeError)
        return v

    def e_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    def e_Attribute(self, node):
        v = self.expr(node.value)
        a = node.attr
        if type(v) is Triple:
            if a in ("x", "y", "z"):
                return v.vals["xyz".index(a)]
        elif type(v) is V.KTensor:
            if a == "shape":
                return v.shape
            if a == "stride":
                return v.stride
            if a == "layout":
                return v.layout
            if a == "element_type":
                return v.etype
        elif type(v) is V.KLayout:
            if a in ("shape", "stride"):
                return getattr(v, a)
        elif inspect.ismodule(v) or type(v) is Layout or type(v) is ElementType:
            if hasattr(v, a):
                return getattr(v, a)
        raise self.err(node, f"'{_describe(v)}' has no attribute '{a}' usable in a kernel.", AttributeError)

    def arith(self, op, a, b, node):
        for x in (a, b):
            if not (isinstance(x, ir.Expr) or type(x) in (int, float, bool)):
                raise self.err(node, f"Expected numbers for '{op}', but got {_describe(a)} and {_describe(b)}.", TypeError)
        if op == "**":
            if type(b) is int and 0 <= b <= 4 and isinstance(a, ir.Expr):
                r = 1
                for _ in range(b):
                    r = ir.binop("*", r, a)
                return r
            if not isinstance(a, ir.Expr) and not isinstance(b, ir.Expr):
                return a ** b
            return ir.Call("pow", [ir.as_expr(a, Float32), ir.as_expr(b, Float32)], ir.promote(ir.as_expr(a, Float32).type, Float32))
        return self.checked(lambda: ir.binop(op, a, b), node)

    def e_BinOp(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.err(node, f"unsupported operator '{_OPNAME.get(type(node.op), type(node.op).__name__)}' in a kernel "
                                 "(supported: + - * / // % ** & | ^ << >>).")
        a, b = self.expr(node.left), self.expr(node.right)
        if type(a) is tuple and type(b) is tuple and op == "+":
            return a + b
        return self.arith(op, a, b, node)

    def e_UnaryOp(self, node):
        v = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            c = ir.truth(self.scalar(v, node))
            return (not c) if not isinstance(c, ir.Expr) else ir.UnOp("!", c, Boolean)
        v = self.scalar(v, node)
        if isinstance(node.op, ast.USub):
            return -v if not isinstance(v, ir.Expr) else ir.UnOp("-", v, v.type)
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Invert):
            if not isinstance(v, ir.Expr):
                return ~v
            if not ir.is_int_type(v.type):
                raise self.err(node, f"Expected an integer for '~', but got {v.type}.", TypeError)
            return ir.UnOp("~", v, v.type)
        raise self.err(node, "unsupported unary operator in a kernel.")

    def e_BoolOp(self, node):
        op = "&&" if isinstance(node.op, ast.And) else "||"
        acc = None
        for e in node.values:
            c = ir.truth(self.scalar(self.expr(e), e))
            if acc is None:
                acc = c
                continue
            if not isinstance(acc, ir.Expr):
                if (op == "&&" and not acc) or (op == "||" and acc):
                    return acc
                acc = c
                continue
            if not isinstance(c, ir.Expr):
                if (op == "&&" and c) or (op == "||" and not c):
                    continue
                return c
            acc = ir.BinOp(op, acc, c, Boolean)
        return acc

    def e_Compare(self, node):
        left = self.expr(node.left)
        acc = True
        for opn, right in zip(node.ops, node.comparators):
            r = self.expr(right)
            op = _CMPOPS.get(type(opn))
            if op is None:
                raise self.err(node, f"unsupported comparison '{type(opn).__name__}' in a kernel (supported: < <= > >= == !=).")
            if type(left) is tuple or type(r) is tuple:
                c = (left == r) if op == "==" else (left != r) if op == "!=" else None
                if c is None or any(isinstance(x, ir.Expr) for x in it.flatten(left) + it.flatten(r)):
                    raise self.err(node, "Expected numbers to compare, but got tuples with dynamic values.", TypeError)
            else:
                c = ir.compare(op, self.scalar(left, node), self.scalar(r, node))
            if acc is True:
                acc = c
            elif isinstance(acc, ir.Expr) or isinstance(c, ir.Expr):
                acc = ir.BinOp("&&", ir.truth(acc) if isinstance(acc, ir.Expr) else ir.Const(bool(acc), Boolean),
                               ir.truth(c) if isinstance(c, ir.Expr) else ir.Const(bool(c), Boolean), Boolean)
            else:
                acc = acc and c
            left = r
        return acc

    def e_IfExp(self, node):
        c = ir.truth(self.scalar(self.expr(node.test), node.test))
        if not isinstance(c, ir.Expr):
            return self.expr(node.body if c else node.orelse)
        a = self.scalar(self.expr(node.body), node.body)
        b = self.scalar(self.expr(node.orelse), node.orelse)
        t = ir.result_type(a, b) if (isinstance(a, ir.Expr) or isinstance(b, ir.Expr)) else ir.as_expr(a).type
        return ir.Select(c, ir.as_expr(a, t) if not isinstance(a, ir.Expr) else ir.cast(a, t),
                         ir.as_expr(b, t) if not isinstance(b, ir.Expr) else ir.cast(b, t), t)

    def index(self, node):
        v = self.expr(node)
        return v

    def e_Subscript(self, node):
        base = self.expr(node.value)
        if type(base) is V.KTensor:
            return self.subscript_load(base, node)
        idx = self.expr(node.slice)
        if type(base) is Triple:
            base = base.vals
        if type(base) is tuple:
            if type(idx) is not int:
                raise self.err(node, f"Expected a static integer index into a tuple, but got {_describe(idx)}.", TypeError)
            try:
                return base[idx]
            except IndexError:
                raise self.err(node, f"Expected an index below {len(base)}, but got {idx}.", IndexError) from None
        if type(base) is V.KLayout or type(base) is Layout:
            lay = V.KLayout.of(base)
            return self.checked(lambda: lay(idx), node)
        raise self.err(node, f"Expected a tensor, a tuple or a layout to index, but got {_describe(base)}.", TypeError)

    def subscript_load(self, t, node):
        crd = self.index(node.slice)
        self._check_coord(crd, node)
        if V.has_none(crd):
            return self.checked(lambda: t.slice(crd), node)
        off = self.checked(lambda: t.offset_of(crd), node)
        return ir.Load(t.buf, ir.as_expr(off))

    def _check_coord(self, c, node):
        if c is None or type(c) is int:
            return
        if type(c) is tuple:
            for e in c:
                self._check_coord(e, node)
            return
        if isinstance(c, ir.Expr) and ir.is_int_type(c.type):
            return
        raise self.err(node, f"Expected an integer index or coordinate, but got {_describe(c)}.", TypeError)

    # -- calls -------------------------------------------------------------------------------
    def e_Call(self, node):
        if node.keywords and any(k.arg is None for k in node.keywords):
            raise self.err(node, "**kwargs in calls are not supported in a kernel.")
        f = self.expr(node.func)
        args = [self.expr(a) for a in node.args]
        kw = {k.arg: self.expr(k.value) for k in node.keywords}
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.err(node, "*args in calls are not supported in a kernel.")
        return self.call(f, args, kw, node)

    def call(self, f, args, kw, node):
        from .kernel import Kernel
        if type(f) is ElementType:
            if len(args) != 1 or kw:
                raise self.err(node, f"Expected {f}(value), but got {len(args)} arguments.", TypeError)
            if f not in ir.SCALAR_TYPES:
                raise self.err(node, f"Expected a scalar type usable in arithmetic, but got {f}.", TypeError)
            return self.checked(lambda: ir.cast(self.scalar(args[0], node), f), node)
        if f is _py.int or f is _py.float or f is _py.bool:
            t = {int: Int32, float: Float32, bool: Boolean}[f]
            v = self.scalar(args[0], node)
            return f(v) if not isinstance(v, ir.Expr) else ir.cast(v, t)
        if f is _py.min or f is _py.max or f is _py.abs:
            return self.minmaxabs(f.__name__, args, node)
        if f is _py.len:
            v = args[0]
            if type(v) in (tuple, Triple):
                return len(v) if type(v) is tuple else 3
            raise self.err(node, f"Expected a tuple for len(), but got {_describe(v)}.", TypeError)
        if f is _py.range:
            raise self.err(node, "range() is only allowed as the iterable of a for loop.")
        if isinstance(f, Kernel):
            return self.inline(f, args, kw, node)
        mod = getattr(f, "__module__", "") or ""
        name = getattr(f, "__name__", "")
        if getattr(f, "__self__", None) is math or mod == "math" or (callable(f) and f in _MATH_FUNCS):
            return self.mathcall(name, args, node)
        if mod.startswith("workbench"):
            h = getattr(self, "b_" + name, None)
            if h is not None:
                return h(args, kw, node)
            # a pure workbench function (layout algebra...) on static arguments runs at compile time
            if not any(_is_dynamic(a) for a in list(args) + list(kw.values())) and mod.startswith("workbench.layout"):
                return self.checked(lambda: f(*args, **kw), node)
            raise self.err(node, f"wb.{name}() is not supported with these arguments inside a kernel.")
        raise self.err(node, f"calls to {getattr(f, '__qualname__', _describe(f))} are not supported in a kernel "
                             "(mark device functions with @wb.kernel).")

    def mathcall(self, name, args, node):
        if name == "pow":
            return self.arith("**", args[0], args[1], node)
        if name in ("min", "max", "fabs"):
            return self.minmaxabs({"fabs": "abs"}.get(name, name), args, node)
        if name not in _MATH1 or len(args) != 1:
            raise self.err(node, f"math.{name} is not supported in a kernel (supported: {', '.join(sorted(_MATH1 | {'pow'}))}).")
        v = self.scalar(args[0], node)
        if not isinstance(v, ir.Expr):
            return getattr(math, name)(v) if hasattr(math, name) else _PYMATH[name](v)
        t = v.type if ir.is_float_type(v.type) else Float32
        return ir.Call(name, [ir.cast(v, t)], t)

    def minmaxabs(self, name, args, node):
        if name == "abs":
            v = self.scalar(args[0], node)
            return abs(v) if not isinstance(v, ir.Expr) else ir.Call("abs", [v], v.type)
        if len(args) < 2:
            raise self.err(node, f"Expected {name}(a, b, ...) with at least two numbers in a kernel.", TypeError)
        acc = self.scalar(args[0], node)
        for b in args[1:]:
            b = self.scalar(b, node)
            if not isinstance(acc, ir.Expr) and not isinstance(b, ir.Expr):
                acc = min(acc, b) if name == "min" else max(acc, b)
                continue
            t = ir.result_type(acc, b)
            acc = ir.Call(name, [ir.cast(ir.as_expr(acc, t), t), ir.cast(ir.as_expr(b, t), t)], t)
        return acc

    def inline(self, k, args, kw, node):
        if kw:
            raise self.err(node, "Device functions take positional arguments only.")
        src = k.source
        if len(args) != len(src.params):
            raise self.err(node, f"Expected {len(src.params)} arguments for {src.name}, but got {len(args)}.", TypeError)
        if self.depth > 16:
            raise self.err(node, "Device function calls nest more than 16 deep (recursion is not supported).")
        saved = (self.src, self.env, self.node, self.loop_kind)
        self.emit(ir.Comment(f"inlined {src.name}()"), node)
        self.src, self.env, self.loop_kind = src, {}, []
        self.depth += 1
        try:
            for p, a in zip(src.params, args):
                self.env[p] = a
            body = src.fdef.body
            ret = None
            for i, s in enumerate(body):
                if isinstance(s, ast.Return) and i == len(body) - 1:
                    ret = None if s.value is None else self.expr(s.value)
                    break
                for n in ast.walk(s):
                    if isinstance(n, ast.Return):
                        raise self.err(n, "A device function may return only as its last statement.")
                self.stmt(s)
            if isinstance(ret, ir.Expr) and not isinstance(ret, (ir.Var, ir.Const)):
                var = ir.Var(self.fresh(src.name + "_ret"), ret.type, ret.div)
                self.emit(ir.Let(var, ret), body[-1])
                ret = var
            return ret
        finally:
            self.depth -= 1
            self.src, self.env, self.node, self.loop_kind = saved

    # -- wb builtins inside kernels (recognized by function name within workbench) -----------
    def _triple(self, which):
        return Triple(ir.Special(f"{which}.{c}") for c in "xyz")

    def b_thread_idx(self, args, kw, node):
        return self._triple("threadIdx")

    def b_block_idx(self, args, kw, node):
        return self._triple("blockIdx")

    def b_block_dim(self, args, kw, node):
        return self._triple("blockDim")

    def b_grid_dim(self, args, kw, node):
        return self._triple("gridDim")

    def b_sync_threads(self, args, kw, node):
        for k in self.loop_kind:
            if k == "if":
                pass  # allowed (CUDA requires all threads to reach it; the CPU executor checks)
        self.uses_sync = True
        self.emit(ir.SyncThreads(), node)

    def b_shared_tensor(self, args, kw, node):
        if len(args) != 2 or kw:
            raise self.err(node, "Expected wb.shared_tensor(element_type, layout).", TypeError)
        et, lay = args
        if type(et) is not ElementType or et not in ir.SCALAR_TYPES:
            raise self.err(node, f"Expected an element type such as wb.Float32, but got {_describe(et)}.", TypeError)
        k = self.checked(lambda: V.KLayout.of(lay), node)
        if not k.is_static:
            raise self.err(node, f"Expected a static layout for shared memory, but got {k}.", ValueError)
        from ..layout import cosize
        n = cosize(Layout(k.shape, k.stride))
        buf = ir.Buffer(self.fresh("smem"), et, "smem", 16, count=n)
        self.shared_bytes = -(-self.shared_bytes // 16) * 16 + n * (et.bits // 8)
        self.shared.append(buf)
        self.emit(ir.SharedDecl(buf), node)
        return V.KTensor(buf, 0, k)

    def _tensor_arg(self, v, node, what):
        if type(v) is not V.KTensor:
            raise self.err(node, f"Expected a tensor as the first argument of {what}, but got {_describe(v)}.", TypeError)
        return v

    def _bind_offset(self, t, node):
        """Freeze a view's dynamic base offset in a variable (it may use mutable variables)."""
        if isinstance(t.offset, ir.Expr) and not isinstance(t.offset, (ir.Var, ir.Const)):
            var = ir.Var(self.fresh("off"), t.offset.type, t.offset.div)
            self.emit(ir.Let(var, t.offset), node)
            return V.KTensor(t.buf, var, t.layout)
        return t

    def b_local_tile(self, args, kw, node):
        if args and type(args[0]) is not V.KTensor:
            return self._static_algebra("local_tile", args, kw, node)
        a = _args(args, kw, ("tensor", "tiler", "coord"))
        t = self._tensor_arg(a[0], node, "local_tile")
        return self._bind_offset(self.checked(lambda: V.local_tile(t, a[1], a[2]), node), node)

    def b_logical_divide(self, args, kw, node):
        if args and type(args[0]) is not V.KTensor:
            return self._static_algebra("logical_divide", args, kw, node)
        a = _args(args, kw, ("tensor", "tiler"))
        return self.checked(lambda: V.logical_divide(a[0], a[1]), node)

    b_logical_divide_tensor = b_logical_divide

    def b_local_partition(self, args, kw, node):
        if args and type(args[0]) is not V.KTensor:
            return self._static_algebra("local_partition", args, kw, node)
        a = _args(args, kw, ("tensor", "thread_layout", "thread_index"))
        t = self._tensor_arg(a[0], node, "local_partition")
        return self._bind_offset(self.checked(lambda: V.local_partition(t, a[1], a[2]), node), node)

    def _static_algebra(self, name, args, kw, node):
        import workbench.layout as lay_mod
        f = getattr(lay_mod, name, None)
        if f is None or any(_is_dynamic(a) for a in args):
            raise self.err(node, f"Expected a tensor as the first argument of {name} inside a kernel.", TypeError)
        return self.checked(lambda: f(*args, **kw), node)

    def b_make_tensor(self, args, kw, node):
        a = _args(args, kw, ("ptr", "layout"))
        p, lay = a
        if type(p) is not KPointer:
            raise self.err(node, f"Expected a pointer argument (wb.make_ptr) for make_tensor, but got {_describe(p)}.", TypeError)
        return V.KTensor(p.buf, 0, self.checked(lambda: V.KLayout.of(lay), node))

    b_make_tensor_in_kernel = b_make_tensor

    def b_make_layout(self, args, kw, node):
        if not any(_is_dynamic(a) for a in list(args) + list(kw.values())):
            from ..layout import make_layout
            return self.checked(lambda: make_layout(*args, **kw), node)
        a = _args(args, kw, ("shape", "stride"), optional=1)
        shape = a[0]
        stride = a[1] if len(a) > 1 and a[1] is not None else None
        if stride is None:
            return V.KLayout.of(shape)
        if not it.congruent(shape, stride):
            raise self.err(node, "Expected a stride congruent with the shape.", ValueError)
        return V.KLayout(shape, stride)

    def b_size(self, args, kw, node):
        a = _args(args, kw, ("x", "mode"), optional=1)
        x = a[0]
        mode = a[1] if len(a) > 1 else None
        shp = _shape_of(x)
        if shp is None:
            raise self.err(node, f"Expected a tensor, layout or shape for size(), but got {_describe(x)}.", TypeError)
        if mode is not None:
            shp = shp[mode] if type(shp) is tuple else shp
        return V._product(shp)

    def b_shape(self, args, kw, node):
        shp = _shape_of(args[0])
        if shp is None:
            raise self.err(node, f"Expected a tensor or layout for shape(), but got {_describe(args[0])}.", TypeError)
        return shp

    def b_rank(self, args, kw, node):
        shp = _shape_of(args[0])
        return it.rank(shp)

    def b_cosize(self, args, kw, node):
        x = args[0]
        lay = x.layout if type(x) is V.KTensor else V.KLayout.of(x)
        if not lay.is_static:
            raise self.err(node, "Expected a static layout for cosize() inside a kernel.")
        from ..layout import cosize
        return cosize(Layout(lay.shape, lay.stride))

    def b_ceil_div(self, args, kw, node):
        a, b = args
        if type(a) is tuple:
            return tuple(V.ceil_div(x, b) for x in a)
        return V.ceil_div(a, b)

    def b_copy(self, args, kw, node):
        a = _args(args, kw, ("src", "dst"))
        src, dst = a
        for t, w in ((src, "src"), (dst, "dst")):
            if type(t) is not V.KTensor:
                raise self.err(node, f"Expected tensors for copy's {w}, but got {_describe(t)}.", TypeError)
        from .vectorize import lower_copy
        stmts = self.checked(lambda: lower_copy(src, dst), node)
        dst.buf.written = True
        if dst.buf.param is not None:
            self.written_args.add(dst.buf.param)
        for s in stmts:
            self.emit(s, node)

    b_min = lambda self, a, kw, n: self.minmaxabs("min", a, n)  # noqa: E731
    b_max = lambda self, a, kw, n: self.minmaxabs("max", a, n)  # noqa: E731


def _args(args, kw, names, optional=0):
    out = list(args)
    for n in names[len(args):]:
        if n in kw:
            out.append(kw.pop(n))
        elif len(out) >= len(names) - optional:
            break
        else:
            raise TypeError(f"Expected the argument '{n}'.")
    if kw:
        raise TypeError(f"Unexpected keyword arguments {sorted(kw)}.")
    return out


def _shape_of(x):
    if type(x) is V.KTensor:
        return x.shape
    if type(x) is V.KLayout or type(x) is Layout:
        return x.shape
    if type(x) is tuple or type(x) is int or isinstance(x, ir.Expr):
        return x
    return None


def _is_dynamic(v) -> bool:
    if isinstance(v, (ir.Expr, V.KTensor, V.KLayout, KPointer, Triple)):
        return True
    if type(v) is tuple:
        return any(_is_dynamic(e) for e in v)
    return False


def _describe(v) -> str:
    if isinstance(v, ir.Expr):
        return f"a dynamic {v.type}"
    if type(v) is V.KTensor:
        return f"the tensor {v}"
    if type(v) is Triple:
        return "an index triple"
    if type(v) is KPointer:
        return f"a pointer to {v.buf.etype}"
    if v is None:
        return "None"
    if type(v) in (int, float, bool):
        return f"the {type(v).__name__} {v!r}"
    return f"{type(v).__name__} {v!r}"[:80]


_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
           ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}
_OPNAME = {ast.MatMult: "@"}
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_MATH_FUNCS = {getattr(math, n) for n in ("sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil", "fabs", "pow", "erf", "log2")}
_PYMATH = {"exp2": lambda x: 2.0 ** x, "rsqrt": lambda x: 1.0 / math.sqrt(x)}
_ = (Float64, Int64)
