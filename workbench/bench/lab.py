"""The overhead lab: what passing tensors to a kernel costs, path by path, for 1, 2, 4 and 8 tensors.

Suites (``python -m workbench lab --help``):

* ``launch`` (GPU): host time per launch of the same elementwise kernel through each path: the
  driver floor (ctypes ``cuLaunchKernel``, prebuilt parameters), cupy ``RawKernel``, our pointer
  bypass, cached workbench tensors, torch and cupy tensors passed straight in, an explicit
  ``from_dlpack(x).mark_layout_dynamic()`` per tensor per call, and CuTe DSL's paths when
  nvidia-cutlass-dsl is installed (cached cute tensors, ``from_dlpack`` each call, torch tensors
  through its JIT, ``make_ptr``, and torch tensors through TVM-FFI when apache-tvm-ffi is installed).
* ``host`` (any machine): the same workbench paths with host tensors and a C stand-in for
  ``cuLaunchKernel`` that launches nothing: the guard and the packing alone, no driver call.
* ``convert``: one conversion per call: ``wb.from_dlpack`` (and ``+ mark_layout_dynamic``) of torch and numpy
  tensors against ``tvm_ffi.from_dlpack`` and CuTe DSL's ``from_dlpack`` (when installed), ``wb.make_ptr``.

The host suite also times TVM-FFI's per-argument conversion of torch tensors (a no-op packed function), so that
the slope of each path over 1..8 tensors (its marginal cost per tensor) can be compared in one run; ``ratios``
holds the quantities TARGETS bounds and ``targets_met`` says, for each, whether this run met it.

Every case of a suite runs once per round, rounds repeated (interleaved: load on a shared machine
hits all cases alike); each sample is the mean of a loop of calls; the result is the median and
the interquartile range over rounds.  Ratios within one run are the result, not microseconds.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import json
import statistics
import sys
import time

from . import machine

COUNTS = (1, 2, 4, 8)
SUITES = {
    "launch": "GPU: host time per kernel launch, each path, 1/2/4/8 tensors (needs a CUDA GPU with cupy)",
    "host": "any machine: host-side guard + pack per call (C stand-in for cuLaunchKernel, no driver call)",
    "convert": "any machine: one tensor conversion per call (wb / tvm_ffi / CuTe DSL from_dlpack, make_ptr)",
}
# The targets the lab checks, as ratios or per-tensor increments measured in the same run.
TARGETS = {
    "torch_straight_in_over_cute_tvm_ffi_max": 1.0,
    "torch_straight_in_minus_bypass_per_tensor_us_max": 0.3,
    "wb_cached_minus_bypass_per_tensor_us_max": 0.15,
    "bypass_over_driver_floor_max": 1.0,
    "wb_from_dlpack_over_tvm_ffi_max": 1.0,
    "cute_from_dlpack_over_wb_min": 10.0,
    # issue 31, part 5 (host overhead): marking costs at most one more conversion, and is >= 8x faster than CuTe
    # DSL's; a torch tensor's marginal cost per launch (the slope over 1..8 tensors) at most TVM-FFI's
    "mark_layout_dynamic_over_from_dlpack_max": 2.0,
    "cute_mark_over_wb_mark_min": 8.0,
    "torch_straight_in_slope_over_tvm_ffi_slope_max": 1.0,
}
_PACKAGES = ("numpy", "torch", "cupy", "cupy-cuda13x", "cupy-cuda12x", "nvidia-cutlass-dsl", "apache-tvm-ffi",
             "matplotlib", "layout-workbench")


def versions() -> dict:
    out = {}
    for p in _PACKAGES:
        try:
            out[p] = importlib.metadata.version(p)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


class _Progress:
    """A one-line progress bar on stderr (nothing when disabled or not a terminal-like stream)."""

    def __init__(self, total: int, label: str, enabled: bool):
        self.total, self.done, self.label, self.enabled, self.t0 = max(1, total), 0, label, enabled, time.perf_counter()

    def step(self, n: int = 1):
        self.done += n
        if self.enabled:
            frac = self.done / self.total
            bar = "#" * int(30 * frac)
            print(f"\r{self.label:8s} [{bar:30s}] {100 * frac:5.1f}% {time.perf_counter() - self.t0:6.1f}s",
                  end="", file=sys.stderr, flush=True)

    def close(self):
        if self.enabled:
            print(file=sys.stderr, flush=True)


def _loop(fn, calls: int, sync=None) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    if sync is not None:
        sync()
    return (time.perf_counter() - t0) / calls * 1e6


def _stats(samples) -> dict:
    s = sorted(samples)
    if len(s) >= 4:
        q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive")
    else:
        q1, q3 = s[0], s[-1]
    return {"median_us": round(statistics.median(s), 4), "q1_us": round(q1, 4), "q3_us": round(q3, 4),
            "iqr_us": round(q3 - q1, 4), "samples_us": [round(x, 4) for x in s]}


SAMPLE_SECONDS = 0.05   # a sample of a slow path (a JIT that converts every call) is this long, not `calls` calls


def _measure(cases: dict, rounds: int, calls: int, warmup: int, progress: _Progress, sync=None) -> dict:
    """cases: {(path, count): fn}.  A case that raises during warm-up is recorded as an error.  Each case
    gets as many calls per sample as fit SAMPLE_SECONDS, at most ``calls`` and at least 10."""
    out, live, per_case = {}, {}, {}
    for key, fn in cases.items():
        try:
            t0 = time.perf_counter()
            for k in range(warmup):
                fn()
                if k >= 2 and time.perf_counter() - t0 > SAMPLE_SECONDS:   # a slow path: enough warm-up
                    break
            if sync is not None:
                sync()
            once = _loop(fn, 3, sync) * 1e-6
            per_case[key] = max(10, min(calls, int(SAMPLE_SECONDS / max(once, 1e-9))))
            live[key] = fn
        except Exception as e:  # a path this machine cannot run: reported, not fatal
            out[key] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"}
        progress.step()
    samples = {k: [] for k in live}
    for _ in range(rounds):
        for key, fn in live.items():
            samples[key].append(_loop(fn, per_case[key], sync))
            progress.step()
    for key, v in samples.items():
        out[key] = {**_stats(v), "calls_per_sample": per_case[key]}
    return out


def _by_path(raw: dict) -> dict:
    paths: dict = {}
    for (path, n), r in raw.items():
        paths.setdefault(path, {})[str(n)] = r
    return paths


# -- suite: host (guard + pack, no GPU needed) ----------------------------------------------------
# The host suite's TVM-FFI peer: a registered no-op packed function called with the torch tensors, so that its
# cost per tensor is TVM-FFI's conversion of a torch argument (what a CuTe DSL --enable-tvm-ffi call pays per
# tensor before its own checks and the launch).
TVM_FFI_NOP = "TVM-FFI testing.nop(torch tensors)"
# the launch suite's: CuTe DSL compiled with --enable-tvm-ffi, torch tensors straight in
TVM_FFI_LAUNCH = "CuTe DSL TVM-FFI torch tensors"


def _host_cases(counts):
    import numpy as np

    import workbench as wb
    from workbench.dsl.runtime import _launch

    from . import _lab_kernels as K

    null = _launch.null_launch_address()
    cases, keep = {}, []
    try:
        import torch
    except ImportError:
        torch = None
    try:
        import tvm_ffi
        nop = tvm_ffi.get_global_func("testing.nop")
    except (ImportError, AttributeError, ValueError, RuntimeError):
        nop = None
    for n in counts:
        arrays = [np.ones(K.ELEMENTS, np.float32) for _ in range(n)]
        cached = [wb.from_dlpack(a).mark_layout_dynamic() for a in arrays]
        ptrs = [wb.make_ptr(wb.Float32, a.ctypes.data, "generic") for a in arrays]
        def launcher(kern, args):
            sp = kern.specialize(tuple(args))
            buf = ctypes.create_string_buffer(max(8, sp.size))
            slots = max(1, sp.size // 8)
            params = (ctypes.c_void_p * slots)(*[ctypes.addressof(buf) + 8 * i for i in range(slots)])
            go = _launch.Launcher(null, 1, (K.GRID, 1, 1, K.THREADS, 1, 1), 0, ctypes.addressof(params),
                                  ctypes.addressof(buf), ctypes.sizeof(buf), sp.arg_specs, (buf, params))
            keep.append(go)
            return go

        for kind, kern, args in (("tensors", K.TENSORS[n], cached), ("pointers", K.POINTERS[n], (*ptrs, K.ELEMENTS))):
            go = launcher(kern, args)
            if kind == "pointers":
                assert go(*args) == 0
                cases[("pointer bypass", n)] = lambda go=go, a=tuple(args): go(*a)
                continue
            assert go(*cached) == 0
            cases[("wb tensors (cached)", n)] = lambda go=go, a=tuple(cached): go(*a)
            assert go(*[wb.from_dlpack(x).mark_layout_dynamic() for x in arrays]) == 0
            cases[("from_dlpack+mark_layout_dynamic each call", n)] = \
                lambda go=go, a=tuple(arrays): go(*[wb.from_dlpack(x).mark_layout_dynamic() for x in a])
            # tensors passed straight in are specialized on 16-byte alignment (args.normalize): their own launcher
            go = launcher(kern, arrays)
            assert go(*arrays) == 0, "numpy arrays were refused by the launcher"
            cases[("numpy straight in", n)] = lambda go=go, a=tuple(arrays): go(*a)
            if torch is not None:
                tt = tuple(torch.from_numpy(a) for a in arrays)
                wb.from_dlpack(tt[0])  # the dispatcher's first (slow) call learns the producer type
                assert go(*tt) == 0, "torch tensors were refused by the launcher"
                cases[("torch straight in", n)] = lambda go=go, a=tt: go(*a)
                if nop is not None:   # TVM-FFI's per-argument conversion of torch tensors, no launch: its slope
                    nop(*tt)
                    cases[(TVM_FFI_NOP, n)] = lambda a=tt: nop(*a)
    return cases, keep


def run_host(rounds=9, calls=20000, warmup=200, counts=COUNTS, progress=True) -> dict:
    cases, keep = _host_cases(counts)
    bar = _Progress(len(cases) * (rounds + 1), "host", progress)
    raw = _measure(cases, rounds, calls, warmup, bar)
    bar.close()
    del keep
    return {"what": SUITES["host"], "counts": list(counts), "paths": _by_path(raw),
            "note": "host-side guard and parameter packing only: the launcher calls a C stand-in that launches nothing"}


# -- suite: convert -------------------------------------------------------------------------------
def _convert_cases():
    import numpy as np

    import workbench as wb

    cases = {}
    x = None
    try:
        import torch
        x = torch.randn(30, 20)
    except ImportError:
        pass
    a = np.zeros((30, 20), np.float32)
    if x is not None:
        cases[("wb.from_dlpack", "torch")] = lambda: wb.from_dlpack(x)
        cases[("wb.from_dlpack+mark_layout_dynamic", "torch")] = lambda: wb.from_dlpack(x).mark_layout_dynamic()
        # what wb.from_dlpack and the launcher ask torch per tensor and TVM-FFI does not (torch's exchange API skips
        # the checks torch's own __dlpack__ makes): part of the conversion above, timed alone
        cases[("torch checks: x.requires_grad, x.is_neg()", "torch")] = lambda: (x.requires_grad, x.is_neg())
    cases[("wb.from_dlpack", "numpy")] = lambda: wb.from_dlpack(a)
    cases[("wb.from_dlpack+mark_layout_dynamic", "numpy")] = lambda: wb.from_dlpack(a).mark_layout_dynamic()
    cases[("wb.make_ptr", "address")] = lambda: wb.make_ptr(wb.Float32, 4096, "gmem", assumed_align=16)
    try:
        import tvm_ffi
        if x is not None:
            cases[("tvm_ffi.from_dlpack", "torch")] = lambda: tvm_ffi.from_dlpack(x)
        cases[("tvm_ffi.from_dlpack", "numpy")] = lambda: tvm_ffi.from_dlpack(a)
    except ImportError:
        pass
    try:
        import cutlass
        import cutlass.cute as cute
        from cutlass.cute.runtime import from_dlpack as cute_from_dlpack
        from cutlass.cute.runtime import make_ptr as cute_make_ptr
        if x is not None:
            cases[("cute.from_dlpack", "torch")] = lambda: cute_from_dlpack(x)
            cases[("cute.from_dlpack+mark_layout_dynamic", "torch")] = lambda: cute_from_dlpack(x).mark_layout_dynamic()
        cases[("cute.from_dlpack", "numpy")] = lambda: cute_from_dlpack(a)
        gmem = cute.AddressSpace.gmem
        cases[("cute.make_ptr", "address")] = lambda: cute_make_ptr(cutlass.Float32, 4096, gmem, assumed_align=16)
    except ImportError:
        pass
    return cases


def run_convert(rounds=9, calls=20000, warmup=200, progress=True) -> dict:
    cases = _convert_cases()
    bar = _Progress(len(cases) * (rounds + 1), "convert", progress)
    raw = _measure(cases, rounds, calls, warmup, bar)
    bar.close()
    paths: dict = {}
    for (path, src), r in raw.items():
        paths.setdefault(path, {})[src] = r
    return {"what": SUITES["convert"], "sources": ["torch", "numpy", "address"], "paths": paths}


# -- suite: launch (GPU) --------------------------------------------------------------------------
def _gpu_cases(counts):
    import cupy
    import numpy as np

    import workbench as wb

    from ..dsl.runtime import cupy as backend_cupy
    from . import _lab_kernels as K

    try:
        import torch
        torch = torch if torch.cuda.is_available() else None
    except ImportError:
        torch = None
    try:
        cute_k = K.cute_kernels()
    except ImportError:
        cute_k = None
    try:
        import tvm_ffi  # noqa: F401
        has_tvm = True
    except ImportError:
        has_tvm = False
    lib = backend_cupy.libcuda()
    cases, keep, checks = {}, [], []
    grid, block = (K.GRID, 1, 1), (K.THREADS, 1, 1)
    for n in counts:
        xs = [cupy.ones(K.ELEMENTS, dtype=cupy.float32) for _ in range(n)]
        ptrs = [wb.make_ptr(wb.Float32, a.data.ptr, "gmem", assumed_align=16) for a in xs]
        bypass = K.POINTERS[n][grid, block]
        bypass(*ptrs, K.ELEMENTS)
        sp = K.POINTERS[n].specializations[-1]
        raw = cupy.RawKernel(sp.cuda_source, sp.ir.name, options=("-std=c++17",))
        raw.compile()
        fn = ctypes.c_void_p(raw.kernel.ptr)
        vals = [ctypes.c_uint64(a.data.ptr) for a in xs] + [ctypes.c_int32(K.ELEMENTS)]
        params = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
        pp = ctypes.cast(params, ctypes.c_void_p)
        keep += [raw, vals, params]
        launch = lib.cuLaunchKernel
        cases[("driver floor (ctypes cuLaunchKernel)", n)] = \
            lambda fn=fn, pp=pp, launch=launch: launch(fn, K.GRID, 1, 1, K.THREADS, 1, 1, 0, None, pp, None)
        rargs = (*xs, np.int32(K.ELEMENTS))
        cases[("cupy RawKernel", n)] = lambda raw=raw, a=rargs: raw((K.GRID,), (K.THREADS,), a)
        cases[("pointer bypass", n)] = lambda go=bypass, a=(*ptrs, K.ELEMENTS): go(*a)
        tl = K.TENSORS[n][grid, block]
        cached = [wb.from_dlpack(a).mark_layout_dynamic() for a in xs]
        cases[("wb tensors (cached)", n)] = lambda go=tl, a=tuple(cached): go(*a)
        cases[("cupy straight in", n)] = lambda go=tl, a=tuple(xs): go(*a)
        cases[("from_dlpack+mark_layout_dynamic each call", n)] = \
            lambda go=tl, a=tuple(xs): go(*[wb.from_dlpack(x).mark_layout_dynamic() for x in a])
        if torch is not None:
            tt = tuple(torch.from_dlpack(a) for a in xs)
            cases[("torch straight in", n)] = lambda go=tl, a=tt: go(*a)
        checks.append((n, xs))
        if cute_k is not None:
            try:
                _cute_cases(cases, keep, n, xs, torch, has_tvm, cute_k)
            except Exception as e:   # a CuTe DSL path that does not build here: reported in the table, not fatal
                err = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
                cases[("CuTe DSL (build failed)", n)] = lambda err=err: _raise(err)
    return cases, keep, checks


def _raise(msg):
    raise RuntimeError(msg)


def _cute_cases(cases, keep, n, xs, torch, has_tvm, cute_k):
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack as cute_from_dlpack
    from cutlass.cute.runtime import make_ptr as cute_make_ptr

    from . import _lab_kernels as K

    tfn, pfn, ufn = cute_k[n]
    if torch is not None:
        tt = tuple(torch.from_dlpack(a) for a in xs)
        ct = [cute_from_dlpack(t).mark_layout_dynamic() for t in tt]
        compiled = cute.compile(tfn, *ct)
        keep.append(compiled)
        cases[("CuTe DSL cute tensors (cached)", n)] = lambda f=compiled, a=tuple(ct): f(*a)
        cases[("CuTe DSL from_dlpack each call", n)] = \
            lambda f=compiled, a=tt: f(*[cute_from_dlpack(t).mark_layout_dynamic() for t in a])
        cases[("CuTe DSL torch tensors (JIT call)", n)] = lambda f=ufn, a=tt: f(*a)
        if has_tvm:
            ctv = [cute_from_dlpack(t, enable_tvm_ffi=True).mark_layout_dynamic() for t in tt]
            ctvm = cute.compile(tfn, *ctv, options="--enable-tvm-ffi")
            keep.append(ctvm)
            cases[("CuTe DSL TVM-FFI torch tensors", n)] = lambda f=ctvm, a=tt: f(*a)
    cp = [cute_make_ptr(cutlass.Float32, a.data.ptr, cute.AddressSpace.gmem, assumed_align=16) for a in xs]
    cpc = cute.compile(pfn, *cp, K.ELEMENTS)
    keep.append(cpc)
    cases[("CuTe DSL make_ptr", n)] = lambda f=cpc, a=(*cp, K.ELEMENTS): f(*a)


def run_launch(rounds=9, calls=5000, warmup=50, counts=COUNTS, progress=True) -> dict:
    from ..dsl.runtime import cupy as backend_cupy
    if not backend_cupy.gpu_available():
        return {"what": SUITES["launch"], "skipped": "no CUDA GPU visible to cupy"}
    import cupy
    cases, keep, checks = _gpu_cases(counts)
    sync = cupy.cuda.runtime.deviceSynchronize
    bar = _Progress(len(cases) * (rounds + 1), "launch", progress)
    raw = _measure(cases, rounds, calls, warmup, bar, sync=sync)
    bar.close()
    sync()
    # every path ran the same update on the same arrays: all a[i] = 1 + k * (n - 1) or 1 + k for n = 1
    finite = {n: bool(cupy.isfinite(xs[0]).all()) for n, xs in checks}
    del keep
    return {"what": SUITES["launch"], "counts": list(counts), "paths": _by_path(raw), "results_finite": finite}


# -- the whole lab --------------------------------------------------------------------------------
def run(suites=None, quick=False, progress=True, counts=COUNTS, rounds=None) -> dict:
    """Run the named suites (default: all that this machine can run) and return the result dict;
    rounds: how many interleaved rounds (default 9, 5 when quick)."""
    from ..dsl.runtime import cupy as backend_cupy
    gpu = backend_cupy.gpu_available()
    names = list(suites) if suites else (["launch", "host", "convert"] if gpu else ["host", "convert"])
    unknown = [s for s in names if s not in SUITES]
    if unknown:
        raise ValueError(f"Expected lab suites among {sorted(SUITES)}, but got {unknown}.")
    default_rounds, calls = (5, 2000) if quick else (9, 20000)
    rounds = rounds or default_rounds
    out = {"lab": "workbench overhead lab", "mode": "gpu" if gpu else "cpu (host-side only: no GPU)",
           "machine": machine(), "versions": versions(), "rounds": rounds, "unit": "microseconds per call",
           "command": "python -m workbench lab " + " ".join(names) + (" --quick" if quick else "")
           + (f" --rounds {rounds}" if rounds != default_rounds else ""),
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "suites": {}}
    for s in names:
        if s == "launch":
            out["suites"][s] = run_launch(rounds=rounds, calls=max(500, calls // 4), counts=counts, progress=progress)
        elif s == "host":
            out["suites"][s] = run_host(rounds=rounds, calls=calls, counts=counts, progress=progress)
        else:
            out["suites"][s] = run_convert(rounds=rounds, calls=calls, progress=progress)
    out["ratios"] = ratios(out)
    out["targets"] = TARGETS
    out["targets_met"] = verdicts(out["ratios"])
    return out


def _med(suite: dict, path: str, key: str):
    r = suite.get("paths", {}).get(path, {}).get(key)
    return None if not r or "median_us" not in r else r["median_us"]


def ratios(result: dict) -> dict:
    """The quantities TARGETS bounds, computed from one run's medians (None where a path is missing)."""
    out: dict = {}
    conv = result["suites"].get("convert")
    if conv:
        for src in ("torch", "numpy"):
            wb_, tvm, cute = (_med(conv, p, src) for p in ("wb.from_dlpack", "tvm_ffi.from_dlpack", "cute.from_dlpack"))
            if wb_ and tvm:
                out[f"wb_from_dlpack_over_tvm_ffi[{src}]"] = round(wb_ / tvm, 3)
            if wb_ and cute:
                out[f"cute_from_dlpack_over_wb[{src}]"] = round(cute / wb_, 2)
            mark = _med(conv, "wb.from_dlpack+mark_layout_dynamic", src)
            cute_mark = _med(conv, "cute.from_dlpack+mark_layout_dynamic", src)
            if wb_ and mark:
                out[f"mark_layout_dynamic_over_from_dlpack[{src}]"] = round(mark / wb_, 3)
            if mark and cute_mark:
                out[f"cute_mark_over_wb_mark[{src}]"] = round(cute_mark / mark, 2)
    for sname in ("launch", "host"):
        s = result["suites"].get(sname)
        if not s or "paths" not in s:
            continue
        for n in s["counts"]:
            k = str(n)
            byp = _med(s, "pointer bypass", k)
            floor = _med(s, "driver floor (ctypes cuLaunchKernel)", k)
            torch_in = _med(s, "torch straight in", k)
            cached = _med(s, "wb tensors (cached)", k)
            tvm = _med(s, "CuTe DSL TVM-FFI torch tensors", k)
            if byp and floor:
                out[f"{sname}: bypass_over_driver_floor[{n}]"] = round(byp / floor, 3)
            if byp and torch_in:
                out[f"{sname}: torch_straight_in_minus_bypass_per_tensor_us[{n}]"] = round((torch_in - byp) / n, 3)
            if byp and cached:
                out[f"{sname}: wb_cached_minus_bypass_per_tensor_us[{n}]"] = round((cached - byp) / n, 3)
            if torch_in and tvm:
                out[f"{sname}: torch_straight_in_over_cute_tvm_ffi[{n}]"] = round(torch_in / tvm, 3)
        slopes = {path: slope(s, path) for path in s["paths"]}
        for path, v in slopes.items():
            if v is not None:
                out[f"{sname}: slope_us_per_tensor[{path}]"] = v
        peer = slopes.get(TVM_FFI_LAUNCH if sname == "launch" else TVM_FFI_NOP)
        torch_slope = slopes.get("torch straight in")
        if peer and torch_slope is not None:
            out[f"{sname}: torch_straight_in_slope_over_tvm_ffi_slope"] = round(torch_slope / peer, 3)
    return out


