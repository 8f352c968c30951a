"""Differential fuzzing of the kernel DSL: small kernels from a seeded generator run on the CPU executor and on a GPU,
and every output and every refusal is compared.  The two must agree, or the CPU executor must be the stricter (it
refuses an out-of-bounds index or a barrier that never completes, which a GPU would run into memory it does not own
or hang on): never the other way round.

Each seed writes one module of kernels (the DSL reads a kernel's source, so they live in a file):

* ``ew``: elementwise arithmetic trees over two inputs and constants, int32 (``+ - *``, ``//`` and ``%`` by positive
  constants, C's truncating semantics, which the DSL defines for both backends) or float32 (``+ - *``);
* ``smem``: the block's inputs through a shared tensor, reversed across ``sync_threads()``, combined with the tree;
* ``named``: a producer half of the block writes shared memory and ``bar.arrive``s on a named barrier, the consumer
  half ``bar.sync``s on it and reads;
* ``rounds``: every thread at ``bar.sync 1, count`` with count dividing the block (PTX releases rounds of count);
* ``oob``: an index past the end by a run-time offset, and ``rounds`` whose count leaves threads over: the CPU
  executor must refuse both (these are not launched on the GPU: it would write memory it does not own, or hang).

On the ``cpu`` backend each kernel is checked against a numpy oracle of the same tree; on ``cuda`` (``pytest -m gpu
tests/test_fuzz_kernels.py`` on an H100/H200) the same kernel runs on the CPU executor and on cupy arrays, and the
two are compared.
"""

from __future__ import annotations

import importlib.util
import textwrap

import numpy as np
import pytest

from workbench.dsl.backends.cpu import KernelRuntimeError

SEEDS = range(16)
_MAX_INT = 60          # |inputs| and constants stay small: an int32 tree of depth 3 cannot overflow


# -- the generator: (source text, numpy oracle) of an expression tree ----------------------------------------------
def _tdiv(x, y):        # C's truncating division and remainder (the DSL's, on both backends)
    return (x - np.fmod(x, y)) // y


def _tree(rng, depth, is_int):
    """(text, f(a, b) -> numpy array)."""
    if depth == 0 or rng.random() < 0.25:
        k = rng.integers(3)
        if k == 0:
            return "a[i]", lambda a, b: a
        if k == 1:
            return "b[i]", lambda a, b: b
        c = int(rng.integers(-5, 6)) if is_int else float(rng.integers(-8, 9)) / 4
        return repr(c), (lambda a, b, c=c: np.full_like(a, c))
    ops = ["+", "-", "*"] + (["//", "%"] if is_int else [])
    op = ops[rng.integers(len(ops))]
    lt, lf = _tree(rng, depth - 1, is_int)
    if op in ("//", "%"):
        d = int(rng.integers(1, 7))
        rt, rf = repr(d), (lambda a, b, d=d: np.full_like(a, d))
    else:
        rt, rf = _tree(rng, depth - 1, is_int)
    fn = {"+": np.add, "-": np.subtract, "*": np.multiply, "//": _tdiv, "%": np.fmod}[op]
    return f"({lt} {op} {rt})", (lambda a, b, lf=lf, rf=rf, fn=fn: fn(lf(a, b), rf(a, b)))


class Case:
    """One generated kernel: its name, kind, launch and inputs; ``expect``: the oracle's output, or None where the
    CPU executor must refuse it."""

    def __init__(self, name, kind, src, grid, block, inputs, expect, is_int, extra=()):
        self.name, self.kind, self.src, self.grid, self.block = name, kind, src, grid, block
        self.inputs, self.expect, self.is_int, self.extra = inputs, expect, is_int, extra


