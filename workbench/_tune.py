"""The tuner: ``wb.tune(kind, shapes, dtypes)`` and ``python -m workbench tune`` measure every configuration of a
GEMM's configuration space per (shape, dtype), pick the fastest correct one and cache the choice per GPU model.

    import workbench as wb
    res = wb.tune("hopper", [(4096, 4096, 4096), (8192, 7168, 2048)], ["float16", "bfloat16"])
    res                                   # in a notebook: the table of the sweep (also res.to_markdown())
    res.best_config((4096, 4096, 4096), "float16")   # {'bm': 128, 'bn': 256, ...}: HopperGemm(**that, dtype=...)
    res.plot()                            # each configuration's speed relative to cuBLAS (matplotlib)
    res.save("sweep.json")

    python -m workbench tune --kind hopper --shapes 4096x4096x4096 8192x8192x8192 --dtypes float16 bfloat16
    python -m workbench tune --kind cpu --shapes 16x16x16 --workers 2         # anywhere: the CPU executor
    python -m workbench tune --kind hopper --shapes 4096x4096x4096 --ray auto  # over a Ray cluster

Spaces (``kind``): ``"hopper"`` (``HopperGemm``: bm/bn/bk/stages/group/persistent/cluster/pingpong/overlap/regs/
stream_k; SM90, fp16 and bf16, C in the inputs' type as cuBLAS writes it, or with ``c="float32"`` in fp32 against
cuBLAS writing fp32, ``torch.mm(a, b.t(), out_dtype=torch.float32)``; choices cached apart), ``"smem"`` (``SmemGemm``, rungs 3-5: fp16 in, fp32 C) and
``"cpu"`` (a small SIMT GEMM on the CPU executor, fp32: what the tests sweep; its times are host wall times of the
CPU executor, not GPU measurements).  ``configs=[{...}, ...]`` replaces the space by the given configurations.

How each configuration is measured, in one worker: its output is first checked against the reference (cuBLAS,
``torch.matmul``, on the GPU; numpy on the CPU) on normal(0,1) inputs (seeded, so every worker sees the same
ones); a wrong or failing configuration is reported in the table and never chosen.  Then it is timed against the
reference call by call, interleaved (``workbench.bench.bandwidth._times``: CUDA events, median of ``reps`` calls
after 3 warm-ups; on the CPU: alternating wall-clock calls), and scored (``score``, lower is better): on a GPU by its
time relative to cuBLAS timed beside it (``relative_time``; ``ratio_to_reference`` is its inverse), so that workers
on several GPUs (or hosts), whose clocks differ, are compared by what each measured against its own reference; on
the CPU executor by its time itself (numpy's microsecond calls are too noisy a yardstick there).  The chosen
configuration per (shape, dtype) is the correct one with the lowest score.

Workers: one process per GPU of the host (``multiprocessing``, spawn, each with its own ``CUDA_VISIBLE_DEVICES``),
or ``workers`` processes for the ``"cpu"`` space; the configurations are dealt to them one by one as they finish.
With ``ray_address`` (an address, ``"auto"``, or ``"local"`` to start Ray on this machine), one Ray actor per GPU
of the cluster (``num_gpus=1``) instead; Ray is optional (``pip install 'layout-workbench[tune]'``).  A progress
bar (tqdm when installed, else a counter on stderr) follows the sweep.

Cache: the choices are kept in ``<cache dir>/<GPU model>.json`` (``$WORKBENCH_TUNE_CACHE`` if set, else
``$XDG_CACHE_HOME/layout-workbench/tune``, else ``~/.cache/layout-workbench/tune``), keyed by space, shape, dtype
and a hash of the configuration space; ``cache=True`` reuses a choice made on this GPU model (those rows say
``"cached": true``), ``"refresh"`` measures again and overwrites, ``False`` neither reads nor writes.
:func:`lookup` reads a cached choice.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import re
import statistics
import sys
import time

__all__ = ["tune", "TuneResult", "lookup", "SPACES", "cache_dir"]

SPACES = {
    "hopper": "HopperGemm (TMA + wgmma) on an SM90 GPU: fp16/bf16 in, C in the inputs' type, against cuBLAS",
    "smem": "SmemGemm (shared memory, ldmatrix, cp.async ring) on a GPU: fp16 in, fp32 C, against cuBLAS",
    "cpu": "a SIMT GEMM on the CPU executor (fp32; host wall time, not a GPU measurement), against numpy",
}
DTYPES = {"hopper": ("float16", "bfloat16"), "smem": ("float16",), "cpu": ("float32",)}
C_TYPES = ("float32",)     # c=: C in fp32 (hopper; the smem and cpu spaces' C is fp32 already)
CACHE_VERSION = 1


# -- configuration spaces ------------------------------------------------------------------------------------------
def default_configs(kind: str) -> list[dict]:
    """The configurations a space sweeps by default (keyword arguments of its configuration class; the ones the
    class refuses, e.g. too much shared memory, are left out)."""
    _check_kind(kind)
    out = []
    if kind == "hopper":
        for bn in (128, 256):
            for stages in (3, 4, 5, 6):
                for group in (8, 16):
                    for persistent, cluster in ((False, 1), (True, 1), (False, 2), (True, 2)):
                        out.append(dict(bm=128, bn=bn, bk=64, stages=stages, group=group, persistent=persistent,
                                        cluster=cluster))
        out.append(dict(bm=128, bn=256, bk=32, stages=8, group=8))
        out += [dict(bm=128, bn=128, bk=64, stages=5, group=8, pingpong=True),
                dict(bm=64, bn=256, bk=64, stages=4, group=8, pingpong=True)]
        # the schedule steps (benchmarks/hopper_schedules.py): the overlapped epilogue with 24/240 registers, stream-K
        for group in (8, 16, 32):       # 32: the LLM projections' best band with stream-K (tune-group-H200.txt)
            for extra in (dict(overlap=True, regs=[24, 240]), dict(stream_k=True),
                          dict(overlap=True, regs=[24, 240], stream_k=True)):
                out.append(dict(bm=128, bn=256, bk=64, stages=4, group=group, persistent=True, **extra))
        # tile shapes per shape family (hopper-schedules-H200.json): few rows (M <= 512), 64-row tiles of one consumer
        # warpgroup; ragged sizes, 128 x 192 tiles with stream-K
        for group in (8, 16):
            out.append(dict(bm=64, bn=128, bk=64, stages=8, group=group, persistent=True))
        out.append(dict(bm=64, bn=256, bk=64, stages=5, group=8, persistent=True))
        for sk in (False, True):
            out.append(dict(bm=128, bn=192, bk=64, stages=4, group=16, persistent=True, overlap=True, regs=[24, 240],
                            stream_k=sk))
        # wave quantization: ping-pong tiles 128 x 160 (the LLM projections) and 128 x 176 (N = 7168 is 41 x 176);
        # cooperative 128 x 224 (N = 28672 is 128 x 224: at M = 256, 256 tiles fill 1.94 waves of 132 SMs where
        # 224 of 128 x 256 fill 1.70)
        for bn, stages in ((160, 4), (176, 5)):
            for group in (2, 16):
                out.append(dict(bm=128, bn=bn, bk=64, stages=stages, group=group, pingpong=True, regs=[24, 240]))
        for ov in (False, True):
            out.append(dict(bm=128, bn=224, bk=64, stages=4, group=16, persistent=True, overlap=ov, regs=[24, 240]))
    elif kind == "smem":
        for bm, bn, warps in ((128, 128, (2, 2)), (128, 256, (2, 4)), (256, 128, (4, 2))):
            for bk in (32, 64):
                for stages in (3, 4):
                    for group in (8, 16):
                        out.append(dict(bm=bm, bn=bn, bk=bk, warps=warps, stages=stages, group=group))
    else:
        for threads in ((4, 4), (8, 8), (16, 16)):
            for micro in ((1, 1), (2, 2)):
                out.append(dict(threads=threads, micro=micro))
    return [c for c in out if _buildable(kind, c)]


def _check_kind(kind):
    if kind not in SPACES:
        raise ValueError(f"tune: expected kind among {sorted(SPACES)}, but got {kind!r}.")


def _buildable(kind, conf) -> bool:
    try:
        _config_object(kind, conf, DTYPES[kind][0])
    except (ValueError, TypeError):
        return False
    return True


def _config_object(kind, conf, dtype):
    """The configuration class's object (checks the values); the cpu space's is the dict itself."""
    import workbench as wb
    if kind == "hopper":
        from workbench.kernels.gemm_hopper import HopperGemm
        conf = dict(conf)
        if conf.get("pingpong") is False:
            conf.pop("pingpong")
        conf.setdefault("consumers", 2 if conf.get("pingpong") else conf.get("bm", 128) // 64)
        if isinstance(conf.get("regs"), list):      # JSON has no tuples
            conf["regs"] = tuple(conf["regs"])
        return HopperGemm(dtype={"float16": wb.Float16, "bfloat16": wb.BFloat16}[dtype], **conf)
    if kind == "smem":
        from workbench.kernels.gemm_ladder import SmemGemm
        conf = dict(conf)
        if "warps" in conf:
            conf["warps"] = tuple(conf["warps"])
        return SmemGemm(**conf)
    threads, micro = tuple(conf.get("threads", ())), tuple(conf.get("micro", ()))
    if (len(threads) != 2 or len(micro) != 2 or any(type(v) is not int or v < 1 for v in threads + micro)
            or threads[0] * threads[1] > 1024 or set(conf) - {"threads", "micro", "fault"}):
        raise ValueError(f"tune: a cpu configuration is {{'threads': [tx, ty], 'micro': [rm, rn]}} (positive ints, at "
                         f"most 1024 threads; 'fault': True makes it compute garbage, for tests), but got {conf!r}.")
    return conf


def _c_name(kind, dtype, c):
    """C's element type: the space's own (hopper: the inputs' type; smem and cpu: float32), or ``c``."""
    return c or (dtype if kind == "hopper" else "float32")


def _check_c(kind, c):
    if c is not None and c not in C_TYPES:
        own = "the inputs' type" if kind == "hopper" else "float32"
        raise ValueError(f"tune: expected c None (the {kind!r} space's own C, {own}) or one of {list(C_TYPES)}, but "
                         f"got {c!r}.")


def space_hash(kind, configs) -> str:
    text = json.dumps([kind, CACHE_VERSION, [_canonical(c) for c in configs]], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _canonical(conf):
    return {k: list(v) if isinstance(v, tuple) else v for k, v in sorted(conf.items())}


def _parse_shape(s):
    if isinstance(s, str):
        parts = re.split(r"[x,]", s.strip().lower())
        try:
            s = tuple(int(p) for p in parts)
        except ValueError:
            raise ValueError(f"tune: expected a shape MxNxK (e.g. 4096x4096x4096), but got {s!r}.") from None
    s = tuple(s)
    if len(s) != 3 or any(type(v) is not int or v < 1 for v in s):
        raise ValueError(f"tune: expected a shape (M, N, K) of three positive ints, but got {s!r}.")
    return s


# -- the cpu space's kernel ------------------------------------------------------------------------------------------
_CPU_KERNEL = None


def _cpu_kernel():
    """C = A @ B^T on SIMT threads, each computing an rm x rn micro-tile from global memory; ``fault`` skips the
    products (C = 0: fast and wrong, for the tests that check that a wrong configuration is never chosen)."""
    global _CPU_KERNEL
    if _CPU_KERNEL is None:
        import workbench as wb

        @wb.kernel
        def tune_cpu_gemm(A, B, C, rm: wb.Constexpr, rn: wb.Constexpr, fault: wb.Constexpr):
            tx, ty, _ = wb.thread_idx()
            bx, by, _ = wb.block_idx()
            bdx, bdy, _ = wb.block_dim()
            m0 = (by * bdy + ty) * rm
            n0 = (bx * bdx + tx) * rn
            for i in range(rm):
                for j in range(rn):
                    if m0 + i < wb.shape(C)[0]:
                        if n0 + j < wb.shape(C)[1]:
                            acc = 0.0
                            if not fault:
                                for k in range(wb.shape(A)[1]):
                                    acc += A[m0 + i, k] * B[n0 + j, k]
                            C[m0 + i, n0 + j] = acc
        _CPU_KERNEL = tune_cpu_gemm
    return _CPU_KERNEL


# -- one measurement (runs in a worker) ----------------------------------------------------------------------------
_INPUTS: dict = {}     # per worker process: (kind, shape, dtype) -> inputs, reference product, reference call


def _inputs(kind, shape, dtype, c=None):
    key = (kind, shape, dtype, c)
    if key in _INPUTS:
        return _INPUTS[key]
    _INPUTS.clear()       # one shape's operands at a time (8192^3 fp16: 400 MB)
    m, n, k = shape
    if kind == "cpu":
        import numpy as np
        rng = np.random.default_rng(0)
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((n, k), dtype=np.float32)
        _INPUTS[key] = (a, b, a.astype(np.float64) @ b.astype(np.float64).T, lambda: a @ b.T)
    else:
        import torch
        gen = torch.Generator(device="cuda").manual_seed(0)
        tdt = getattr(torch, dtype)
        a = torch.randn(m, k, device="cuda", generator=gen).to(tdt)
        b = torch.randn(n, k, device="cuda", generator=gen).to(tdt)
        want = torch.matmul(a.float(), b.float().t())
        if kind == "hopper" and c == "float32":     # cuBLAS writing the fp32 accumulators whole, as ours do
            _INPUTS[key] = (a, b, want, lambda: torch.mm(a, b.t(), out_dtype=torch.float32))
        else:
            _INPUTS[key] = (a, b, want, lambda: torch.matmul(a, b.t()))
    return _INPUTS[key]


def _device_name(kind):
    if kind == "cpu":
        return "cpu-" + (platform.machine() or "unknown")
    import torch
    return torch.cuda.get_device_name(0)


def _launcher(kind, conf, dtype, a, b, c):
    """A function that runs the configuration on (a, b) into c, its arguments prepared once."""
    m, n = c.shape[0], c.shape[1]
    if kind == "cpu":
        kern = _cpu_kernel()
        (tx, ty), (rm, rn) = conf["threads"], conf["micro"]
        grid, block = (math.ceil(n / (tx * rn)), math.ceil(m / (ty * rm)), 1), (tx, ty, 1)
        fault = bool(conf.get("fault", False))
        return lambda: kern[grid, block](a, b, c, rm, rn, fault)
    cfg = _config_object(kind, conf, dtype)
    if kind == "hopper":
        kern, ops = cfg.operands(a, b, c)
        if len(ops) == 1:
            raise ValueError("tune: M, N or K is 0; nothing to time.")
        grid, block = cfg.grid(m, n), (cfg.threads, 1, 1)
        return lambda: kern[grid, block](*ops)
    import workbench as wb
    from workbench.kernels.gemm_ladder import gemm_operands, make_smem_gemm
    gemm_operands(repr(cfg), a, b, c, (wb.Float16,), (wb.Float32,), k_major=True, k_multiple=8)
    kern = make_smem_gemm(cfg)
    ops = tuple(wb.from_dlpack(x, assumed_align=16) for x in (a, b, c))
    grid = (math.ceil(m / cfg.bm) * math.ceil(n / cfg.bn), 1, 1)
    return lambda: kern[grid, (cfg.threads, 1, 1)](*ops)


def _cpu_times(fns, reps):
    """Seconds per call of each of ``fns`` on the host: they take turns call by call (after one warm-up each), and
    each gets the median of its ``reps`` wall-clock calls."""
    for fn in fns:
        fn()
    per = [[] for _ in fns]
    for _ in range(reps):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            per[i].append(time.perf_counter() - t0)
    return [statistics.median(p) for p in per]


def _prepared(task: dict):
    """(row, run, reference) for one configuration of a task: the row says where and what; ``run`` is None when the
    configuration cannot be built or run here, or computes a wrong result (the row's error says which)."""
    kind, conf, dtype, c32 = task["kind"], task["config"], task["dtype"], task.get("c")
    shape = tuple(task["shape"])
    m, n, k = shape
    row = {"kind": kind, "shape": list(shape), "dtype": dtype, "c": _c_name(kind, dtype, c32), "config": conf,
           "index": task["index"],
           "worker": task.get("worker", os.environ.get("CUDA_VISIBLE_DEVICES", "")), "pid": os.getpid(),
           "correct": False, "error": None}
    try:
        row["device"] = _device_name(kind)
        a, b, want, reference = _inputs(kind, shape, dtype, c32)
        if kind == "cpu":
            import numpy as np
            c = np.full((m, n), np.nan, np.float32)
        else:
            import torch
            c = torch.full((m, n), float("nan"), device="cuda", dtype=getattr(torch, row["c"]))
        run = _launcher(kind, conf, dtype, a, b, c)
        row["config_repr"] = (repr(_config_object(kind, conf, dtype)) if kind != "cpu" else
                              "cpu({}x{} threads, {}x{} a thread{})".format(*conf["threads"], *conf["micro"],
                                                                        ", fault" if conf.get("fault") else ""))
        run()
        if kind == "cpu":
            import numpy as np
            err = float(np.nanmax(np.abs(c - want)) / np.abs(want).max()) if np.isfinite(c).all() else math.inf
            tol = 1e-5
        else:
            import torch
            torch.cuda.synchronize()
            got = c.float()
            err = (float(((got - want).abs().max() / want.abs().max()).item()) if bool(torch.isfinite(got).all())
                   else math.inf)
            # 16-bit C (bf16: 8 bits of mantissa); hopper's fp32 C (fp32 sums in another order: ~1e-5 at K = 8192);
            # smem's fp32 C
            tol = (1e-3 if row["c"] == "float32" else 2e-2) if kind == "hopper" else 1e-2
        row["max_rel_error"] = err
        row["tolerance"] = tol
        if not err <= tol:
            row["error"] = f"wrong result: max relative error {err:.3g} > {tol:g} against the reference"
            return row, None, reference
        row["correct"] = True
        return row, run, reference
    except Exception as e:      # a configuration this device cannot build or run: reported, never chosen
        row["error"] = f"{type(e).__name__}: {str(e)[:400]}"
        return row, None, None


def _timed(row, t, t_ref, reps):
    """The row's times: t and the reference's t_ref (seconds), and the score the choice minimizes."""
    m, n, k = row["shape"]
    flop = 2 * m * n * k
    row.update(seconds=t, reference_seconds=t_ref, relative_time=t / t_ref, ratio_to_reference=t_ref / t,
               tflops=flop / t / 1e12, reference_tflops=flop / t_ref / 1e12, reps=reps,
               # what the choice minimizes (_SCORE): on a GPU the time relative to cuBLAS timed beside it (GPUs
               # of one model still differ in clocks); on the CPU the time itself (numpy's microsecond calls
               # are too noisy a yardstick for milliseconds of CPU executor)
               score=t if row["kind"] == "cpu" else t / t_ref)
    return row


def _interleaved(kind, fns, reps):
    if kind == "cpu":
        return _cpu_times(fns, reps)
    from workbench.bench.bandwidth import _times
    return _times(fns, reps)


def measure(task: dict) -> dict:
    """One row of the sweep: the configuration ``task["config"]`` of space ``task["kind"]`` at ``task["shape"]``
    and ``task["dtype"]``, checked against the reference, then timed interleaved with it (in this process, on its
    first visible GPU or on the CPU executor).  A confirmation task (``task["configs"]``) goes to
    :func:`measure_together`."""
    if "configs" in task:
        return measure_together(task)
    row, run, reference = _prepared(task)
    if run is None:
        return row
    reps = task.get("reps") or (5 if task["kind"] == "cpu" else 30)
    try:
        t_ref, t = _interleaved(task["kind"], [reference, run], reps)
    except Exception as e:
        row.update(correct=False, error=f"{type(e).__name__}: {str(e)[:400]}")
        return row
    row["measurement"] = ("CPU executor wall time (not a GPU measurement), alternating with numpy call by call"
                          if task["kind"] == "cpu" else f"CUDA events, interleaved with {_reference_name(task)} "
                                                        f"(cuBLAS) call by call")
    return _timed(row, t, t_ref, reps)


def _reference_name(task):
    return ("torch.mm(a, b.t(), out_dtype=torch.float32)" if task["kind"] == "hopper" and task.get("c") == "float32"
            else "torch.matmul")


CONFIRM_ROUNDS = 3


def measure_together(task: dict) -> dict:
    """The confirmation round of one (shape, dtype): the sweep's best few configurations (``task["configs"]``),
    each checked again, then timed in this one process, all of them and the reference taking turns call by call,
    :data:`CONFIRM_ROUNDS` times; each row's time is the median over the rounds, so that every candidate is judged
    on one GPU beside one reference (the sweep's GPUs differ: on two H200s cuBLAS took 0.084 and 0.081 ms at
    2048x7168x2048).  Returns {"index": ..., "rows": [one row per configuration, "round": "confirm"]}."""
    prepared = [_prepared(dict(task, config=conf)) for conf in task["configs"]]
    rows = [dict(r, round="confirm", sweep_rank=i + 1) for i, (r, _, _) in enumerate(prepared)]
    live = [(row, run) for row, (_, run, _) in zip(rows, prepared, strict=True) if run is not None]
    reference = next((ref for _, run, ref in prepared if run is not None), None)
    if live:
        reps = task.get("reps") or (5 if task["kind"] == "cpu" else 30)
        try:
            rounds = [_interleaved(task["kind"], [reference] + [run for _, run in live], reps)
                      for _ in range(CONFIRM_ROUNDS)]
        except Exception as e:
            for row, _ in live:
                row.update(correct=False, error=f"{type(e).__name__}: {str(e)[:400]}")
            return {"index": task["index"], "rows": rows}
        for i, (row, _) in enumerate(live):
            row["measurement"] = (f"confirmation round: the sweep's best {len(task['configs'])} timed together in "
                                  f"one process, taking turns with the reference call by call, median of "
                                  f"{CONFIRM_ROUNDS} rounds" + (" (CPU executor wall time, not a GPU measurement)"
                                                                if task["kind"] == "cpu" else ""))
            _timed(row, statistics.median(r[i + 1] for r in rounds), statistics.median(r[0] for r in rounds), reps)
            row["round_scores"] = [(r[i + 1] if task["kind"] == "cpu" else r[i + 1] / r[0]) for r in rounds]
    return {"index": task["index"], "rows": rows}


# -- workers -------------------------------------------------------------------------------------------------------
def _local_worker(visible, task_q, result_q):
    """A spawned worker: pins itself to one GPU (before anything initializes CUDA), then measures tasks until None."""
    if visible is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible
    while True:
        task = task_q.get()
        if task is None:
            return
        task = dict(task, worker=f"process {os.getpid()}" + (f", GPU {visible}" if visible is not None else ""))
        result_q.put(measure(task))


def _visible_gpus() -> list[str]:
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip() and d.strip() != "-1"]
    try:
        import cupy
        return [str(i) for i in range(cupy.cuda.runtime.getDeviceCount())]
    except Exception:
        return []


def _run_local(kind, tasks, workers, bar):
    import multiprocessing as mp
    import queue
    ctx = mp.get_context("spawn")
    if kind == "cpu":
        slots = [None] * max(1, min(workers or os.cpu_count() or 1, len(tasks)))
    else:
        gpus = _visible_gpus()
        if not gpus:
            raise RuntimeError(f"tune: the {kind!r} space needs a CUDA GPU, and none is visible here (kind='cpu' "
                               f"runs on the CPU executor).")
        slots = gpus[:workers] if workers else gpus
    task_q, result_q = ctx.Queue(), ctx.Queue()
    for t in tasks:
        task_q.put(t)
    for _ in slots:
        task_q.put(None)
    bar.started = len(slots)
    procs = [ctx.Process(target=_local_worker, args=(v, task_q, result_q), daemon=True) for v in slots]
    for p in procs:
        p.start()
    rows = {}
    try:
        while len(rows) < len(tasks):
            try:
                row = result_q.get(timeout=1.0)
            except queue.Empty:
                if not any(p.is_alive() for p in procs):
                    try:                      # a last result may still be in the pipe
                        row = result_q.get(timeout=1.0)
                    except queue.Empty:
                        break
                else:
                    continue
            rows[row["index"]] = row
            bar.update(row)
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
    codes = [p.exitcode for p in procs]
    for t in tasks:       # a worker that died (a crashed kernel, out of memory) took its task with it
        if t["index"] not in rows:
            dead = _task_row(t)
            for r in dead.get("rows", [dead]):
                r["error"] = f"tune: the worker died before reporting (exit codes {codes})"
            rows[t["index"]] = dead
    return [rows[t["index"]] for t in tasks]


def _task_row(t):
    if "configs" in t:       # a confirmation task: one row per configuration
        return {"index": t["index"], "rows": [{"kind": t["kind"], "shape": list(t["shape"]), "dtype": t["dtype"],
                                               "c": _c_name(t["kind"], t["dtype"], t.get("c")), "config": conf,
                                               "index": t["index"], "correct": False,
                                               "round": "confirm"} for conf in t["configs"]]}
    return {"kind": t["kind"], "shape": list(t["shape"]), "dtype": t["dtype"],
            "c": _c_name(t["kind"], t["dtype"], t.get("c")), "config": t["config"], "index": t["index"],
            "correct": False}


class _RayWorker:
    """One Ray actor: measures tasks on the GPU Ray gave it (or on the CPU executor)."""

    def run(self, task):
        import ray
        ids = ray.get_runtime_context().get_accelerator_ids().get("GPU", [])
        return measure(dict(task, worker=f"ray actor {os.getpid()} on {platform.node()}"
                                         + (f", GPU {','.join(map(str, ids))}" if ids else "")))


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ImportError("tune: ray_address needs Ray, which is not installed: pip install 'layout-workbench[tune]' "
                          "(or pip install 'ray>=2.40'); without ray_address the tuner runs one process per GPU of "
                          "this host.") from None
    return ray


def _run_ray(kind, tasks, workers, address, bar):
    ray = _import_ray()
    started = False
    if not ray.is_initialized():
        if address == "local":
            ray.init(include_dashboard=False, num_cpus=(workers or os.cpu_count() or 1) if kind == "cpu" else None)
        else:
            ray.init(address=address, include_dashboard=False)
        started = True
    try:
        resource = "CPU" if kind == "cpu" else "GPU"
        n = int(ray.cluster_resources().get(resource, 0))
        if workers:
            n = min(n, workers)
        n = min(n, len(tasks))
        if n < 1:
            raise RuntimeError(f"tune: the Ray cluster has no {resource} for the {kind!r} space "
                               f"(resources: {ray.cluster_resources()}).")
        actor = ray.remote(num_gpus=0 if kind == "cpu" else 1, num_cpus=1)(_RayWorker)
        actors = [actor.remote() for _ in range(n)]
        bar.started = n
        pool = ray.util.ActorPool(actors)
        rows = {}
        for row in pool.map_unordered(lambda a, t: a.run.remote(t), tasks):
            rows[row["index"]] = row
            bar.update(row)
        for a in actors:
            ray.kill(a)
        return [rows[t["index"]] for t in tasks]
    finally:
        if started:
            ray.shutdown()


class _Progress:
    """tqdm when it is installed, else a counter on stderr; nothing when off."""

    def __init__(self, total, on, what="configurations measured"):
        self.total, self.done, self.on, self.bar, self.started, self.what = total, 0, on, None, 0, what
        if on:
            try:
                from tqdm.auto import tqdm
                self.bar = tqdm(total=total, desc="tune" if what.startswith("config") else "confirm", unit="task")
            except ImportError:
                pass

    def update(self, row):
        self.done += 1
        if not self.on:
            return
        if self.bar is not None:
            self.bar.update(1)
            return
        print(f"\rtune: {self.done}/{self.total} {self.what}", end="\n" if self.done == self.total
              else "", file=sys.stderr, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


# -- the cache -----------------------------------------------------------------------------------------------------
def cache_dir() -> str:
    d = os.environ.get("WORKBENCH_TUNE_CACHE")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "layout-workbench", "tune")


def _cache_file(device):
    return os.path.join(cache_dir(), re.sub(r"[^A-Za-z0-9._-]+", "_", device).strip("_") + ".json")


def _cache_key(kind, shape, dtype, shash, c=None):
    # a C of another type than the space's own is a choice of its own (the keys without one stay as they were)
    return f"{kind}/{'x'.join(map(str, shape))}/{dtype}{'' if c is None else '->' + c}/{shash}"


def _read_cache(device) -> dict:
    try:
        with open(_cache_file(device)) as f:
            data = json.load(f)
        return data if isinstance(data, dict) and data.get("version") == CACHE_VERSION else {"version": CACHE_VERSION}
    except (OSError, ValueError):
        return {"version": CACHE_VERSION}


def _write_cache(device, entries: dict):
    data = _read_cache(device)
    data.setdefault("device", device)
    data.setdefault("choices", {}).update(entries)
    os.makedirs(cache_dir(), exist_ok=True)
    path = _cache_file(device)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)       # readers see the old file or the new one, never half of one