def slope(suite: dict, path: str):
    """A path's marginal cost per tensor: the least-squares slope of its medians over the tensor counts
    (None unless every count has one)."""
    pts = [(n, _med(suite, path, str(n))) for n in suite.get("counts", ())]
    if len(pts) < 2 or any(v is None for _, v in pts):
        return None
    mx = sum(n for n, _ in pts) / len(pts)
    my = sum(v for _, v in pts) / len(pts)
    return round(sum((n - mx) * (v - my) for n, v in pts) / sum((n - mx) ** 2 for n, _ in pts), 4)


def verdicts(ratios_: dict) -> dict:
    """Each ratio that a target bounds: its value, the bound, and whether it is met (keys as in ratios)."""
    out = {}
    for key, value in ratios_.items():
        base = key.split(": ", 1)[-1].split("[", 1)[0]
        for suffix, ok in (("_max", lambda v, t: v <= t), ("_min", lambda v, t: v >= t)):
            t = TARGETS.get(base + suffix)
            if t is not None and value is not None:
                out[key] = {"value": value, ("max" if suffix == "_max" else "min"): t, "met": bool(ok(value, t))}
    return out


def table(result: dict) -> str:
    """The result as text tables: one row per path, one column per tensor count (median [IQR])."""
    lines = [f"{result['lab']} -- {result['mode']}",
             f"machine: {result['machine'].get('processor') or result['machine'].get('platform')}"
             f" ({result['machine'].get('cpu_count')} cpus){', GPU ' + result['machine']['gpu'] if 'gpu' in result['machine'] else ''};"
             f" python {result['machine'].get('python')}",
             "versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()),
             f"unit: {result['unit']}, median [interquartile range] over {result['rounds']} rounds", ""]
    for name, s in result["suites"].items():
        if "skipped" in s:
            lines += [f"== {name}: skipped ({s['skipped']})", ""]
            continue
        cols = [str(c) for c in s.get("counts", s.get("sources", []))]
        head = "tensors" if "counts" in s else "source"
        width = max([len(p) for p in s["paths"]] + [10])
        lines.append(f"== {name}: {s['what']}")
        lines.append(f"{'path':{width}s}  " + "  ".join(f"{head + ' ' + c:>18s}" for c in cols))
        for path, row in s["paths"].items():
            cells = []
            for c in cols:
                r = row.get(c)
                if r is None:
                    cells.append(f"{'-':>18s}")
                elif "error" in r:
                    cells.append(f"{'error':>18s}")
                else:
                    cells.append(f"{r['median_us']:9.3f} [{r['iqr_us']:5.3f}]")
            lines.append(f"{path:{width}s}  " + "  ".join(cells))
        errors = [(p, c, r["error"]) for p, row in s["paths"].items() for c, r in row.items() if "error" in r]
        for p, c, e in errors[:8]:
            lines.append(f"  ! {p} [{c}]: {e}")
        if s.get("note"):
            lines.append(f"  ({s['note']})")
        lines.append("")
    if result.get("ratios"):
        lines.append("== ratios (targets: " + ", ".join(f"{k} {v}" for k, v in result["targets"].items()) + ")")
        for k, v in result["ratios"].items():
            lines.append(f"{k:60s} {v}")
    met = result.get("targets_met") or verdicts(result.get("ratios") or {})
    if met:
        lines += ["", "== targets"]
        for k, v in met.items():
            bound = f"<= {v['max']}" if "max" in v else f">= {v['min']}"
            lines.append(f"{k:60s} {v['value']:>9} {bound:>8}  {'met' if v['met'] else 'NOT MET'}")
    return "\n".join(lines)


