"""Every example kernel on the GPU, on fresh random inputs with poisoned outputs, at sizes that are
not multiples of the kernels' tiles (CuTe's predication handles the ragged edges).

* ``small``: against the CPU executor (the oracle) on the same inputs;
* ``irregular`` (1000 x 999 class) and ``large``: against numpy.

Meant to run under ``compute-sanitizer --tool memcheck`` (any access past a tensor is reported), e.g.
``compute-sanitizer --tool memcheck python3 benchmarks/dsl_gpu_check.py small irregular``.
Prints one JSON object per size and exits 1 unless every example matches; also checks that vcopy
keeps its 128-bit accesses (in the PTX) on the irregular size."""

from __future__ import annotations

import json
import sys

import cupy  # noqa: I001
import numpy as np

import workbench as wb
from workbench.dsl import compile_ptx
from workbench.kernels import examples as E


def _to_device(name, host):
    dev = [cupy.asarray(x) if x.flags.c_contiguous else cupy.asfortranarray(cupy.asarray(x)) for x in host]
    if name == "vadd_strided":       # keep the stride-2 view on the device as well
        dev[0] = cupy.asarray(np.repeat(host[0], 2))[::2]
    return dev


def check(size="small", seed=1) -> dict:
    out = {}
    for name, ex in E.make_examples(size).items():
        rng = np.random.default_rng(seed)
        host = ex.make(rng)
        dev = _to_device(name, host)
        ex.launch(dev)
        cupy.cuda.runtime.deviceSynchronize()
        if size == "small":
            cpu_in = [x.copy() for x in host]
            ex.launch(cpu_in)             # the CPU executor on the same inputs
            errs = [E.rel_error(cupy.asnumpy(dev[i]), cpu_in[i]) for i in ex.outputs]
        else:
            errs = [E.rel_error(cupy.asnumpy(dev[i]), r) for i, r in zip(ex.outputs, ex.reference(host))]
        out[name] = {"rel_err": max(errs), "ok": max(errs) <= ex.rtol}
        if name == "vcopy":
            a = wb.from_dlpack(dev[0], assumed_align=16).mark_layout_dynamic()
            b = wb.from_dlpack(dev[1], assumed_align=16).mark_layout_dynamic()
            ptx = compile_ptx(wb.show_code(E.vcopy, a, b, E.VEC))
            out[name]["ptx_128bit"] = "ld.global.v4.u32" in ptx and "st.global.v4.u32" in ptx
            out[name]["ok"] = out[name]["ok"] and out[name]["ptx_128bit"]
    return out


if __name__ == "__main__":
    sizes = sys.argv[1:] or ["small"]
    ok = True
    for size in sizes:
        res = check(size)
        print(json.dumps({"size": size, "sizes": E.SIZES[size], "examples": res}, indent=1))
        ok = ok and all(r["ok"] for r in res.values())
    sys.exit(0 if ok else 1)