def lookup(kind, shape, dtype, device=None, configs=None, c=None):
    """The cached choice (a row of an earlier sweep) for this space, shape, dtype (and ``c``, C's type when not the
    space's own) on ``device`` (a GPU model, e.g. 'NVIDIA H100 80GB HBM3'; default: this host's first visible GPU, or
    the CPU for the cpu space), or None."""
    _check_kind(kind)
    _check_c(kind, c)
    device = device or _host_device(kind)
    if device is None:
        return None
    shash = space_hash(kind, default_configs(kind) if configs is None else configs)
    return _read_cache(device).get("choices", {}).get(_cache_key(kind, _parse_shape(shape), dtype, shash, c))


def _host_device(kind):
    """This host's GPU model (the first visible GPU), without initializing CUDA here; None when unknown."""
    if kind == "cpu":
        return "cpu-" + (platform.machine() or "unknown")
    import subprocess
    gpus = _visible_gpus()
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid,name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        idx, uuid, name = (p.strip() for p in line.split(",", 2))
        if not gpus or gpus[0] in (idx, uuid):
            return name
    return None


# -- the result ----------------------------------------------------------------------------------------------------
class TuneResult:
    """A sweep: ``rows`` (one dict per configuration, shape and dtype measured, plus the cached choices reused),
    ``best`` ({(shape, dtype): row}), ``best_config(shape, dtype)``, ``to_markdown()``, ``plot()``, ``save(path)``."""

    def __init__(self, kind, rows, info):
        self.kind, self.rows, self.info = kind, rows, info
        self.best = {}
        # the lowest score, among a shape's confirmation rows where it has them (all timed beside one reference)
        rank = (lambda r: (r.get("round") != "confirm", r["score"]))      # noqa: E731
        for r in rows:
            if not r.get("correct") or "score" not in r:
                continue
            key = (tuple(r["shape"]), r["dtype"])
            if key not in self.best or rank(r) < rank(self.best[key]):
                self.best[key] = r

    def best_config(self, shape, dtype):
        row = self.best.get((_parse_shape(shape), dtype))
        return None if row is None else dict(row["config"])

    def to_dict(self):
        return {"kind": self.kind, "info": self.info, "rows": self.rows,
                "best": [{"shape": list(s), "dtype": d, "config": r["config"], "score": r["score"],
                          "cached": bool(r.get("cached"))} for (s, d), r in self.best.items()]}

    def save(self, path):
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=1, default=str)

    @classmethod
    def load(cls, path):
        """The sweep ``save`` (or ``python -m workbench tune --out``) wrote: its rows and info, the choices made
        again from the rows (``best`` is derived, never trusted from the file)."""
        with open(path) as f:
            d = json.load(f)
        if (not isinstance(d, dict) or d.get("kind") not in SPACES or not isinstance(d.get("rows"), list)
                or not isinstance(d.get("info"), dict)
                or not all(isinstance(r, dict) and {"shape", "dtype", "config"} <= r.keys() for r in d["rows"])):
            raise ValueError(f"TuneResult.load: expected a sweep saved by TuneResult.save ('kind' among "
                             f"{sorted(SPACES)}, 'info', and 'rows' each with 'shape', 'dtype' and 'config'), but "
                             f"{path} holds something else.")
        return cls(d["kind"], d["rows"], d["info"])

    def where(self, shape=None, dtype=None):
        """The sweep's rows of one shape and/or dtype, as a TuneResult (its table and plot)."""
        s = None if shape is None else list(_parse_shape(shape))
        rows = [r for r in self.rows if (s is None or list(r["shape"]) == s) and (dtype is None or r["dtype"] == dtype)]
        return TuneResult(self.kind, rows, dict(self.info, rows_of=f"{shape or 'any shape'}, {dtype or 'any dtype'}"))

    def to_markdown(self) -> str:
        ref = "numpy" if self.kind == "cpu" else "cuBLAS"
        flops = "GFLOPS" if self.kind == "cpu" else "TFLOPS"
        lines = [f"| shape | dtype | configuration | time (ms) | {ref} (ms) | ratio to {ref} | {flops} | worker | note |",
                 "|---|---|---|---|---|---|---|---|---|"]
        for r in sorted(self.rows, key=lambda r: (r["shape"], r["dtype"], r.get("score", math.inf))):
            chosen = self.best.get((tuple(r["shape"]), r["dtype"])) is r
            fmt = (lambda v, p=3: f"{v:.{p}f}")    # noqa: E731
            timed = "seconds" in r
            note = "**chosen**" if chosen else ""
            if r.get("cached"):
                note = (note + " (cached)").strip()
            if r.get("round") == "confirm":
                note = (note + f" (confirmation round, sweep's #{r.get('sweep_rank', '?')})").strip()
            if r.get("error"):
                note = r["error"].replace("|", "/")[:120]
            lines.append("| " + " | ".join([
                "x".join(map(str, r["shape"])),
                r["dtype"] + (f", C {r['c']}" if self.kind == "hopper" and r.get("c", r["dtype"]) != r["dtype"] else ""),
                str(r.get("config_repr", r["config"])),
                fmt(r["seconds"] * 1e3) if timed else "-", fmt(r["reference_seconds"] * 1e3) if timed else "-",
                (f"**{r['ratio_to_reference']:.3f}**" if chosen else f"{r['ratio_to_reference']:.3f}") if timed else "-",
                fmt(r["tflops"] * (1e3 if self.kind == "cpu" else 1), 1) if timed else "-", str(r.get("worker", "")), note])
                + " |")
        if self.kind == "cpu":
            lines.append("\nCPU executor wall times, not GPU measurements.")
        return "\n".join(lines)

    def _repr_markdown_(self):
        return self.to_markdown()

    def __repr__(self):
        best = ", ".join(f"{'x'.join(map(str, s))} {d}: {r.get('config_repr', r['config'])} "
                         f"({r['ratio_to_reference']:.3f}x)" for (s, d), r in self.best.items())
        return f"TuneResult({self.kind!r}, {len(self.rows)} rows; best: {best or 'none'})"

    def plot(self, ax=None):
        """Each configuration's speed relative to the reference, one group of bars per (shape, dtype); the chosen
        one filled darker, the wrong or failed ones marked at 0.  Returns the matplotlib figure."""
        import matplotlib.pyplot as plt
        keys = sorted({(tuple(r["shape"]), r["dtype"]) for r in self.rows})
        if ax is None:
            _, ax = plt.subplots(figsize=(max(6, 0.25 * len(self.rows) + 2), 4))
        x, labels = 0, []
        for key in keys:
            rows = [r for r in self.rows if (tuple(r["shape"]), r["dtype"]) == key]
            for r in rows:
                v = r.get("ratio_to_reference", 0.0)
                ax.bar(x, v, color="tab:blue" if self.best.get(key) is r else "lightsteelblue" if r.get("correct")
                       else "tab:red")
                x += 1
            labels.append((x - len(rows) / 2 - 0.5, f"{'x'.join(map(str, key[0]))}\n{key[1]}"))
            x += 1
        ax.axhline(1.0, color="gray", lw=0.8, ls="--")
        ax.set_xticks([p for p, _ in labels], [t for _, t in labels])
        ax.set_ylabel("speed relative to " + ("numpy (CPU executor)" if self.kind == "cpu" else "cuBLAS"))
        ax.set_title(f"tune {self.kind}: one bar per configuration (dark: chosen, red: wrong or failed)")
        return ax.figure


