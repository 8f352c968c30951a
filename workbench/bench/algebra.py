"""Layout-algebra speed against pycute (the anchor), measured in the same run.

A fixed, seeded suite of 1,000 (layout, tiler) pairs that both libraries accept; each library
runs composition and logical_divide over the whole suite, best of several rounds; the result
is the ratio pycute_time / our_time (>= 1 means we are at least as fast).  Every pair's
results are also compared as functions before timing, so the suite measures correct work.
A 64x64 layout is evaluated at all 4,096 indices (vectorized) and timed per call.
"""

from __future__ import annotations

import platform
import random
import sys
import time

import numpy as np

from ..layout import ComposedLayout, Layout, Swizzle, composition, logical_divide
from ..layout import inttuple as it

__all__ = ["run", "make_suite", "machine"]

SEED = 2026


def _shape(rng, leaves):
    if leaves == 1 or rng.random() < 0.25:
        return rng.choice([2, 2, 4, 4, 8, 3, 16, 6])
    k = rng.randint(2, min(3, leaves))
    return tuple(_shape(rng, max(1, leaves // k)) for _ in range(k))


def _injective(rng, max_leaves):
    shape = _shape(rng, rng.randint(1, max_leaves))
    flat = it.flatten(shape)
    order = list(range(len(flat)))
    rng.shuffle(order)
    strides, cur = [0] * len(flat), 1
    for i in order:
        strides[i] = cur
        cur *= flat[i]
    return shape, it.unflatten(strides, shape)


def make_suite(n=1000, seed=SEED):
    """n (A, B) pairs of (shape, stride) tuples; A up to 6 leaves, B a tiler that divides A."""
    import pycute

    rng = random.Random(seed)
    suite = []
    while len(suite) < n:
        a = _injective(rng, 6)
        size_a = it.product(a[0])
        b = _injective(rng, 3)
        if size_a % it.product(b[0]):
            continue
        A, B = Layout(*a), Layout(*b)
        pA, pB = pycute.Layout(*a), pycute.Layout(*b)
        try:
            ours = (composition(A, B), logical_divide(A, B))
            theirs = (pycute.composition(pA, pB), pycute.logical_divide(pA, pB))
        except (ValueError, AssertionError):
            continue
        nb = it.product(b[0])
        if [ours[0](i) for i in range(nb)] != [theirs[0](i) for i in range(nb)]:
            raise AssertionError(f"composition disagrees with pycute on {A} o {B}")
        if [ours[1](i) for i in range(size_a)] != [theirs[1](i) for i in range(size_a)]:
            raise AssertionError(f"logical_divide disagrees with pycute on {A} / {B}")
        suite.append((a, b))
    return suite


def _best(fn, rounds):
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import os

    return {
        "platform": platform.platform(), "machine": platform.machine(), "cpu_model": cpu,
        "cpu_count": os.cpu_count(), "python": sys.version.split()[0], "numpy": np.__version__,
    }


def run(quick: bool = False) -> dict:
    """Measure and return a JSON-able dict (figures in seconds and ratios)."""
    import pycute

    n = 200 if quick else 1000
    rounds = 3 if quick else 7
    suite = make_suite(n)
    ours = [(Layout(*a), Layout(*b)) for a, b in suite]
    theirs = [(pycute.Layout(*a), pycute.Layout(*b)) for a, b in suite]

    def loop(f, pairs):
        return lambda: [f(x, y) for x, y in pairs]

    t = {
        "composition_ours_s": _best(loop(composition, ours), rounds),
        "composition_pycute_s": _best(loop(pycute.composition, theirs), rounds),
        "logical_divide_ours_s": _best(loop(logical_divide, ours), rounds),
        "logical_divide_pycute_s": _best(loop(pycute.logical_divide, theirs), rounds),
    }

    # 64x64 evaluation at all 4,096 indices: a fresh layout each call (no cached offsets)
    shp, std = ((8, 8), (8, 8)), ((8, 512), (1, 64))

    def eval_ours():
        Layout(shp, std).offsets()

    def eval_swizzled():
        ComposedLayout(Swizzle(3, 3, 3), 0, Layout(shp, std)).offsets()

    pl = pycute.Layout(shp, std)

    def eval_pycute():
        [pl(i) for i in range(4096)]

    reps = 20 if quick else 200
    e_ours = _best(eval_ours, reps)
    e_sw = _best(eval_swizzled, reps)
    e_py = _best(eval_pycute, 3 if quick else 10)
    assert list(Layout(shp, std).offsets()) == [pl(i) for i in range(4096)]

    return {
        "benchmark": "layout algebra vs pycute (nvidia-cutlass 4.2.0.0)",
        "machine": machine(),
        "suite": {"pairs": n, "seed": SEED, "rounds": rounds, "timing": "best of rounds, whole suite per round"},
        "seconds": t,
        "ratios_pycute_over_ours": {
            "composition": t["composition_pycute_s"] / t["composition_ours_s"],
            "logical_divide": t["logical_divide_pycute_s"] / t["logical_divide_ours_s"],
        },
        "evaluate_64x64": {
            "layout": f"{Layout(shp, std)}", "indices": 4096,
            "ours_ms": e_ours * 1e3, "swizzled_ours_ms": e_sw * 1e3, "pycute_per_index_loop_ms": e_py * 1e3,
            "target_ms": 5.0, "meets_target": e_ours * 1e3 < 5.0 and e_sw * 1e3 < 5.0,
        },
        "quick": quick,
    }