def chart(result: dict, path: str | None = None):
    """Grouped bars with IQR error bars: one group per tensor count (launch/host suites) or per
    source (convert).  Returns the matplotlib Figure; writes a PNG when path is given."""
    import matplotlib
    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(n, s) for n, s in result["suites"].items() if "paths" in s]
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 4.2 * max(1, len(panels))), squeeze=False)
    for ax, (name, s) in zip(axes[:, 0], panels):
        groups = [str(c) for c in s.get("counts", s.get("sources", []))]
        paths = [p for p, row in s["paths"].items() if any("median_us" in r for r in row.values())]
        width = 0.8 / max(1, len(paths))
        for j, p in enumerate(paths):
            xs, ys, lo, hi = [], [], [], []
            for g_i, g in enumerate(groups):
                r = s["paths"][p].get(g)
                if r and "median_us" in r:
                    xs.append(g_i + (j - (len(paths) - 1) / 2) * width)
                    ys.append(r["median_us"])
                    lo.append(r["median_us"] - r["q1_us"])
                    hi.append(r["q3_us"] - r["median_us"])
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=p)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([f"{g} tensor{'s' if g != '1' else ''}" if "counts" in s else g for g in groups])
        ax.set_ylabel("us per call (median, IQR)")
        ax.set_title(f"{name}: {s['what']}", fontsize=9)
        ax.legend(fontsize=7, ncol=2)
    fig.suptitle(f"{result['lab']} -- {result['mode']} -- {result['machine'].get('gpu') or result['machine'].get('processor') or ''}",
                 fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def save(result: dict, json_path: str, png_path: str | None = None) -> None:
    with open(json_path, "w") as f:
        json.dump(result, f, indent=1, default=str)
        f.write("\n")
    if png_path:
        chart(result, png_path)
