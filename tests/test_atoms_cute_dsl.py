"""workbench.atoms against CuTe DSL (nvidia-cutlass-dsl): the atoms it exposes, traced on the CPU.

The DSL program runs in a subprocess with ``CUTE_DSL_ARCH=sm_90a`` (warpgroup MMAs refuse to trace
for another arch, and the arch is fixed when ``cutlass`` is first imported); it prints each
layout, and each must equal ours as a function (test_atoms_cute_cpp.assert_same_function).
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap

import pytest
from test_atoms_cute_cpp import assert_same_function

import workbench as wb
from workbench.atoms import (
    copy_atom,
    make_tiled_copy,
    make_tiled_copy_A,
    make_tiled_copy_B,
    make_tiled_copy_C,
    make_tiled_mma,
    mma_atom,
)

if importlib.util.find_spec("cutlass") is None:
    pytest.skip("nvidia-cutlass-dsl is not installed", allow_module_level=True)

DSL_PROGRAM = textwrap.dedent('''
    import cutlass, cutlass.cute as cute
    from cutlass.cute.nvgpu import warp, warpgroup, cpasync, OperandMajorMode as Major, CopyUniversalOp
    F16, BF16, F32 = cutlass.Float16, cutlass.BFloat16, cutlass.Float32

    def show(label, atom):
        print(label + "|A|" + str(atom.tv_layout_A)); print(label + "|B|" + str(atom.tv_layout_B))
        print(label + "|C|" + str(atom.tv_layout_C)); print(label + "|thr|" + str(atom.thr_id))

    @cute.jit
    def run():
        show("f16_16x8x16_f32", cute.make_mma_atom(warp.MmaF16BF16Op(F16, F32, (16, 8, 16))))
        show("f16_16x8x8_f16", cute.make_mma_atom(warp.MmaF16BF16Op(F16, cutlass.Float16, (16, 8, 8))))
        show("bf16_16x8x16_f32", cute.make_mma_atom(warp.MmaF16BF16Op(BF16, F32, (16, 8, 16))))
        show("tf32_16x8x8", cute.make_mma_atom(warp.MmaTF32Op((16, 8, 8))))
        show("fp8_16x8x32", cute.make_mma_atom(warp.MmaFP8Op(cutlass.Float8E4M3FN, F32, (16, 8, 32))))
        for n in (8, 64, 128, 256):
            for src, tag in ((warpgroup.OperandSource.SMEM, "SS"), (warpgroup.OperandSource.RMEM, "RS")):
                show(f"gmma_{n}_{tag}", cute.make_mma_atom(warpgroup.MmaF16BF16Op(F16, F32, (64, n, 16), src,
                                                                                Major.K, Major.K)))
        show("gmma_fp8_96", cute.make_mma_atom(warpgroup.MmaF8Op(cutlass.Float8E4M3FN, cutlass.Float8E4M3FN, F32,
                                                                 (64, 96, 32), warpgroup.OperandSource.SMEM,
                                                                 Major.K, Major.K)))
        a = cute.make_mma_atom(warp.MmaF16BF16Op(F16, F32, (16, 8, 16)))
        m = cute.make_tiled_mma(a, cute.make_layout((2, 2, 1)), permutation_mnk=(32, 32, 16))
        print("tmma|A|" + str(m.tv_layout_A_tiled)); print("tmma|B|" + str(m.tv_layout_B_tiled))
        print("tmma|C|" + str(m.tv_layout_C_tiled))
        for x in (1, 2, 4):
            for t in (False, True):
                c = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(t, x), F16)
                print(f"ldsm_{x}_{t}|src|" + str(c.layout_src_tv)); print(f"ldsm_{x}_{t}|dst|" + str(c.layout_dst_tv))
                s = cute.make_copy_atom(warp.StMatrix8x8x16bOp(t, x), F16)
                print(f"stsm_{x}_{t}|src|" + str(s.layout_src_tv)); print(f"stsm_{x}_{t}|dst|" + str(s.layout_dst_tv))
        ldsm = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), F16)
        print("tcA|S|" + str(cute.make_tiled_copy_A(ldsm, m).layout_src_tv_tiled))
        print("tcB|S|" + str(cute.make_tiled_copy_B(ldsm, m).layout_src_tv_tiled))
        st = cute.make_copy_atom(warp.StMatrix8x8x16bOp(False, 4), F16)
        print("tcC|D|" + str(cute.make_tiled_copy_C(st, m).layout_dst_tv_tiled))
        g2s = cute.make_copy_atom(cpasync.CopyG2SOp(), F16, num_bits_per_copy=128)
        tc = cute.make_tiled_copy_tv(g2s, cute.make_layout((16, 8), stride=(8, 1)), cute.make_layout((1, 8)))
        print("tcG2S|S|" + str(tc.layout_src_tv_tiled))
        u = cute.make_copy_atom(CopyUniversalOp(), F32, num_bits_per_copy=64)
        print("u64|src|" + str(u.layout_src_tv))

    run()
''')


@pytest.fixture(scope="module")
def dsl_output():
    env = dict(os.environ, CUTE_DSL_ARCH="sm_90a")
    with tempfile.TemporaryDirectory() as d:  # the DSL compiles from source: the program must be a file
        prog = pathlib.Path(d) / "atoms_dsl_program.py"
        prog.write_text(DSL_PROGRAM)
        r = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = {}
    for line in r.stdout.splitlines():
        if line.count("|") == 2:
            label, part, value = line.split("|")
            out[(label, part)] = value
    return out


def ours():
    mma = {
        "f16_16x8x16_f32": mma_atom("SM80_16x8x16_F32F16F16F32_TN"),
        "f16_16x8x8_f16": mma_atom("SM80_16x8x8_F16F16F16F16_TN"),
        "bf16_16x8x16_f32": mma_atom("SM80_16x8x16_F32BF16BF16F32_TN"),
        "tf32_16x8x8": mma_atom("SM80_16x8x8_F32TF32TF32F32_TN"),
        "fp8_16x8x32": mma_atom("SM89_16x8x32_F32E4M3E4M3F32_TN"),
        "gmma_fp8_96": mma_atom("SM90_64x96x32_F32E4M3E4M3_SS_TN"),
    }
    for n in (8, 64, 128, 256):
        for tag in ("SS", "RS"):
            mma[f"gmma_{n}_{tag}"] = mma_atom(f"SM90_64x{n}x16_F32F16F16_{tag}")
    return mma


def test_mma_atoms_match_cute_dsl(dsl_output):
    for label, atom in ours().items():
        for part, lay in (("A", atom.tv_layout_A), ("B", atom.tv_layout_B), ("C", atom.tv_layout_C),
                          ("thr", atom.thr_id)):
            assert_same_function(lay, dsl_output[(label, part)], f"{label} {part}")


def test_tiled_and_copies_match_cute_dsl(dsl_output):
    F16 = wb.Float16
    m = make_tiled_mma(mma_atom("SM80_16x8x16_F32F16F16F32_TN"), wb.make_layout((2, 2, 1)), (32, 32, 16))
    assert_same_function(m.tv_layout_A_tiled, dsl_output[("tmma", "A")], "tiled A")
    assert_same_function(m.tv_layout_B_tiled, dsl_output[("tmma", "B")], "tiled B")
    assert_same_function(m.tv_layout_C_tiled, dsl_output[("tmma", "C")], "tiled C")
    for x in (1, 2, 4):
        for t in (False, True):
            ld = copy_atom(f"SM75_U16x{2 * x}_LDSM_T" if t else f"SM75_U32x{x}_LDSM_N", F16)
            st = copy_atom(f"SM90_U16x{2 * x}_STSM_T" if t else f"SM90_U32x{x}_STSM_N", F16)
            for name, atom in ((f"ldsm_{x}_{t}", ld), (f"stsm_{x}_{t}", st)):
                assert_same_function(atom.layout_src_tv, dsl_output[(name, "src")], f"{name} src")
                assert_same_function(atom.layout_dst_tv, dsl_output[(name, "dst")], f"{name} dst")
    ldsm = copy_atom("SM75_U32x4_LDSM_N", F16)
    assert_same_function(make_tiled_copy_A(ldsm, m).layout_src_tv_tiled, dsl_output[("tcA", "S")], "copy A")
    assert_same_function(make_tiled_copy_B(ldsm, m).layout_src_tv_tiled, dsl_output[("tcB", "S")], "copy B")
    stsm = copy_atom("SM90_U32x4_STSM_N", F16)
    assert_same_function(make_tiled_copy_C(stsm, m).layout_dst_tv_tiled, dsl_output[("tcC", "D")], "copy C")
    g2s = make_tiled_copy(copy_atom("SM80_CP_ASYNC_CACHEALWAYS", F16, num_bits=128),
                          wb.make_layout((16, 8), stride=(8, 1)), wb.make_layout((1, 8)))
    assert_same_function(g2s.layout_src_tv_tiled, dsl_output[("tcG2S", "S")], "cp.async tiled")
    assert_same_function(copy_atom("UniversalCopy_U64", wb.Float32).layout_src_tv, dsl_output[("u64", "src")], "u64")
