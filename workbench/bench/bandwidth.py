"""Bandwidth of DSL kernels against cupy's device-to-device copy (8192 x 8192 fp32, bytes read +
written), timed with CUDA events, median of repeated runs after a warm-up; outputs checked."""

from __future__ import annotations

import math

import numpy as np

import workbench as wb
from workbench.kernels import examples as E

from ..dsl.runtime import cupy as backend_cupy


def _time(fn, reps):
    """Seconds per call of ``fn`` (which launches GPU work): ``_times`` of one function."""
    return _times([fn], reps)[0]


_SPIN = []   # the hold kernel, compiled once


def _hold_gpu(seconds=0.005):
    """Keep the GPU busy for about ``seconds`` (one thread spinning on its clock), so that the host queues the timed
    calls while it waits: each then starts the moment the one before it ends.  Without it, kernels shorter than the
    host's launch path (a 256-row GEMM: ~20 us; torch.matmul's own launch takes several) let the queue drain, and the
    events then time the host's launch as well as the kernel, favouring the caller with the faster host path."""
    import cupy
    if not _SPIN:
        _SPIN.append(cupy.RawKernel(r"""extern "C" __global__ void wb_hold(long long cycles) {
            long long t0 = clock64();
            while (clock64() - t0 < cycles) { }
        }""", "wb_hold"))
    khz = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["clockRate"]
    _SPIN[0]((1,), (1,), (np.int64(seconds * khz * 1e3),))


def _times(fns, reps):
    """Seconds per call of each of ``fns`` (each launches GPU work): the median of ``reps`` calls after 3 warm-up
    calls, each call bracketed by CUDA events.  The functions take turns call by call, so that a clock or power
    drift (an H200 under a long GEMM slows down) falls on all of them alike, and the calls are queued back to back
    behind a hold kernel (``_hold_gpu``) and synchronized once at the end, so the GPU never waits for the host
    between them: what is timed is the kernels, not the host's launch latency (the dispatch benchmarks measure
    that)."""
    import cupy
    for fn in fns:
        for _ in range(3):
            fn()
    marks = [[(cupy.cuda.Event(), cupy.cuda.Event()) for _ in fns] for _ in range(reps)]
    _hold_gpu()
    for row in marks:
        for fn, (a, b) in zip(fns, row):
            a.record()
            fn()
            b.record()
    marks[-1][-1][1].synchronize()
    return [float(np.median([cupy.cuda.get_elapsed_time(*row[i]) / 1e3 for row in marks])) for i in range(len(fns))]