# -- the entry point -----------------------------------------------------------------------------------------------
def tune(kind, shapes, dtypes=None, configs=None, backend="auto", workers=None, ray_address=None, cache=True,
         progress=True, reps=None, confirm=None, c=None) -> TuneResult:
    """Sweep space ``kind`` ("hopper", "smem" or "cpu") over ``shapes`` ((M, N, K) tuples or "MxNxK" strings) and
    ``dtypes`` (e.g. "float16", "bfloat16"; default: the space's first), return a :class:`TuneResult`.

    ``configs``: a list of configuration dicts instead of the space's default sweep; ``backend``: "auto" (local
    processes, or Ray when ``ray_address`` is given), "local" or "ray"; ``workers``: at most this many workers
    (default: one per visible GPU; the CPU's cores for "cpu"); ``ray_address``: a Ray cluster's address, "auto",
    or "local" (start Ray here); ``cache``: True, False or "refresh"; ``reps``: timed calls per configuration;
    ``confirm``: after the sweep, the best this many of each shape and dtype are timed again together by one worker
    (:func:`measure_together`) and the choice is made among them (default 3 on a GPU, where the sweep's GPUs
    differ; 0 on the CPU executor; 0 or 1: the sweep's own best); ``c``: C's element type, None for the space's own
    (hopper: the inputs' type) or "float32" (hopper: against cuBLAS writing fp32; cached apart)."""
    _check_kind(kind)
    _check_c(kind, c)
    shapes = [_parse_shape(s) for s in ([shapes] if isinstance(shapes, str) else shapes)]
    if dtypes is None:
        dtypes = [DTYPES[kind][0]]
    dtypes = [dtypes] if isinstance(dtypes, str) else list(dtypes)
    bad = [d for d in dtypes if d not in DTYPES[kind]]
    if bad:
        raise ValueError(f"tune: the {kind!r} space takes dtypes {list(DTYPES[kind])}, but got {bad}.")
    if backend not in ("auto", "local", "ray"):
        raise ValueError(f"tune: expected backend 'auto', 'local' or 'ray', but got {backend!r}.")
    if cache not in (True, False, "refresh"):
        raise ValueError(f"tune: expected cache True, False or 'refresh', but got {cache!r}.")
    if workers is not None and (type(workers) is not int or workers < 1):
        raise ValueError(f"tune: expected workers a positive int, but got {workers!r}.")
    if confirm is not None and (type(confirm) is not int or confirm < 0):
        raise ValueError(f"tune: expected confirm a count >= 0 (0 or 1: no confirmation round), but got {confirm!r}.")
    confirm = (0 if kind == "cpu" else 3) if confirm is None else confirm
    use_ray = backend == "ray" or (backend == "auto" and ray_address is not None)
    if use_ray and ray_address is None:
        ray_address = "auto"
    configs = default_configs(kind) if configs is None else [dict(c) for c in configs]
    if not configs:
        raise ValueError(f"tune: expected at least one configuration for the {kind!r} space, but got none.")
    shash = space_hash(kind, configs)
    device = _host_device(kind) if cache is not False else None
    cached_rows, todo = [], []
    for shape in shapes:
        for dtype in dtypes:
            hit = (_read_cache(device).get("choices", {}).get(_cache_key(kind, shape, dtype, shash, c))
                   if device and cache is True else None)
            if hit:
                cached_rows.append(dict(hit, cached=True))
            else:
                todo.append((shape, dtype))
    tasks = [{"kind": kind, "shape": list(shape), "dtype": dtype, "c": c, "config": conf, "reps": reps}
             for shape, dtype in todo for conf in configs]
    for i, t in enumerate(tasks):
        t["index"] = i
    bar = _Progress(len(tasks), progress)
    t0 = time.perf_counter()
    try:
        if not tasks:
            rows = []
        elif use_ray:
            rows = _run_ray(kind, tasks, workers, ray_address, bar)
        else:
            rows = _run_local(kind, tasks, workers, bar)
    finally:
        bar.close()
    started = bar.started
    # the confirmation round: each shape's best few again, together, each shape on one worker
    ctasks = []
    for shape, dtype in todo if confirm >= 2 else ():
        good = sorted((r for r in rows if r.get("correct") and "score" in r and tuple(r["shape"]) == shape
                       and r["dtype"] == dtype), key=lambda r: r["score"])[:confirm]
        if len(good) >= 2:
            ctasks.append({"kind": kind, "shape": list(shape), "dtype": dtype, "c": c, "reps": reps,
                           "configs": [r["config"] for r in good], "index": len(tasks) + len(ctasks)})
    if ctasks:
        cbar = _Progress(len(ctasks), progress, "shapes confirmed")
        try:
            done = (_run_ray if use_ray else _run_local)(kind, ctasks, workers, *((ray_address,) if use_ray else ()),
                                                          cbar)
        finally:
            cbar.close()
        rows = rows + [r for d in done for r in d["rows"]]
    info = {"space": SPACES[kind], "space_hash": shash, "configs": len(configs), "measured": len(rows),
            "cached": len(cached_rows), "backend": "ray" if use_ray else "local processes",
            "ray_address": ray_address if use_ray else None, "seconds": time.perf_counter() - t0,
            "workers_started": started, "workers": sorted({str(r.get("worker", "")) for r in rows}),
            "confirm": confirm if ctasks else 0, "c": c,
            "inputs": "normal(0,1), seeded (the same operands in every worker)",
            "timing": ("CPU executor wall time, alternating with numpy call by call (not a GPU measurement)"
                       if kind == "cpu" else f"CUDA events, interleaved with {_reference_name(dict(kind=kind, c=c))} "
                       "(cuBLAS) call by call, median of reps calls after 3 warm-ups"),
            "choice": ("the correct configuration with the lowest time" if kind == "cpu" else
                       "the correct configuration with the lowest time relative to cuBLAS timed beside it")
            + (f"; the sweep's best {confirm} of each shape and dtype then timed again together by one worker, "
               f"taking turns with the reference call by call (median of {CONFIRM_ROUNDS} rounds), and the choice "
               f"made among them" if ctasks else "")}
    result = TuneResult(kind, cached_rows + rows, info)
    if cache is not False:
        entries: dict = {}
        for (shape, dtype), row in result.best.items():
            if not row.get("cached"):
                entries.setdefault(row.get("device") or device, {})[_cache_key(kind, shape, dtype, shash, c)] = \
                    {k: v for k, v in row.items() if k != "cached"}
        for dev, e in entries.items():
            if dev:
                _write_cache(dev, e)
    return result
