"""Frontend: one AST visitor that lowers a Python kernel function to the typed IR.

Static things (Python ints, layouts, tuples, element types, loop indices of unrolled loops)
are evaluated while lowering, as CuTe DSL does; dynamic things (thread indices, kernel
parameters, loads) become IR expressions, which implement the layout core's integer protocol,
so the core's algebra (tiles, divides, slicing, identity tensors) runs unchanged on them.
As on the host (and in CuTe DSL), a layout is evaluated by calling it (``L(i)``, ``L((i, j))``,
``L(i, j)``) and ``L[i]`` is its i-th mode; a tensor's ``t[c]`` is its element.  Algebra whose
divisibility condition the kernel's dynamic values cannot be proven to meet (``composition((m,4), 4:2)``
with m not known to be a multiple of 8) is refused while tracing, naming the mode and the divisibility
that would prove it: CuTe DSL computes wrong offsets there, and a run-time check would cost every thread.
A name that a dynamic ``if``/loop assigns is materialized as a C variable before the region; a
name first bound inside a dynamic region cannot be read after it.

Errors: every node is lowered through :meth:`Lowering.visit`, the one place that turns an
exception raised while lowering it (by the frontend, a builtin or the layout core) into a
:class:`KernelError` pointing at the user's line, with the original exception as its cause.
"""

from __future__ import annotations

import ast
import builtins as _py
import inspect
import linecache
import math
import textwrap
import threading
from contextlib import contextmanager

from .._element_types import Boolean, ElementType, Float32, Int32
from ..layout import ComposedLayout, IdentityTensor, Layout
from ..layout import inttuple as it
from ..layout.basis import map_leaves
from . import builtins as B
from . import captures, ir
from . import views as V
from .builtins import Triple
from .names import c_name
from .runtime.limits import MAX_STATIC_SMEM, TraceBudget, check_static_bits, check_static_int
from .views import KPointer

__all__ = ["KernelError", "FunctionSource", "Lowering", "KPointer"]

UNROLL_MAX = 64          # static range() loops up to this trip count are unrolled
_MATH1 = {"sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil", "fabs", "exp2", "log2", "erf"}
_MATH_FUNCS = {id(getattr(math, n)): (getattr(math, n), n) for n in sorted(_MATH1 | {"pow"})}


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


_KINDS = ((TypeError, KernelTypeError), (NameError, KernelNameError), (IndexError, KernelIndexError),
          (AttributeError, KernelAttributeError), (ValueError, KernelValueError), (ArithmeticError, KernelValueError))


def _kind(exc: BaseException):
    return next((cls for base, cls in _KINDS if isinstance(exc, base)), KernelError)