def run(quick: bool = False) -> dict:
    if not backend_cupy.gpu_available():
        return {"gpu": False}
    import cupy
    n = 4096 if quick else 8192
    reps = 10 if quick else 30
    src = cupy.random.default_rng(0).standard_normal((n, n), dtype=cupy.float32)
    dst = cupy.full((n, n), cupy.nan, dtype=cupy.float32)
    nbytes = 2 * src.nbytes
    out = {"gpu": True, "shape": [n, n], "dtype": "float32", "bytes_moved": nbytes, "kernels": {}}

    def memcpy():
        dst.data.copy_from_device(src.data, src.nbytes)
    t = _time(memcpy, reps)
    out["kernels"]["cupy_device_to_device_copy"] = {"seconds": t, "TB_per_s": nbytes / t / 1e12}

    s1 = wb.from_dlpack(src.reshape(-1), assumed_align=16).mark_layout_dynamic()
    d1 = wb.from_dlpack(dst.reshape(-1), assumed_align=16).mark_layout_dynamic()
    threads = 256
    for vec in (8, 16):     # elements per thread (a Constexpr): 2 or 4 128-bit accesses in flight
        vgrid = (math.ceil(n * n / vec / threads), 1, 1)
        dst.fill(cupy.nan)
        E.vcopy[vgrid, (threads, 1, 1)](s1, d1, vec)
        ok = bool(cupy.array_equal(dst, src))
        t = _time(lambda vgrid=vgrid, vec=vec: E.vcopy[vgrid, (threads, 1, 1)](s1, d1, vec), reps)
        code = wb.show_code(E.vcopy, s1, d1, vec)
        out["kernels"][f"dsl_vcopy_vec{vec}"] = {"seconds": t, "TB_per_s": nbytes / t / 1e12, "correct": ok,
                                                 "vectorized_128bit": "uint4" in code}
    for threads, chunks in ((256, 4), (1024, 2)):   # a TV layout: coalesced 128-bit chunks (benchmarks/membound_sweep.py)
        tv = E.copy_tv(threads, chunks)
        vgrid = (math.ceil(n * n / wb.size(tv)), 1, 1)
        dst.fill(cupy.nan)
        E.vcopy_tv[vgrid, (threads, 1, 1)](s1, d1, tv)
        ok = bool(cupy.array_equal(dst, src))
        t = _time(lambda vgrid=vgrid, tv=tv, threads=threads: E.vcopy_tv[vgrid, (threads, 1, 1)](s1, d1, tv), reps)
        out["kernels"][f"dsl_vcopy_tv_{threads}x{chunks}"] = {"seconds": t, "TB_per_s": nbytes / t / 1e12, "correct": ok}
    out["kernels"]["dsl_vcopy"] = max((v for k, v in out["kernels"].items() if k.startswith("dsl_vcopy_")),
                                      key=lambda v: v["TB_per_s"])

    s2 = wb.from_dlpack(src).mark_layout_dynamic()
    d2 = wb.from_dlpack(dst).mark_layout_dynamic()
    tg = (math.ceil(n / E.TILE), math.ceil(n / E.TILE), 1)
    dst.fill(cupy.nan)
    E.transpose_smem[tg, (E.TILE, E.ROWS, 1)](s2, d2)
    ok = bool(cupy.array_equal(dst, src.T))
    t = _time(lambda: E.transpose_smem[tg, (E.TILE, E.ROWS, 1)](s2, d2), reps)
    out["kernels"]["dsl_transpose_smem"] = {"seconds": t, "TB_per_s": nbytes / t / 1e12, "correct": ok}

    # the same kernel on fully static layouts: every index is a compile-time constant expression
    s3, d3 = wb.from_dlpack(src), wb.from_dlpack(dst)
    dst.fill(cupy.nan)
    E.transpose_smem[tg, (E.TILE, E.ROWS, 1)](s3, d3)
    ok = bool(cupy.array_equal(dst, src.T))
    t = _time(lambda: E.transpose_smem[tg, (E.TILE, E.ROWS, 1)](s3, d3), reps)
    out["kernels"]["dsl_transpose_smem_static"] = {"seconds": t, "TB_per_s": nbytes / t / 1e12, "correct": ok}

    # transpose_tile, 128-bit and 32-bit chunks, blocks along the destination's rows (benchmarks/transpose_sweep.py)
    s4, d4 = wb.from_dlpack(src, assumed_align=16), wb.from_dlpack(dst, assumed_align=16)
    for tile, vec, rows in ((64, 4, 32), (64, 1, 8)):
        dst.fill(cupy.nan)
        E.launch_transpose_tile(s4, d4, tile, vec, rows)
        ok = bool(cupy.array_equal(dst, src.T))
        t = _time(lambda c=(tile, vec, rows): E.launch_transpose_tile(s4, d4, *c), reps)
        out["kernels"][f"dsl_transpose_tile_{tile}x{vec}x{rows}_static"] = {"seconds": t, "TB_per_s": nbytes / t / 1e12,
                                                                           "correct": ok}
    out["kernels"]["dsl_transpose_best"] = max(
        (v for k, v in out["kernels"].items() if k.startswith(("dsl_transpose_smem", "dsl_transpose_tile"))),
        key=lambda v: v["TB_per_s"])

    ng = (math.ceil(n / 16), math.ceil(n / 16), 1)
    dst.fill(cupy.nan)
    E.transpose_naive[ng, (16, 16, 1)](s2, d2)
    ok = bool(cupy.array_equal(dst, src.T))
    t = _time(lambda: E.transpose_naive[ng, (16, 16, 1)](s2, d2), reps)
    out["kernels"]["dsl_transpose_naive"] = {"seconds": t, "TB_per_s": nbytes / t / 1e12, "correct": ok}

    ref = out["kernels"]["cupy_device_to_device_copy"]["TB_per_s"]
    out["ratios"] = {"vcopy_over_d2d": out["kernels"]["dsl_vcopy"]["TB_per_s"] / ref,
                     "transpose_smem_over_d2d": out["kernels"]["dsl_transpose_smem"]["TB_per_s"] / ref,
                     "transpose_smem_static_over_d2d": out["kernels"]["dsl_transpose_smem_static"]["TB_per_s"] / ref,
                   "transpose_best_over_d2d": out["kernels"]["dsl_transpose_best"]["TB_per_s"] / ref}
    out["targets"] = {"vcopy_over_d2d_min": 0.95, "transpose_best_over_d2d_min": 0.95}
    out["pass"] = (out["ratios"]["vcopy_over_d2d"] >= 0.95 and out["ratios"]["transpose_best_over_d2d"] >= 0.95
                   and all(k.get("correct", True) for k in out["kernels"].values()))
    return out