def generate(seed):
    rng = np.random.default_rng(seed)
    cases = []
    for j in range(5):
        kind = ("ew", "smem", "named", "rounds", "oob")[j]
        is_int = bool(rng.integers(2))
        dt = np.int32 if is_int else np.float32
        text, f = _tree(rng, 3, is_int)
        warps = int(rng.integers(1, 4))
        bs = 32 * warps
        name = f"k{seed}_{j}_{kind}"
        if kind == "ew":
            n = int(rng.integers(1, 300))
            grid = -(-n // bs)
            src = f"""
                @wb.kernel
                def {name}(a, b, out):
                    i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
                    if i < wb.size(out):
                        out[i] = {text}
                """
            a, b = _inputs(rng, n, dt)
            cases.append(Case(name, kind, src, grid, bs, (a, b), f(a, b).astype(dt), is_int))
        elif kind == "smem":
            grid = int(rng.integers(1, 4))
            n = grid * bs
            et = "wb.Int32" if is_int else "wb.Float32"
            src = f"""
                @wb.kernel
                def {name}(a, b, out):
                    s = wb.shared_tensor({et}, wb.make_layout({bs}))
                    t = wb.thread_idx().x
                    i = wb.block_idx().x * {bs} + t
                    s[t] = b[i]
                    wb.sync_threads()
                    b2 = s[{bs - 1} - t]
                    out[i] = b2 + {text}
                """
            a, b = _inputs(rng, n, dt)
            rev = b.reshape(grid, bs)[:, ::-1].reshape(-1)
            cases.append(Case(name, kind, src, grid, bs, (a, b), (rev + f(a, b)).astype(dt), is_int))
        elif kind == "named":
            half = bs
            et = "wb.Int32" if is_int else "wb.Float32"
            src = f"""
                @wb.kernel
                def {name}(a, b, out):
                    s = wb.shared_tensor({et}, wb.make_layout({half}))
                    t = wb.thread_idx().x
                    if t < {half}:
                        i = t
                        s[t] = {text}
                        wb.barrier_arrive(1, {2 * half})
                    else:
                        wb.barrier(1, {2 * half})
                        out[t - {half}] = s[t - {half}] * 2
                """
            a, b = _inputs(rng, half, dt)
            cases.append(Case(name, kind, src, 1, 2 * half, (a, b), (f(a, b) * 2).astype(dt), is_int))
        elif kind == "rounds":
            if rng.integers(3) == 0:          # 3 warps at count 64: one round, then a warp left over (a hang)
                count, threads = 64, 96
            else:                             # count dividing the block: rounds of count threads
                d = [x for x in range(1, warps + 1) if warps % x == 0]
                count, threads = 32 * d[rng.integers(len(d))], bs
            ok = threads % count == 0
            src = f"""
                @wb.kernel
                def {name}(a, b, out):
                    i = wb.thread_idx().x
                    wb.barrier(1, {count})
                    out[i] = {text}
                """
            a, b = _inputs(rng, threads, dt)
            cases.append(Case(name, kind, src, 1, threads, (a, b), f(a, b).astype(dt) if ok else None, is_int))
        else:
            n = int(rng.integers(1, 200))
            grid = -(-n // bs)
            src = f"""
                @wb.kernel
                def {name}(a, b, out, off):
                    i = wb.block_idx().x * wb.block_dim().x + wb.thread_idx().x
                    if i < wb.size(out):
                        out[i + off] = {text}
                """
            a, b = _inputs(rng, n, dt)
            off = int(rng.integers(1, 5)) * (1 if rng.integers(2) else -(n + 1))   # past either end
            cases.append(Case(name, kind, src, grid, bs, (a, b), None, is_int, extra=(off,)))
    return cases


def _inputs(rng, n, dt):
    a = rng.integers(-_MAX_INT, _MAX_INT, n).astype(dt)
    b = rng.integers(-_MAX_INT, _MAX_INT, n).astype(dt)
    if dt == np.float32:
        a = a / np.float32(4)
        b = b / np.float32(8)
    return a.astype(dt), b.astype(dt)


def _module(tmp_path, seed, cases):
    path = tmp_path / f"fuzz_kernels_{seed}.py"
    path.write_text("import workbench as wb\n\n" + "\n".join(textwrap.dedent(c.src) for c in cases))
    spec = importlib.util.spec_from_file_location(f"fuzz_kernels_{seed}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(kern, case, xp):
    """('ok', output as numpy) or ('refused', the exception)."""
    a, b = (xp.asarray(x) for x in case.inputs)
    out = xp.zeros(case.inputs[0].shape, case.inputs[0].dtype)
    try:
        kern[case.grid, case.block](a, b, out, *case.extra)
        if xp is not np:
            xp.cuda.runtime.deviceSynchronize()
    except (ValueError, TypeError, IndexError, KernelRuntimeError) as e:
        return "refused", e
    return "ok", (out if xp is np else xp.asnumpy(out))


def _same(x, y, is_int):
    if is_int:
        np.testing.assert_array_equal(x, y)
    else:           # a GPU may contract a*b+c into one FMA (one rounding fewer)
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_kernels_agree_across_backends(seed, backend, tmp_path):
    cases = generate(seed)
    mod = _module(tmp_path, seed, cases)
    for c in cases:
        kern = getattr(mod, c.name)
        cpu, cpu_val = _run(kern, c, np)
        if c.expect is None:      # out of bounds or a barrier that never completes: the CPU executor refuses
            assert cpu == "refused", (c.name, c.src)
            assert isinstance(cpu_val, (KernelRuntimeError, IndexError, ValueError)), (c.name, cpu_val)
            continue              # (not launched on a GPU: it would write memory it does not own, or hang)
        assert cpu == "ok", (c.name, c.src, cpu_val)
        if backend.name == "cpu":
            _same(cpu_val, c.expect, c.is_int)
            continue
        import cupy
        gpu, gpu_val = _run(kern, c, cupy)
        # the GPU refusing what the CPU executor ran would make the CPU the laxer: never allowed
        assert gpu == "ok", (c.name, c.src, gpu_val)
        _same(gpu_val, cpu_val, c.is_int)
        _same(gpu_val, c.expect, c.is_int)


def test_the_generator_covers_every_kind_and_both_verdicts():
    """The seeds exercise every kernel kind, int and float trees, and refusals as well as runs (else the differential
    test above would compare less than it claims)."""
    cases = [c for s in SEEDS for c in generate(s)]
    assert {c.kind for c in cases} == {"ew", "smem", "named", "rounds", "oob"}
    assert any(c.is_int for c in cases) and any(not c.is_int for c in cases)
    assert any(c.kind == "rounds" and c.expect is None for c in cases)
    assert any(c.kind == "rounds" and c.expect is not None and c.block > 32 and c.block // 32 > 1 for c in cases)
    assert any("//" in c.src or "%" in c.src for c in cases)
