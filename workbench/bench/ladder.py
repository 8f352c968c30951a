"""The optimisation ladder of notebook 08: c = a + b on an (M, N) fp32 tensor, four rungs (see
workbench/kernels/examples.py: add_naive, add_vectorized, add_tv with LADDER_TV and LADDER_TV4).

For each rung, on a GPU: bandwidth (bytes read + written over the time of one launch, CUDA events,
median after a warm-up; output checked against a + b), whether the generated code uses 128-bit
accesses, registers per thread, how many blocks of it fit on an SM (the driver's occupancy API) and
so the bytes each SM keeps in flight, which by Little's law (bytes in flight = bandwidth x latency)
bounds the bandwidth.  Without a GPU: {"gpu": False}.
"""

from __future__ import annotations

import ctypes

import workbench as wb
from workbench.kernels import examples as E

from ..dsl.runtime import cupy as backend_cupy
from .bandwidth import _time  # CUDA events, median after a warm-up: one way to time a kernel

# bytes of a and b a thread has requested before it can add: what it keeps in flight
BYTES_IN_FLIGHT_PER_THREAD = {"naive": 2 * 4}
THREADS_PER_BLOCK = {"naive": 256, "vectorized": 256, "vectorized_by_rows": 256, "tv": 128, "remapped": 128}


def _blocks_per_sm(func_handle, threads: int) -> int:
    lib = backend_cupy.libcuda()
    n = ctypes.c_int()
    rc = lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(n), func_handle, threads, ctypes.c_size_t(0))
    return n.value if rc == 0 else -1


def run(quick: bool = False) -> dict:
    if not backend_cupy.gpu_available():
        return {"gpu": False}
    import cupy
    m = n = 4096 if quick else 8192
    reps = 10 if quick else 30
    rng = cupy.random.default_rng(0)
    a = rng.standard_normal((m, n), dtype=cupy.float32)
    b = rng.standard_normal((m, n), dtype=cupy.float32)
    c = cupy.full((m, n), cupy.nan, dtype=cupy.float32)
    want = a + b
    nbytes = 3 * a.nbytes
    props = cupy.cuda.runtime.getDeviceProperties(0)
    sms = props["multiProcessorCount"]
    out = {"gpu": True, "shape": [m, n], "dtype": "float32", "bytes_moved": nbytes, "sms": sms,
           "max_threads_per_sm": props["maxThreadsPerMultiProcessor"], "rungs": {}}

    def d2d():
        c.data.copy_from_device(a.data, a.nbytes)
    t = _time(d2d, reps)
    out["device_to_device_copy_GB_per_s"] = 2 * a.nbytes / t / 1e9

    ta, tb, tc = (wb.from_dlpack(x, assumed_align=16) for x in (a, b, c))
    for name, k, extra, launch, threads in E.ladder(m, n, variants=True):
        c.fill(cupy.nan)
        launch(ta, tb, tc)
        ok = bool(cupy.array_equal(c, want))
        t = _time(lambda launch=launch: launch(ta, tb, tc), reps)
        code = wb.show_code(k, ta, tb, tc, *extra)
        gk = k.specialize((ta, tb, tc, *extra)).gpu
        bps = _blocks_per_sm(gk.handle, THREADS_PER_BLOCK[name])
        per_thread = BYTES_IN_FLIGHT_PER_THREAD.get(name, 2 * 4 * E.LANES)
        resident = bps * THREADS_PER_BLOCK[name] if bps > 0 else -1
        gbs = nbytes / t / 1e9
        out["rungs"][name] = {
            "GB_per_s": gbs, "seconds": t, "correct": ok, "vectorized_128bit": "uint4" in code,
            "threads": threads, "registers_per_thread": gk.attributes()["registers"], "blocks_per_sm": bps,
            "bytes_in_flight_per_thread": per_thread,
            "bytes_in_flight_per_sm": resident * per_thread if resident > 0 else -1,
            # Little's law backwards: the latency this bandwidth implies if that much were in flight; an upper
            # bound on the memory latency, tight only for a rung whose bandwidth is bounded by what it has in flight
            "implied_latency_ns": (resident * per_thread * sms) / (gbs * 1e9) * 1e9 if resident > 0 else -1,
        }
    return out
