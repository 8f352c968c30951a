"""workbench.atoms against CuTe DSL (nvidia-cutlass-dsl): the atoms it exposes, traced on the CPU.

Covered: MmaUniversalOp (F16/F32/F64) vs UniversalFMA, warp MMAs (f16, bf16, tf32, fp8), every N of
the warpgroup F16 MMA (F32 accumulate, SS and RS), bf16 and f16-accumulate GMMA, MN-major operands, every N
and signedness of the warpgroup I8 MMA with the op's (A, B, accumulator) types, a tiled MMA, LDSM/STSM,
tiled copies, cp.async and a universal copy.

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
    from cutlass.cute.nvgpu import warp, warpgroup, cpasync, OperandMajorMode as Major, CopyUniversalOp, MmaUniversalOp
    F16, BF16, F32, I8, U8 = cutlass.Float16, cutlass.BFloat16, cutlass.Float32, cutlass.Int8, cutlass.Uint8
    SRC = {"SS": warpgroup.OperandSource.SMEM, "RS": warpgroup.OperandSource.RMEM}
    MAJOR = {"K": Major.K, "MN": Major.MN}
    # (label, ab type, accumulator type, N, source, major A, major B): every N of the 16-bit GMMA,
    # bf16 and f16-accumulate ones, and MN-major operands (SS: A and/or B, RS: B)
    GMMA16 = [(f"gmma_f16_f32_{n}_{src}", F16, F32, n, src, "K", "K") for n in range(8, 257, 8) for src in SRC]
    GMMA16 += [(f"gmma_bf16_f32_{n}_{src}", BF16, F32, n, src, "K", "K") for n in (8, 64, 136, 256) for src in SRC]
    GMMA16 += [(f"gmma_f16_f16_{n}_{src}", F16, F16, n, src, "K", "K") for n in (16, 128, 248) for src in SRC]
    GMMA16 += [(f"gmma_f16_f32_{n}_SS_{a}_{b}", F16, F32, n, "SS", a, b) for n in (96, 256)
               for a, b in (("MN", "MN"), ("MN", "K"), ("K", "MN"))]
    GMMA16 += [(f"gmma_bf16_f32_{n}_RS_K_MN", BF16, F32, n, "RS", "K", "MN") for n in (32, 200)]
    # every N and signedness of the int8 GMMA, both sources
    GMMA8 = [(f"gmma_i8_{a.__name__}_{b.__name__}_{n}_{src}", a, b, n, src)
             for a in (I8, U8) for b in (I8, U8) for n in (8, 24, *range(16, 257, 16)) for src in SRC]

    def show(label, atom):
        print(label + "|A|" + str(atom.tv_layout_A)); print(label + "|B|" + str(atom.tv_layout_B))
        print(label + "|C|" + str(atom.tv_layout_C)); print(label + "|thr|" + str(atom.thr_id))
        op = atom.op  # warp-level ops name one ab_dtype, warpgroup ops a_dtype and b_dtype
        types = [getattr(op, f, None) or getattr(op, "ab_dtype", None) for f in ("a_dtype", "b_dtype", "acc_dtype")]
        if all(types):
            print(label + "|types|" + ",".join(t.__name__ for t in types))

    @cute.jit
    def run():
        for t in (cutlass.Float16, cutlass.Float32, cutlass.Float64):
            a = cute.make_mma_atom(MmaUniversalOp(t))
            print(f"fma_{t.__name__}|A|" + str(a.tv_layout_A)); print(f"fma_{t.__name__}|B|" + str(a.tv_layout_B))
            print(f"fma_{t.__name__}|C|" + str(a.tv_layout_C)); print(f"fma_{t.__name__}|thr|" + str(a.thr_id))
        show("f16_16x8x16_f32", cute.make_mma_atom(warp.MmaF16BF16Op(F16, F32, (16, 8, 16))))
        show("f16_16x8x8_f16", cute.make_mma_atom(warp.MmaF16BF16Op(F16, cutlass.Float16, (16, 8, 8))))
        show("bf16_16x8x16_f32", cute.make_mma_atom(warp.MmaF16BF16Op(BF16, F32, (16, 8, 16))))
        show("bf16_16x8x8_f32", cute.make_mma_atom(warp.MmaF16BF16Op(BF16, F32, (16, 8, 8))))
        show("tf32_16x8x8", cute.make_mma_atom(warp.MmaTF32Op((16, 8, 8))))
        show("fp8_16x8x32", cute.make_mma_atom(warp.MmaFP8Op(cutlass.Float8E4M3FN, F32, (16, 8, 32))))
        for label, ab, acc, n, src, ma, mb in GMMA16:
            show(label, cute.make_mma_atom(warpgroup.MmaF16BF16Op(ab, acc, (64, n, 16), SRC[src], MAJOR[ma], MAJOR[mb])))
        for label, a, b, n, src in GMMA8:
            show(label, cute.make_mma_atom(warpgroup.MmaI8Op(a, b, cutlass.Int32, (64, n, 32), SRC[src], Major.K, Major.K)))
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


CODES = {"Float16": "F16", "BFloat16": "BF16", "Float32": "F32", "Int8": "S8", "Uint8": "U8", "Int32": "S32"}


def ours():
    """label -> our atom, for every MMA atom the DSL program shows (its labels spell the catalog name)."""
    mma = {
        "f16_16x8x16_f32": mma_atom("SM80_16x8x16_F32F16F16F32_TN"),
        "f16_16x8x8_f16": mma_atom("SM80_16x8x8_F16F16F16F16_TN"),
        "bf16_16x8x16_f32": mma_atom("SM80_16x8x16_F32BF16BF16F32_TN"),
        "bf16_16x8x8_f32": mma_atom("SM80_16x8x8_F32BF16BF16F32_TN"),
        "tf32_16x8x8": mma_atom("SM80_16x8x8_F32TF32TF32F32_TN"),
        "fp8_16x8x32": mma_atom("SM89_16x8x32_F32E4M3E4M3F32_TN"),
        "gmma_fp8_96": mma_atom("SM90_64x96x32_F32E4M3E4M3_SS_TN"),
    }
    for t in ("Float16", "Float32", "Float64"):
        mma[f"fma_{t}"] = mma_atom("UniversalFMA", getattr(wb, t))
    for n in range(8, 257, 8):
        for src in ("SS", "RS"):
            mma[f"gmma_f16_f32_{n}_{src}"] = mma_atom(f"SM90_64x{n}x16_F32F16F16_{src}")
    for n in (8, 64, 136, 256):
        for src in ("SS", "RS"):
            mma[f"gmma_bf16_f32_{n}_{src}"] = mma_atom(f"SM90_64x{n}x16_F32BF16BF16_{src}")
    for n in (16, 128, 248):
        for src in ("SS", "RS"):
            mma[f"gmma_f16_f16_{n}_{src}"] = mma_atom(f"SM90_64x{n}x16_F16F16F16_{src}")
    for n in (96, 256):
        for ma, mb in (("MN", "MN"), ("MN", "K"), ("K", "MN")):
            mma[f"gmma_f16_f32_{n}_SS_{ma}_{mb}"] = mma_atom(f"SM90_64x{n}x16_F32F16F16_SS", major_a=ma, major_b=mb)
    for n in (32, 200):
        mma[f"gmma_bf16_f32_{n}_RS_K_MN"] = mma_atom(f"SM90_64x{n}x16_F32BF16BF16_RS", major_b="MN")
    for a in ("Int8", "Uint8"):
        for b in ("Int8", "Uint8"):
            for n in (8, 24, *range(16, 257, 16)):
                for src in ("SS", "RS"):
                    mma[f"gmma_i8_{a}_{b}_{n}_{src}"] = mma_atom(f"SM90_64x{n}x32_S32{CODES[a]}{CODES[b]}_{src}_TN")
    return mma


def test_mma_atoms_match_cute_dsl(dsl_output):
    shown = {label for label, part in dsl_output if part == "A" and not label.startswith("tmma")}
    atoms = ours()
    assert shown == set(atoms), shown ^ set(atoms)
    assert len(atoms) == 7 + 3 + 64 + 8 + 6 + 6 + 2 + 144
    for label, atom in atoms.items():
        for part, lay in (("A", atom.tv_layout_A), ("B", atom.tv_layout_B), ("C", atom.tv_layout_C),
                          ("thr", atom.thr_id)):
            assert_same_function(lay, dsl_output[(label, part)], f"{label} {part}")
        # the DSL op's (A, B, accumulator) types are ours (names as CuTe DSL spells them): signedness included
        if (label, "types") in dsl_output:
            assert dsl_output[(label, "types")] == f"{atom.a_type},{atom.b_type},{atom.d_type}", label
    untyped = {label for label in atoms if (label, "types") not in dsl_output}
    assert not {label for label in untyped if label.startswith("gmma")}, untyped


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
