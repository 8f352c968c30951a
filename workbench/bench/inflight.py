"""DRAM bandwidth against the bytes each SM keeps in flight (notebook 08's Little's-law curve).

A persistent copy kernel (below) runs with exactly `blocks_per_sm` x SMs blocks, every one resident at once
(checked against the driver's occupancy API), each thread issuing `chunks` 128-bit loads before its stores.  So
the bytes a SM has requested and not yet received are known by construction:

    bytes in flight per SM = blocks_per_sm x threads x chunks x 16

and the sweep walks that from about 0.5 KB to a few hundred KB.  For each point: read+write bandwidth, the read
bandwidth, its fraction of cupy's device-to-device copy, and the latency Little's law implies,

    latency = bytes in flight (all SMs) / read bandwidth,

which is the memory latency seen under that load (it is not a constant: queues grow as the load rises).
Without a GPU: {"gpu": False}.  Run: ``python -m workbench bench inflight --out benchmarks/results/inflight-X.json``.
"""

from __future__ import annotations

import workbench as wb
from workbench.kernels import examples as E

from ..dsl.runtime import cupy as backend_cupy
from .bandwidth import _time  # CUDA events, median after a warm-up: one way to time a kernel
from .ladder import _blocks_per_sm  # the driver's occupancy API

CHUNK_BYTES = 16                       # one 128-bit access
# (threads per block, 128-bit chunks a thread) x blocks per SM: small to large bytes in flight per SM
CONFIGS = ((32, 1), (128, 1), (128, 2), (128, 4), (128, 8), (256, 8))
BLOCKS_PER_SM = (1, 2, 4, 8, 16)


@wb.kernel
def copy_persistent(src, dst, tv: wb.Constexpr):
    """dst = src, tile by tile: block b copies tiles b, b + G, b + 2G, ... (G = the grid), size(tv) elements a
    tile through the thread/value layout tv (examples.copy_tv: each thread's chunks are 128-bit loads, all issued
    before its stores).  Tiles past the last full round (ntiles mod G of them) are left alone, so every block does
    the same work; the caller counts only the bytes copied."""
    t = wb.thread_idx().x
    g = wb.grid_dim().x
    n = wb.size(tv)
    for i in range(wb.size(src) // n // g):
        b = wb.block_idx().x + i * g
        gs = wb.composition(wb.local_tile(src, (n,), (b,)), tv)[t, None]
        gd = wb.composition(wb.local_tile(dst, (n,), (b,)), tv)[t, None]
        wb.copy(gs, gd)


def points(sms: int, max_blocks) -> list[dict]:
    """The sweep: one entry per (threads, chunks, blocks_per_sm) whose blocks all fit on an SM at once;
    max_blocks(threads, chunks) is the occupancy limit for that kernel."""
    out = []
    for threads, chunks in CONFIGS:
        limit = max_blocks(threads, chunks)
        for k in BLOCKS_PER_SM:
            if k <= limit:
                out.append({"threads": threads, "chunks": chunks, "blocks_per_sm": k, "grid": k * sms,
                            "bytes_in_flight_per_sm": k * threads * chunks * CHUNK_BYTES})
    return sorted(out, key=lambda p: (p["bytes_in_flight_per_sm"], p["threads"]))


def run(quick: bool = False) -> dict:
    if not backend_cupy.gpu_available():
        return {"gpu": False}
    import cupy
    n = 1 << (26 if quick else 27)            # fp32 elements: 256 or 512 MiB, far beyond L2
    reps = 5 if quick else 10
    src = cupy.random.default_rng(0).standard_normal(n, dtype=cupy.float32)
    dst = cupy.full(n, cupy.nan, dtype=cupy.float32)
    props = cupy.cuda.runtime.getDeviceProperties(0)
    sms = props["multiProcessorCount"]
    out = {"gpu": True, "elements": n, "dtype": "float32", "sms": sms, "chunk_bytes": CHUNK_BYTES,
           "max_threads_per_sm": props["maxThreadsPerMultiProcessor"], "points": []}

    def d2d():
        dst.data.copy_from_device(src.data, src.nbytes)
    t = _time(d2d, reps)
    ref = 2 * src.nbytes / t / 1e9
    out["device_to_device_copy_GB_per_s"] = ref

    s = wb.from_dlpack(src, assumed_align=16).mark_layout_dynamic()
    d = wb.from_dlpack(dst, assumed_align=16).mark_layout_dynamic()
    tvs = {(th, c): E.copy_tv(th, c) for th, c in CONFIGS}
    limits = {key: _blocks_per_sm(copy_persistent.specialize((s, d, tv)).load_gpu().handle, key[0])
              for key, tv in tvs.items()}
    out["occupancy_blocks_per_sm"] = {f"{th}x{c}": v for (th, c), v in limits.items()}
    for p in points(sms, lambda th, c: limits[(th, c)]):
        tv = tvs[(p["threads"], p["chunks"])]
        tile = wb.size(tv)
        copied = (n // tile // p["grid"]) * p["grid"] * tile     # elements actually copied (whole rounds)
        launch = copy_persistent[(p["grid"], 1, 1), (p["threads"], 1, 1)]
        dst.fill(cupy.nan)
        launch(s, d, tv)
        ok = bool(cupy.array_equal(dst[:copied], src[:copied]))
        secs = _time(lambda launch=launch, tv=tv: launch(s, d, tv), reps)
        read = copied * 4 / secs / 1e9
        inflight = p["bytes_in_flight_per_sm"] * sms
        out["points"].append({**p, "bytes_copied": copied * 4, "seconds": secs, "correct": ok,
                              "GB_per_s": 2 * read, "read_GB_per_s": read, "fraction_of_d2d": 2 * read / ref,
                              "implied_latency_ns": inflight / (read * 1e9) * 1e9})
    return out