# CPython 3.11's AST conversions keep their recursion depth in interpreter-wide state: kernels defined in two
# threads at once raise "SystemError: AST constructor recursion depth mismatch" (gh-106905), so they take turns.
_AST_LOCK = threading.Lock()


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
        with _AST_LOCK:
            tree = ast.parse(ded)
        fdef = tree.body[0]
        if not isinstance(fdef, ast.FunctionDef):
            raise TypeError(f"Expected a plain 'def' function for @wb.kernel, but got {type(fdef).__name__}.")
        self.fn, self.fdef, self.first = fn, fdef, first
        self.filename = inspect.getsourcefile(fn) or "<kernel>"
        self.name = fn.__name__
        self.globals = fn.__globals__
        self.closure = dict(inspect.getclosurevars(fn).nonlocals)
        self.cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))   # read live (captures.py)
        a = fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
            raise self.error(fdef, "a kernel takes plain positional parameters (no defaults, *args, **kwargs or keyword-only)")
        self.params = [p.arg for p in a.args]
        self.constexpr = {p.arg for p in a.args if p.annotation is not None and self._annotation(p) is B.Constexpr}

    def _annotation(self, param):
        """The object a parameter's annotation names (evaluated in the function's scope, also under
        ``from __future__ import annotations``); a name that does not resolve is a located error."""
        node = param.annotation
        try:
            with _AST_LOCK:
                code = compile(ast.Expression(node), "<annotation>", "eval")
            v = eval(code, dict(self.globals), dict(self.closure))  # noqa: S307
            if type(v) is str:      # a string annotation: 'wb.Constexpr'
                v = eval(v, dict(self.globals), dict(self.closure))  # noqa: S307
        except Exception as e:
            raise self.error(node, f"Expected the annotation of parameter '{param.arg}' to name something "
                                   f"(e.g. wb.Constexpr), but evaluating it raised {type(e).__name__}: {e}",
                             type(e)) from e
        return v

    def error(self, node, msg, cls=KernelError):
        """A KernelError of the kind of ``cls`` located at ``node`` of this function."""
        if not issubclass(cls, KernelError):
            cls = next((k for base, k in _KINDS if issubclass(cls, base)), KernelError)
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

    def __init__(self, src: FunctionSource, bindings: dict, params: list, name: str, launch_bounds=None,
                 cluster=(1, 1, 1)):
        self.src = src
        self.launch_bounds = launch_bounds   # the kernel's (max threads, min blocks) or None
        self.cluster = cluster               # the kernel's cluster dims
        self.env = dict(bindings)
        self.params = params
        self.name = name
        self.out: list = []
        self.used = {p.name for p in params}       # C names taken (parameters first)
        self.suffixes: dict = {}                    # the last suffix given to each name (names.c_name)
        self.mutable: set = set()
        self.shared: list = []
        self.shared_bytes = 0
        self.uses_sync = False
        self.written_args: set = set()
        self.loop_kind: list = []      # 'if' | 'unrolled' | 'dynamic'
        self.min_arch = 0              # the compute capability the kernel's instructions need (mma.sync: 80)
        self.min_arch_reason = ""
        self.block_threads = None      # (threads, the tiled object that needs them) once a kernel partitions by one
        self.depth = 0
        self.node = src.fdef
        self.budget = TraceBudget()     # the bounds on unrolling, inlining and nesting (limits.py)
        self.captured: dict = {}        # what the kernel read from globals, closures, user modules (captures.py)

    # -- the one visitor ---------------------------------------------------------------------
    def visit(self, node):
        """Lower one statement or expression; any exception raised while doing so becomes a
        KernelError located at the innermost node being lowered (its cause kept)."""
        m = getattr(self, "visit_" + type(node).__name__, None)
        saved = self.node
        self.node = node
        try:
            self.budget.step()
            if m is None:
                what = "statements" if isinstance(node, ast.stmt) else "expressions"
                hint = (" (supported: assignment, if/elif/else, for ... in range(...), while, break, continue, "
                        "return, calls)") if isinstance(node, ast.stmt) else ""
                raise ValueError(f"'{type(node).__name__}' {what} are not supported in a kernel{hint}.")
            return m(node)
        except KernelError:
            raise
        except Exception as e:  # located here once, for every node kind; the cause is chained
            raise self.src.error(node, str(e) or type(e).__name__, _kind(e)) from e
        finally:
            self.node = saved

    # -- helpers used by the visitor and by builtins' lowerings -------------------------------
    def fresh(self, base):
        """A C variable name not used yet in this kernel (parameter names included), outside the
        backends' own names and both languages' reserved words (:func:`names.c_name`)."""
        return c_name(base, self.used, self.suffixes)

    def emit(self, stmt):
        stmt.line = getattr(self.node, "lineno", 0) + self.src.first - 1
        self.budget.statement(stmt)
        self.out.append(stmt)

    def declare_shared(self, etype, count, align=16):
        buf = ir.Buffer(self.fresh("smem"), etype, "smem", align, count=count)
        start = -(-self.shared_bytes // align) * align
        buf.smem_offset = start      # its byte offset in the block's shared memory (dynamic shared memory)
        self.shared_bytes = start + etype.storage_count(count) * max(1, etype.bits // 8)
        self.shared.append(buf)
        self.emit(ir.SharedDecl(buf))
        return buf

    def declare_local(self, etype, count):
        buf = ir.Buffer(self.fresh("frag"), etype, "rmem", 16)
        buf.count = count
        self.emit(ir.LocalDecl(buf))
        return buf

    def require_arch(self, cc: int, what: str):
        """The kernel uses an instruction of compute capability cc (what: the atom): launches check the device."""
        if cc > self.min_arch:
            self.min_arch, self.min_arch_reason = cc, what

    def require_block_threads(self, n: int, what: str, at_least: bool = False):
        """The kernel partitions by a tiled MMA or copy of n threads: launches must have n threads a block (at_least:
        n or more, whole warpgroups: a warp-specialized kernel's other warpgroups do not take part)."""
        if self.block_threads and self.block_threads[0] != n:
            raise ValueError(f"Expected every tiled MMA and copy of a kernel to partition the same threads, but "
                             f"{self.block_threads[1]} has {self.block_threads[0]} and {what} has {n}.")
        self.block_threads = (n, what, at_least and (self.block_threads is None or self.block_threads[2]))

    def uses_collectives(self):
        """A warp-collective instruction (mma.sync, ldmatrix): the CPU executor runs the block's threads in step
        (as for barriers) so that a warp's lanes meet at it."""
        self.uses_sync = True

    def mark_written(self, buf):
        buf.written = True
        if buf.param is not None:
            self.written_args.add(buf.param)

    def bind(self, v, base):
        """A non-trivial dynamic expression as a const C variable (a snapshot of its value now)."""
        if isinstance(v, ir.Expr) and not isinstance(v, (ir.Var, ir.Const, ir.Special, ir.InstructionExpr)):
            var = ir.Var(self.fresh(base), v.type, v.div)
            self.emit(ir.Let(var, v))
            return var
        return v

    def freeze(self, v):
        """Views made while tracing keep the offset (or coordinate origin) they had when made, even if
        variables it uses change later: bind it to a variable."""
        if type(v) is V.KTensor:
            off = self.bind(v.offset, "off")
            lay = v.layout
            if type(lay) is ComposedLayout and isinstance(lay.offset, ir.Expr):   # the offset inside a swizzle
                inner_off = self.bind(lay.offset, "soff")
                if inner_off is not lay.offset:
                    lay = ComposedLayout(lay.inner, inner_off, lay.outer, lay.ptr_bits)
            return v if off is v.offset and lay is v.layout else V.KTensor(v.buf, off, lay)
        if type(v) is IdentityTensor:
            return IdentityTensor(map_leaves(lambda x: self.bind(x, "crd"), v.origin), v.layout)
        if type(v) is tuple:
            return tuple(self.freeze(x) for x in v)
        return v

    @contextmanager
    def enter_sub_region(self, kind, function=None):
        """A nested scope: a dynamic region ('if'/'dynamic' loop body) lowers into its own
        statement list (yielded) over a copy of the names, and names it binds (other than mutable
        variables) become unreadable after it; an unrolled loop only records that it is one; a
        device function (``function``: its FunctionSource) gets its own names and loop stack.
        Everything is restored on exit, also when lowering raises."""
        nested = function is None and kind != "unrolled"
        if nested:
            self.budget.enter(kind == "dynamic")
        saved = (self.out, self.env, self.src, self.loop_kind, self.depth)
        region: list = []
        if function is not None:
            self.src, self.env, self.loop_kind, self.depth = function, {}, [], self.depth + 1
        else:
            self.loop_kind = self.loop_kind + [kind]
            if kind != "unrolled":
                self.out, self.env = region, dict(self.env)
        inner = self.env
        try:
            yield region
            if nested:   # a block of code ends: op modules check what it opened is closed
                B.region_end(self)
        finally:
            self.out, self.env, self.src, self.loop_kind, self.depth = saved
            if nested:
                self.budget.leave(kind == "dynamic")
        if function is None and kind != "unrolled":
            line = getattr(self.node, "lineno", 0) + self.src.first - 1
            for k, v in inner.items():
                if self.env.get(k) is not v:
                    self.env[k] = _Poison(f"'{k}' is assigned inside dynamic control flow (line {line}) and cannot be "
                                          f"used after it; assign it before the if/loop so that it becomes a variable.")

    def scalar(self, v, what="a number"):
        if isinstance(v, ir.Expr) or type(v) in (int, float, bool):
            return v
        raise TypeError(f"Expected {what}, but got {_describe(v)}.")

    # -- entry -------------------------------------------------------------------------------
    def run(self):
        if self.cluster != (1, 1, 1):
            self.require_arch(90, "thread-block clusters")
        for s in self.src.fdef.body:
            self.visit(s)
        B.region_end(self)
        dynamic = self.shared_bytes if self.shared_bytes > MAX_STATIC_SMEM else 0
        k = ir.KernelIR(c_name(self.name), self.params, self.out, self.uses_sync, self.shared_bytes, self.written_args,
                        dynamic, self.min_arch)
        k.min_arch_reason = self.min_arch_reason
        k.block_threads = self.block_threads
        k.launch_bounds = self.launch_bounds
        k.cluster = self.cluster
        if self.block_threads and self.launch_bounds and self.launch_bounds[0] < self.block_threads[0]:
            raise ValueError(f"Expected launch_bounds of at least {self.block_threads[0]} threads for {self.name}: it "
                             f"partitions by {self.block_threads[1]}, but the kernel declares at most "
                             f"{self.launch_bounds[0]}.")
        return k

    # -- statements --------------------------------------------------------------------------
    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        if isinstance(self.visit(node.value), ir.Expr):
            raise ValueError("Expected a statement, but got an expression whose value is unused.")

    def visit_Pass(self, node):
        pass

    def visit_Assign(self, node):
        if len(node.targets) != 1:
            raise ValueError("Expected a single assignment target (a = b), but got a chained assignment.")
        self.assign(node.targets[0], self.visit(node.value))

    def visit_AnnAssign(self, node):
        if node.value is None:
            raise ValueError("Expected an annotated assignment with a value.")
        v = self.visit(node.value)
        ann = self.visit(node.annotation)
        if type(ann) is ElementType:
            v = ir.cast(v, ann)
        self.assign(node.target, v)

    def visit_AugAssign(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise ValueError(f"unsupported operator in '{type(node.op).__name__}=' in a kernel.")
        if isinstance(node.target, ast.Subscript):
            t = self.visit(node.target.value)
            old = self.subscript_load(t, node.target)
            self.store(t, node.target, self.arith(op, old, self.visit(node.value)))
            return
        if not isinstance(node.target, ast.Name):
            raise ValueError("Expected a name or a tensor element on the left of an augmented assignment.")
        old = self.lookup(node.target.id)
        self.assign(node.target, self.arith(op, old, self.visit(node.value)))

    def assign(self, target, v):
        if isinstance(target, ast.Name):
            name = target.id
            cur = self.env.get(name)
            if isinstance(cur, ir.Var) and id(cur) in self.mutable:
                self.emit(ir.Assign(cur, self.convert(v, cur.type, name)))
                return
            self.env[name] = self.bind(v, name)
            return
        if isinstance(target, ast.Tuple):
            vals = v.vals if type(v) is Triple else v
            if not isinstance(vals, tuple) or len(vals) != len(target.elts):
                raise ValueError(f"Expected {len(target.elts)} values to unpack, but got {_describe(v)}.")
            for t, x in zip(target.elts, vals):
                self.assign(t, x)
            return
        if isinstance(target, ast.Subscript):
            self.store(self.visit(target.value), target, v)
            return
        raise ValueError(f"Expected a name, a tuple of names or a tensor element as assignment target, but got {type(target).__name__}.")

    def convert(self, v, t, name):
        v = self.scalar(v)
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
        raise TypeError(f"Variable '{name}' has type {t} but is assigned a {v.type}; cast explicitly, e.g. wb.{t}(...).")

    def store(self, t, target, v):
        if type(t) is not V.KTensor:
            raise TypeError(f"Expected a tensor to assign an element of, but got {_describe(t)}.")
        crd = self.visit(target.slice)
        _check_coord(crd)
        if it.has_none(crd):
            raise ValueError("Expected a full coordinate when writing a tensor element, but got a slice (None).")
        v = self.scalar(v, "a number to store")
        et = t.etype
        off = _offset(t, crd)
        vt = ir.value_type(et)
        if isinstance(v, ir.Expr) and v.type is not vt and ir.is_float_type(v.type) and ir.is_int_type(et):
            raise TypeError(f"Expected a value of the tensor's type {et}, but got {v.type}; cast explicitly, e.g. wb.{et}(...).")
        _addressable(t)
        self.mark_written(t.buf)
        self.emit(ir.Store(t.buf, off, v if isinstance(v, ir.Expr) else ir.as_expr(v, vt)))

    # -- control flow ------------------------------------------------------------------------
    def _materialize(self, stmts, extra=()):
        """Before a dynamic region: names it assigns that hold scalars become mutable C variables."""
        for name in sorted(_assigned(stmts) | set(extra)):
            v = self.env.get(name)
            if v is None or isinstance(v, _Poison) or (isinstance(v, ir.Var) and id(v) in self.mutable):
                continue
            if isinstance(v, ir.Expr) or type(v) in (int, float, bool):
                e = ir.as_expr(v)
                var = ir.Var(self.fresh(name), e.type, 1)
                self.emit(ir.Let(var, e, mutable=True))
                self.mutable.add(id(var))
                self.env[name] = var

    def _lower_region(self, kind, stmts):
        with self.enter_sub_region(kind) as body:
            for s in stmts:
                self.visit(s)
        return body

    def visit_If(self, node):
        c = ir.truth(self.visit(node.test))
        if not isinstance(c, ir.Expr):       # static condition: only the taken branch exists
            for s in (node.body if c else node.orelse):
                self.visit(s)
            return
        self._materialize(node.body + node.orelse)
        then = self._lower_region("if", node.body)
        orelse = self._lower_region("if", node.orelse)
        self.emit(ir.If(c, then, orelse))

    def visit_For(self, node):
        if node.orelse:
            raise ValueError("for ... else is not supported in a kernel.")
        call = node.iter
        it_fn = self.visit(call.func) if isinstance(call, ast.Call) and isinstance(call.func, (ast.Name, ast.Attribute)) else None
        if it_fn is not _py.range and it_fn is not B.range_dynamic:
            raise ValueError("Expected 'for ... in range(...)' (or wb.range_dynamic(...)) in a kernel, but got another iterable.")
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise ValueError("Expected range(stop), range(start, stop) or range(start, stop, step).")
        args = [self.scalar(self.visit(a), "an integer range bound") for a in call.args]
        for a in args:
            if type(a) is float or (isinstance(a, ir.Expr) and not ir.is_int_type(a.type)):
                raise TypeError(f"Expected an integer range bound, but got {_describe(a)}.")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
        if not isinstance(node.target, ast.Name):
            raise ValueError("Expected a single loop variable name.")
        if type(step) is not int or step == 0:
            raise ValueError(f"Expected a static non-zero range step, but got {_describe(step)}.")
        name = node.target.id
        if it_fn is _py.range and type(start) is int and type(stop) is int and len(range(start, stop, step)) <= UNROLL_MAX:
            with self.enter_sub_region("unrolled"):
                for i in range(start, stop, step):
                    self.env[name] = i
                    for s in node.body:
                        self.visit(s)
            return
        self._materialize(node.body)
        t = ir.promote(*(ir.as_expr(x).type for x in (start, stop))) if any(isinstance(x, ir.Expr) for x in (start, stop)) else Int32
        var = ir.Var(self.fresh(name), t)
        self.env[name] = var
        body = self._lower_region("dynamic", node.body)
        line = node.lineno + self.src.first - 1
        self.env[name] = _Poison(f"the loop variable '{name}' of the loop at line {line} cannot be used after the loop.")
        self.emit(ir.For(var, ir.as_expr(start, t), ir.as_expr(stop, t), step, body))

    def visit_While(self, node):
        if node.orelse:
            raise ValueError("while ... else is not supported in a kernel.")
        self._materialize(node.body)
        c = ir.truth(self.visit(node.test))
        if not isinstance(c, ir.Expr):
            if not c:
                return
            c = ir.Const(True, Boolean)
        self.emit(ir.While(c, self._lower_region("dynamic", node.body)))

    def _in_dynamic_loop(self, what):
        for k in reversed(self.loop_kind):
            if k == "dynamic":
                return
            if k == "unrolled":
                raise ValueError(f"'{what}' inside a loop that is unrolled (static range bounds) is not supported; "
                                 "use a while loop or dynamic bounds.")
        raise ValueError(f"'{what}' outside a loop.")

    def visit_Break(self, node):
        self._in_dynamic_loop("break")
        self.emit(ir.Break())

    def visit_Continue(self, node):
        self._in_dynamic_loop("continue")
        self.emit(ir.Continue())

    def visit_Return(self, node):
        if self.depth > 0:
            raise ValueError("A device function may return only as its last statement.")
        if node.value is not None:
            raise ValueError("A kernel returns nothing: write results into a tensor argument.")
        self.emit(ir.Return())

    # -- expressions -------------------------------------------------------------------------
    def visit_Constant(self, node):
        v = node.value
        if v is None or type(v) in (int, float, bool):
            return v
        raise TypeError(f"Expected an int, float or bool constant, but got {type(v).__name__} {v!r}.")

    def lookup(self, name):
        if name in self.env:
            v = self.env[name]
            if isinstance(v, _Poison):
                raise ValueError(v.msg)
            return v
        cell = self.src.cells.get(name)
        if cell is not None:
            try:
                return self.capture(cell, name, cell.cell_contents)
            except ValueError:
                raise NameError(f"free variable '{name}' is not bound (deleted or not yet assigned)") from None
        if name in self.src.globals:
            return self.capture(self.src.globals, name, self.src.globals[name])
        if hasattr(_py, name):
            return getattr(_py, name)
        raise NameError(f"name '{name}' is not defined")

    def capture(self, ns, name, value):
        """A value read from outside the kernel: a compile-time constant this specialization records."""
        if captures.watched(value):
            self.captured.setdefault((id(ns), name), captures.Capture(ns, name, value))
        return value

    def visit_Name(self, node):
        v = self.lookup(node.id)
        if type(v) is list:
            raise TypeError(f"Expected a tuple, but '{node.id}' is a list (lists are mutable; use a tuple).")
        return v

    def visit_Tuple(self, node):
        return tuple(self.visit(e) for e in node.elts)

    _ATTRS = {V.KTensor: ("shape", "stride", "layout", "element_type"), Layout: ("shape", "stride", "rank", "depth", "size", "cosize"),
              IdentityTensor: ("shape", "stride", "layout")}

    def visit_Attribute(self, node):
        v = self.visit(node.value)
        a = node.attr
        if type(v) is Triple and a in ("x", "y", "z"):
            return v.vals["xyz".index(a)]
        if a in self._ATTRS.get(type(v), ()):
            return v.etype if a == "element_type" else getattr(v, a)
        if a in B.ATTRIBUTES.get(type(v), ()):
            return getattr(v, a)
        if (inspect.ismodule(v) or type(v) is ElementType) and not a.startswith("_") and hasattr(v, a):
            if inspect.ismodule(v) and captures.user_module(v):
                return self.capture(vars(v), a, getattr(v, a))
            return getattr(v, a)
        m = B.bound_method(v, a)
        if m is not None:
            return m
        raise AttributeError(f"{_describe(v)} has no attribute '{a}' usable in a kernel.")

    def arith(self, op, a, b):
        for x in (a, b):
            if not (isinstance(x, ir.Expr) or type(x) in (int, float, bool)):
                raise TypeError(f"Expected numbers for '{op}', but got {_describe(a)} and {_describe(b)}.")
        if op == "**":
            if type(b) is int and 0 <= b <= 4 and isinstance(a, ir.Expr):
                r = 1
                for _ in range(b):
                    r = ir.binop("*", r, a)
                return r
            if not isinstance(a, ir.Expr) and not isinstance(b, ir.Expr):
                if type(a) is int and type(b) is int and b > 0 and abs(a) > 1:
                    check_static_bits((abs(a).bit_length() - 1) * b)   # before computing it
                return check_static_int(a ** b)
            return ir.Call("pow", [ir.as_expr(a, Float32), ir.as_expr(b, Float32)], ir.promote(ir.as_expr(a, Float32).type, Float32))
        if op == "<<" and type(a) is int and type(b) is int:
            check_static_bits(a.bit_length() + b)
        return check_static_int(ir.binop(op, a, b))

    def visit_BinOp(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise ValueError(f"unsupported operator '{_OPNAME.get(type(node.op), type(node.op).__name__)}' in a kernel "
                             "(supported: + - * / // % ** & | ^ << >>).")
        a, b = self.visit(node.left), self.visit(node.right)
        if type(a) is tuple and type(b) is tuple and op == "+":
            return a + b
        return self.arith(op, a, b)

    def visit_UnaryOp(self, node):
        v = self.scalar(self.visit(node.operand))
        if isinstance(node.op, ast.Not):
            c = ir.truth(v)
            return (not c) if not isinstance(c, ir.Expr) else ir.UnOp("!", c, Boolean)
        if isinstance(node.op, ast.USub):
            return -v if not isinstance(v, ir.Expr) else ir.UnOp("-", v, v.type)
        if isinstance(node.op, ast.UAdd):
            return v
        if not isinstance(v, ir.Expr):
            return ~v
        if not ir.is_int_type(v.type):
            raise TypeError(f"Expected an integer for '~', but got {v.type}.")
        return ir.UnOp("~", v, v.type)

    def visit_BoolOp(self, node):
        op = "&&" if isinstance(node.op, ast.And) else "||"
        acc = None
        for e in node.values:
            c = ir.truth(self.scalar(self.visit(e)))
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

    def visit_Compare(self, node):
        left = self.visit(node.left)
        acc = True
        for opn, right in zip(node.ops, node.comparators):
            r = self.visit(right)
            op = _CMPOPS.get(type(opn))
            if op is None:
                raise ValueError(f"unsupported comparison '{type(opn).__name__}' in a kernel (supported: < <= > >= == !=).")
            if type(left) is ElementType or type(r) is ElementType:   # static: `if C.element_type == wb.Float16`
                if op not in ("==", "!="):
                    raise TypeError(f"Expected == or != between element types, but got '{op}'.")
                c = (left is r) == (op == "==")
            elif isinstance(left, tuple) or isinstance(r, tuple):
                c = (left == r) if op == "==" else (left != r) if op == "!=" else None
                if c is None or any(isinstance(x, ir.Expr) for x in it.flatten(tuple(left) if isinstance(left, tuple) else left)
                                    + it.flatten(tuple(r) if isinstance(r, tuple) else r)):
                    raise TypeError("Expected numbers to compare, but got tuples with dynamic values "
                                    "(compare a coordinate with a shape with wb.elem_less).")
            else:
                c = ir.compare(op, self.scalar(left), self.scalar(r))
            if acc is True:
                acc = c
            elif isinstance(acc, ir.Expr) or isinstance(c, ir.Expr):
                acc = ir.BinOp("&&", ir.truth(acc) if isinstance(acc, ir.Expr) else ir.Const(bool(acc), Boolean),
                               ir.truth(c) if isinstance(c, ir.Expr) else ir.Const(bool(c), Boolean), Boolean)
            else:
                acc = acc and c
            left = r
        return acc

    def visit_IfExp(self, node):
        c = ir.truth(self.scalar(self.visit(node.test)))
        if not isinstance(c, ir.Expr):
            return self.visit(node.body if c else node.orelse)
        a = self.scalar(self.visit(node.body))
        b = self.scalar(self.visit(node.orelse))
        t = ir.result_type(a, b) if (isinstance(a, ir.Expr) or isinstance(b, ir.Expr)) else ir.as_expr(a).type
        return ir.Select(c, ir.as_expr(a, t) if not isinstance(a, ir.Expr) else ir.cast(a, t),
                         ir.as_expr(b, t) if not isinstance(b, ir.Expr) else ir.cast(b, t), t)

    def visit_Subscript(self, node):
        base = self.visit(node.value)
        if type(base) is V.KTensor:
            return self.subscript_load(base, node)
        idx = self.visit(node.slice)
        if type(base) is Triple:
            base = base.vals
        if isinstance(base, tuple):
            if type(idx) is not int:
                raise TypeError(f"Expected a static integer index into a tuple, but got {_describe(idx)}.")
            if not -len(base) <= idx < len(base):
                raise IndexError(f"Expected an index below {len(base)}, but got {idx}.")
            return base[idx]
        if _is_layout(base):
            return base[idx]      # the i-th mode, as on the host (CuTe's get<i>); L(c) evaluates
        if type(base) is IdentityTensor:
            _check_coord(idx)
            return self.freeze(base[idx])
        raise TypeError(f"Expected a tensor, a tuple or a layout to index, but got {_describe(base)}.")

    def subscript_load(self, t, node):
        crd = self.visit(node.slice)
        _check_coord(crd)
        if it.has_none(crd):
            return self.freeze(t.slice(crd))
        _addressable(t)
        return ir.Load(t.buf, _offset(t, crd))

    # -- calls -------------------------------------------------------------------------------
    def visit_Call(self, node):
        if any(k.arg is None for k in node.keywords):
            raise ValueError("**kwargs in calls are not supported in a kernel.")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise ValueError("*args in calls are not supported in a kernel.")
        f = self.visit(node.func)
        args = [self.visit(a) for a in node.args]
        kw = {k.arg: self.visit(k.value) for k in node.keywords}
        return self.call(f, args, kw, node)

    def call(self, f, args, kw, node):
        """What a call means in a kernel; every callable is recognized by identity."""
        if type(f) is ElementType:
            if len(args) != 1 or kw:
                raise TypeError(f"Expected {f}(value), but got {len(args)} arguments.")
            if f not in ir.SCALAR_TYPES:
                raise TypeError(f"Expected a scalar type usable in arithmetic, but got {f}.")
            return ir.cast(self.scalar(args[0]), f)
        if f is _py.int or f is _py.float or f is _py.bool:
            v = self.scalar(args[0]) if len(args) == 1 and not kw else None
            if v is None:
                raise TypeError(f"Expected {f.__name__}(value) with one argument.")
            return f(v) if not isinstance(v, ir.Expr) else ir.cast(v, {int: Int32, float: Float32, bool: Boolean}[f])
        if f is _py.min or f is _py.max or f is _py.abs:
            return self.minmaxabs(f.__name__, args)
        if f is _py.len:
            if len(args) == 1 and isinstance(args[0], tuple):
                return len(args[0])
            if len(args) == 1 and type(args[0]) is Triple:
                return 3
            raise TypeError(f"Expected a tuple for len(), but got {_describe(args[0] if args else None)}.")
        if f is _py.range:
            raise ValueError("range() is only allowed as the iterable of a for loop.")
        if type(f) is B.BoundMethod:
            return self.freeze(f.lower(self, f.obj, *args, **kw))
        if getattr(type(f), "_wb_device_function", False):
            return self.inline(f, args, kw, node)
        if _is_layout(f):        # L(i), L((i, j)), L(i, j), L(None, j): the core evaluates (or slices) it
            if kw:
                raise TypeError(f"Expected a layout called on a coordinate, L(c), but got keyword arguments {sorted(kw)}.")
            for a in args:
                _check_coord(a)
            return self.freeze(f(*args))
        lower = B.lowering(f)
        if lower is not None:
            return self.freeze(lower(self, *args, **kw))
        if B.is_trace_time(f):       # the layout core on ints and IR values
            return self.freeze(f(*args, **kw))
        m = _MATH_FUNCS.get(id(f))
        if m is not None and m[0] is f:
            return self.mathcall(m[1], args)
        raise TypeError(f"calls to {getattr(f, '__qualname__', None) or _describe(f)} are not supported in a kernel "
                        "(mark device functions with @wb.kernel).")

    def mathcall(self, name, args):
        if name == "pow":
            return self.arith("**", args[0], args[1])
        if name == "fabs":
            return self.minmaxabs("abs", args)
        if len(args) != 1:
            raise TypeError(f"Expected math.{name}(x) with one argument, but got {len(args)}.")
        v = self.scalar(args[0])
        if not isinstance(v, ir.Expr):
            return getattr(math, name)(v)
        t = v.type if ir.is_float_type(v.type) else Float32
        return ir.Call(name, [ir.cast(v, t)], t)

    def minmaxabs(self, name, args):
        if name == "abs":
            v = self.scalar(args[0])
            return abs(v) if not isinstance(v, ir.Expr) else ir.Call("abs", [v], v.type)
        if len(args) < 2:
            raise TypeError(f"Expected {name}(a, b, ...) with at least two numbers in a kernel.")
        acc = self.scalar(args[0])
        for b in args[1:]:
            b = self.scalar(b)
            if not isinstance(acc, ir.Expr) and not isinstance(b, ir.Expr):
                acc = min(acc, b) if name == "min" else max(acc, b)
                continue
            t = ir.result_type(acc, b)
            acc = ir.Call(name, [ir.cast(ir.as_expr(acc, t), t), ir.cast(ir.as_expr(b, t), t)], t)
        return acc

    def inline(self, k, args, kw, node):
        if kw:
            raise TypeError("Device functions take positional arguments only.")
        src = k.source
        if len(args) != len(src.params):
            raise TypeError(f"Expected {len(src.params)} arguments for {src.name}, but got {len(args)}.")
        if self.depth > 16:
            raise RecursionError("Device function calls nest more than 16 deep (recursion is not supported).")
        body = src.fdef.body
        for s in body[:-1]:
            for n in ast.walk(s):
                if isinstance(n, ast.Return):
                    raise src.error(n, "A device function may return only as its last statement.")
        self.emit(ir.Comment(f"inlined {src.name}()"))
        with self.enter_sub_region("function", function=src):
            self.env.update(zip(src.params, args))
            ret = None
            for s in body:
                if isinstance(s, ast.Return) and s is body[-1]:
                    ret = None if s.value is None else self.visit(s.value)
                    if isinstance(ret, ir.Expr):
                        self.node = s
                        ret = self.bind(ret, src.name + "_ret")
                    break
                self.visit(s)
        return ret


def _addressable(t):
    """Threads read and write global, shared and register memory element by element; other memories (Blackwell's
    tensor memory) only through their copy instructions."""
    if t.buf.space not in ("gmem", "smem", "rmem"):
        raise TypeError(f"Expected a tensor of global, shared or register memory to index, but got {t}: tensor memory is "
                        "read and written by wb.copy with a TMEM copy atom (SM100_TMEM_LOAD/STORE), not element by element.")
    V.refuse_packed(t.buf)


def _offset(t, crd):
    """The element offset of t[crd] as IR; a static one must be an Int64 (a layout with a huge stride gives
    offsets past 2**63, which the GPU would wrap to a small one)."""
    off = t.offset_of(crd)
    if type(off) is int and not -(1 << 63) <= off < (1 << 63):
        raise ValueError(f"Expected an element offset within Int64 for {t}[{crd}], but its layout gives {off}.")
    return ir.as_expr(off)


def _is_layout(v) -> bool:
    return type(v) is Layout or type(v) is ComposedLayout


def _check_coord(c):
    if c is None or type(c) is int:
        return
    if isinstance(c, tuple):
        for e in c:
            _check_coord(e)
        return
    if isinstance(c, ir.Expr) and ir.is_int_type(c.type):
        return
    raise TypeError(f"Expected an integer index or coordinate, but got {_describe(c)}.")


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
