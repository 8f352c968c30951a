"""The CUDA the library's kernels compile to, pinned: every example, ladder rung and Hopper configuration's source
hashed in tests/golden/generated_cuda.json.  A change to the DSL that changes generated code fails here, naming the
kernels; if the change is meant, regenerate with ``WB_UPDATE_GOLDEN=1 pytest tests/test_generated_code.py`` and say
why in the commit (the instruction-centric redesign left every kernel byte-identical but the ladder's comment
``// inlined store_tile()``, once ``_store_tile``)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.kernels import examples as E
from workbench.kernels import gemm_hopper as H
from workbench.kernels import gemm_ladder as G

GOLDEN = Path(__file__).parent / "golden" / "generated_cuda.json"


def _sources() -> dict:
    """name -> the CUDA C++ of each shipped kernel at a representative signature (host tensors: nothing runs)."""
    torch = pytest.importorskip("torch")
    out = {}

    def add(name, k, args):
        out[name] = k.specialize(tuple(args)).cuda_source

    rng = np.random.default_rng(0)
    for name, e in E.make_examples("small").items():
        xs = e.make(rng)
        if name in ("vcopy_tv", "transpose_tile") or name.startswith("add_"):
            xs = [wb.from_dlpack(x, assumed_align=16) for x in xs]
        add("ex_" + name, e.kernel, list(xs) + list(e.extra))
    m, n, k = 256, 256, 128
    a, b = torch.randn(m, k).half(), torch.randn(n, k).half()
    for r in G.ladder():
        if r.name != "simt":   # the simt rung is the sgemm example
            ops = tuple(wb.from_dlpack(x, assumed_align=16) for x in (a, b, torch.zeros(m, n)))
            add("ladder_" + r.name, r.kernel_for(ops), ops)
    for cdt in (torch.float32, torch.float16):
        for r in H.hopper_rungs():
            ops = r.args(a, b, torch.zeros(m, n, dtype=cdt))
            add(f"hopper_{r.name}_{str(cdt).removeprefix('torch.')}", r.kernel_for(ops), ops)
    for kw in (dict(cluster=2), dict(bm=128, bn=128, stages=5, pingpong=True)):
        cfg = H.HopperGemm(**{**dict(bm=128, bn=256, bk=64, stages=4, group=8), **kw})
        ops = cfg.operands(a, b, torch.zeros(m, n, dtype=torch.float16))[1]
        add("hopper_" + "_".join(f"{x}{v}" for x, v in kw.items()), cfg.kernel("tma", wb.Float16), ops)
    return out


def test_generated_cuda_is_pinned():
    got = {name: hashlib.sha256(src.encode()).hexdigest() for name, src in _sources().items()}
    if os.environ.get("WB_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(GOLDEN.read_text())
    assert len(want) >= 25
    changed = sorted(n for n in want.keys() | got.keys() if want.get(n) != got.get(n))
    assert not changed, f"generated CUDA changed for {changed}"
