"""Every example kernel on the GPU against the CPU executor (the oracle), on fresh random inputs
with poisoned outputs.  Run under compute-sanitizer by benchmarks/bench_dsl.py's GPU command."""

from __future__ import annotations

import json
import sys

import cupy  # noqa: I001
import numpy as np

from workbench.dsl import examples as E


def check(size="small", seed=1) -> dict:
    out = {}
    for name, ex in E.make_examples(size).items():
        rng = np.random.default_rng(seed)
        host = ex.make(rng)
        dev = [cupy.asarray(x) if x.flags.c_contiguous else cupy.asfortranarray(cupy.asarray(x)) for x in host]
        if name == "vadd_strided":       # keep the stride-2 view on the device as well
            base = cupy.asarray(np.repeat(host[0], 2))
            dev[0] = base[::2]
        cpu_in = [x.copy() for x in host]
        ex.launch(dev)
        cupy.cuda.runtime.deviceSynchronize()
        if size == "small":
            ex.launch(cpu_in)             # the CPU executor on the same inputs
            errs = [E.rel_error(cupy.asnumpy(dev[i]), cpu_in[i]) for i in ex.outputs]
        else:
            errs = [E.rel_error(cupy.asnumpy(dev[i]), r) for i, r in zip(ex.outputs, ex.reference(host))]
        out[name] = {"rel_err": max(errs), "ok": max(errs) <= ex.rtol}
    return out


if __name__ == "__main__":
    size = sys.argv[1] if len(sys.argv) > 1 else "small"
    res = check(size)
    print(json.dumps(res, indent=1))
    sys.exit(0 if all(r["ok"] for r in res.values()) else 1)
