"""Differential test: workbench.atoms against CuTe C++ itself, every layout compared as a function.

tests/cute/*.cpp are built host-only with g++ against the CUTLASS headers of the nvidia-cutlass
wheel and the CCCL of nvidia-cuda-cccl (tests/cxx_harness.py caches the executables under
build/cxx_harness/).  They print CuTe's own layouts: every MMA atom family (all GMMA N), every
copy atom over several value types, the GMMA shared-memory atoms, 20 tiled MMAs (atom layouts,
integer and layout permutations, one thread's partitions) and 22 tiled copies (make_tiled_copy,
make_tiled_copy_A/B/C with LDSM/STSM/UniversalCopy/cp.async, partitions).  Each is compared with
ours at every index (sizes of the thread and value modes, then every value), not as strings:
CuTe's own rank conventions may differ.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import shutil

import numpy as np
import pytest
from cxx_harness import build_harnesses, missing_toolchain, run_harness

import workbench as wb
from workbench.atoms import (
    copy_atom,
    make_tiled_copy,
    make_tiled_copy_A,
    make_tiled_copy_B,
    make_tiled_copy_C,
    make_tiled_mma,
    mma_atom,
    mma_atom_names,
)
from workbench.atoms.smem import gmma_smem_atom

HERE = pathlib.Path(__file__).parent
SOURCES = [HERE / "cute" / n for n in ("atoms_harness.cpp", "atoms_tiled_mma.cpp", "atoms_tiled_copy.cpp")]
HEADERS = sorted((HERE / "cute").glob("*.hpp"))
CUDA_INCLUDE = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"


def _cutlass_include():
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or not spec.submodule_search_locations:
        return None
    p = pathlib.Path(spec.submodule_search_locations[0]) / "source" / "include"
    return p if (p / "cute" / "atom" / "mma_atom.hpp").is_file() else None


def _cccl_include():
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for cand in sorted(pathlib.Path(root).glob("cu*/include/cccl")):
            if (cand / "cuda" / "std" / "cstdint").is_file():
                return cand
    return None


@pytest.fixture(scope="module")
def cute_output():
    cutlass, cccl = _cutlass_include(), _cccl_include()
    missing = missing_toolchain([
        ("g++", shutil.which("g++")), ("CUTLASS headers (pip install nvidia-cutlass)", cutlass),
        ("CCCL headers (pip install nvidia-cuda-cccl)", cccl),
        (f"CUDA headers in {CUDA_INCLUDE}", CUDA_INCLUDE / "vector_types.h"),
    ])
    if missing:
        pytest.skip("the CuTe C++ differential test needs " + ", ".join(missing))
    cute_dir = cutlass / "cute"
    hash_files = [*HEADERS, *cute_dir.glob("atom/*.hpp"), *cute_dir.glob("arch/*.hpp"), *cute_dir.glob("*.hpp")]
    exes, seconds = build_harnesses(SOURCES, [HERE / "cute", cutlass, CUDA_INCLUDE, cccl], hash_files)
    print(f"\nCuTe harness: compiled in {seconds:.1f} s" if seconds > 0.5 else "\nCuTe harness: cached")
    out = {}
    for exe in exes.values():
        for line in run_harness(exe).splitlines():
            label, _, value = line.rpartition("|")
            out[label] = value
    return out


def _parse(text):
    return wb.parse_layout(text.replace("_", ""))


def _modes(L):
    return [L[i].size for i in range(L.rank)] if type(L.shape) is tuple else [L.size]


def assert_same_function(ours, cute_text, what):
    """Same total size, same sizes of the top modes (thread, value, ...) and the same value at every index."""
    theirs = _parse(cute_text)
    ours_sizes, their_sizes = _modes(ours), _modes(theirs)
    # CuTe keeps trailing size-1 modes ours may drop, and vice versa
    strip = lambda xs: [x for x in xs if x != 1] or [1]  # noqa: E731
    assert ours.size == theirs.size and strip(ours_sizes) == strip(their_sizes), (
        f"{what}: shape differs: ours {ours} (modes {ours_sizes}) vs CuTe {theirs} (modes {their_sizes})")
    a, b = np.asarray(ours.offsets()), np.asarray(theirs.offsets())
    bad = np.nonzero(a != b)[0]
    assert bad.size == 0, (f"{what}: ours {ours} vs CuTe {theirs} differ at {bad.size} of {a.size} indices, "
                           f"first at {bad[0]}: {a[bad[0]]} vs {b[bad[0]]}")


TYPES = {"Uint8": wb.Uint8, "Float16": wb.Float16, "BFloat16": wb.BFloat16, "Float32": wb.Float32,
         "Float64": wb.Float64}


def test_every_mma_atom(cute_output):
    labels = sorted({k.split("|")[1] for k in cute_output if k.startswith("mma|")})
    assert len(labels) > 300, f"the harness printed only {len(labels)} MMA atoms"
    for name in labels:
        atom = mma_atom("UniversalFMA") if name.startswith("UniversalFMA") else mma_atom(name)
        for part, ours in (("thr_id", atom.thr_id), ("A", atom.tv_layout_A), ("B", atom.tv_layout_B),
                           ("C", atom.tv_layout_C)):
            assert_same_function(ours, cute_output[f"mma|{name}|{part}"], f"{name} {part}")
        assert atom.shape_mnk == _parse(cute_output[f"mma|{name}|mnk"]).shape, name
    # every non-GMMA atom of the catalog went through CuTe
    sync = {n for n in mma_atom_names(include_gmma=False) if n != "UniversalFMA"}
    printed_names = {p for p in labels if "_" in p}
    printed = set(labels)
    untested = {n for n in sync if n not in printed and re.sub(r"_SATURATE$", "", n) not in printed}
    # untested ones share their layouts with a printed sibling of the same shape and A width
    for n in untested:
        sib = [p for p in printed_names if p.split("_")[1] == n.split("_")[1] and p.split("_")[0] == n.split("_")[0]]
        assert sib, f"{n}: no atom of its family was compared with CuTe"


def test_every_copy_atom(cute_output):
    keys = sorted({tuple(k.split("|")[1:3]) for k in cute_output if k.startswith("copy|")})
    assert len(keys) >= 40
    for name, tname in keys:
        atom = copy_atom(name, TYPES[tname])
        for part, ours in (("thr_id", atom.thr_id), ("src", atom.layout_src_tv), ("dst", atom.layout_dst_tv),
                           ("ref", atom.layout_ref_tv), ("src_bits", atom.layout_src_tv_bits),
                           ("dst_bits", atom.layout_dst_tv_bits)):
            assert_same_function(ours, cute_output[f"copy|{name}|{tname}|{part}"], f"{name}<{tname}> {part}")


def test_gmma_smem_atoms(cute_output):
    keys = [k for k in cute_output if k.startswith("smem|")]
    assert len(keys) == 32
    for k in keys:
        _, kind, tname = k.split("|")[:3]
        ours = gmma_smem_atom(f"Layout_{kind}_Atom", TYPES[tname])
        inner_text = k.split("|")[3]
        values = [int(x) for x in cute_output[k].split(",")]
        inner = _parse(inner_text)
        assert ours.layout.shape == inner.shape, (k, ours)
        got = [int(x) for x in np.asarray(ours.offsets())]
        assert got == values, f"{kind}<{tname}>: ours {ours} differs from CuTe"


def _perm(*modes):
    return tuple(modes)


def tiled_mmas():
    L = wb.make_layout
    a80 = mma_atom("SM80_16x8x16_F32F16F16F32_TN")
    return {
        "t1": make_tiled_mma(a80, L((2, 2, 1)), (32, 32, 16)),
        "t2": make_tiled_mma(a80, L((2, 2, 1))),
        "t3": make_tiled_mma(a80, L((2, 4, 1)), (32, 64, 16)),
        "t4": make_tiled_mma(a80, L((2, 2, 1)), (32, L((8, 2, 2), stride=(1, 16, 8)), 16)),
        "t5": make_tiled_mma(a80, L((2, 2, 1), stride=(2, 1, 0))),
        "t6": make_tiled_mma(mma_atom("SM80_16x8x8_F16F16F16F16_TN"), L((4, 1, 1))),
        "t7": make_tiled_mma(mma_atom("SM80_16x8x8_F32BF16BF16F32_TN"), L((1, 4, 1)), (16, 64, 16)),
        "t8": make_tiled_mma(mma_atom("SM80_16x8x8_F32TF32TF32F32_TN"), L((2, 2, 1)), (32, 32, 8)),
        "t9": make_tiled_mma(mma_atom("SM80_16x8x32_S32S8S8S32_TN"), L((2, 2, 1))),
        "t10": make_tiled_mma(mma_atom("SM80_8x8x4_F64F64F64F64_TN"), L((2, 2, 1)), (16, 32, 4)),
        "t11": make_tiled_mma(mma_atom("SM70_8x8x4_F32F16F16F32_TN"), L((2, 2, 1))),
        "t12": make_tiled_mma(mma_atom("SM70_8x8x4_F16F16F16F16_NT"), L((4, 2, 1)), (32, 32, 4)),
        "t13": make_tiled_mma(mma_atom("SM75_16x8x8_F32F16F16F32_TN"), L((2, 1, 1))),
        "t14": make_tiled_mma(mma_atom("SM89_16x8x32_F32E4M3E4M3F32_TN"), L((2, 2, 1))),
        "t15": make_tiled_mma(mma_atom("SM90_64x128x16_F32F16F16_SS"), L((2, 1, 1))),
        "t16": make_tiled_mma(mma_atom("SM90_64x64x16_F16F16F16_RS")),
        "t17": make_tiled_mma(mma_atom("UniversalFMA"), L((16, 16, 1))),
        "t18": make_tiled_mma(a80, L((2, 2, 2))),
        "t19": make_tiled_mma(a80, L((1, 1, 1)), (32, 16, 16)),
        "t20": make_tiled_mma(a80, L((2, 2, 1)), (L((16, 2), stride=(2, 1)), 32, 16)),
    }


def tiled_copies(m):
    h = wb.Float16
    L = wb.make_layout
    ldsm4 = copy_atom("SM75_U32x4_LDSM_N", h)
    return {
        "c1": make_tiled_copy_A(ldsm4, m["t1"]),
        "c2": make_tiled_copy_B(ldsm4, m["t1"]),
        "c3": make_tiled_copy_B(copy_atom("SM75_U32x2_LDSM_N", h), m["t2"]),
        "c4": make_tiled_copy_A(copy_atom("SM75_U16x8_LDSM_T", h), m["t1"]),
        "c5": make_tiled_copy_C(copy_atom("SM90_U32x4_STSM_N", h), m["t1"]),
        "c6": make_tiled_copy_C(copy_atom("SM90_U32x2_STSM_N", h), m["t2"]),
        "c7": make_tiled_copy_A(copy_atom("SM75_U32x2_LDSM_N", h), m["t6"]),
        "c8": make_tiled_copy_A(copy_atom("UniversalCopy", h, num_bits=32), m["t1"]),
        "c9": make_tiled_copy_C(copy_atom("UniversalCopy", wb.Float32, num_bits=32), m["t1"]),
        "c10": make_tiled_copy(copy_atom("SM80_CP_ASYNC_CACHEALWAYS", h, num_bits=128), L((16, 8), stride=(8, 1)),
                               L((1, 8))),
        "c11": make_tiled_copy(copy_atom("UniversalCopy_U128", h), L((32, 4)), L((8, 1))),
        "c12": make_tiled_copy(copy_atom("UniversalCopy_U64", wb.Float32), L((8, 16), stride=(16, 1)), L((1, 2))),
        "c13": make_tiled_copy(copy_atom("UniversalCopy_U32", wb.Float32), L((32, 8)), L((4, 1))),
        "c14": make_tiled_copy_A(ldsm4, m["t4"]),
        "c15": make_tiled_copy_B(ldsm4, m["t4"]),
        "c16": make_tiled_copy_B(copy_atom("SM75_U32x4_LDSM_N", wb.BFloat16), m["t7"]),
        "c17": make_tiled_copy_C(copy_atom("SM90_U16x8_STSM_T", h), m["t1"]),
        "c18": make_tiled_copy_B(copy_atom("SM75_U16x4_LDSM_T", h), m["t1"]),
        "c19": make_tiled_copy_A(copy_atom("SM75_U32x4_LDSM_N", wb.Int8), m["t9"]),
        "c20": make_tiled_copy_A(copy_atom("SM75_U32x1_LDSM_N", h), m["t6"]),
        "c21": make_tiled_copy_A(ldsm4, m["t20"]),
        "c22": make_tiled_copy_A(ldsm4, m["t5"]),
    }


def test_tiled_mmas(cute_output):
    mmas = tiled_mmas()
    printed = {k.split("|")[1] for k in cute_output if k.startswith("tmma|")}
    assert printed == set(mmas), printed ^ set(mmas)
    for id_, m in mmas.items():
        assert_same_function(m.thr_layout_vmnk, cute_output[f"tmma|{id_}|vmnk"], f"{id_} {m} thr_layout_vmnk")
        assert_same_function(m.tv_layout_A_tiled, cute_output[f"tmma|{id_}|A"], f"{id_} {m} A")
        assert_same_function(m.tv_layout_B_tiled, cute_output[f"tmma|{id_}|B"], f"{id_} {m} B")
        assert_same_function(m.tv_layout_C_tiled, cute_output[f"tmma|{id_}|C"], f"{id_} {m} C")
        assert m.tile_shape_mnk == _parse(cute_output[f"tmma|{id_}|tile"]).shape
        M, N, K = (2 * s for s in m.tile_shape_mnk)
        thr = m.get_slice(m.size // 2 + 1)
        row = lambda a, b: wb.make_layout((a, b), stride=(b, 1))  # noqa: E731
        assert_same_function(thr.partition_C(row(M, N)), cute_output[f"tmma|{id_}|partition_C"], f"{id_} partition_C")
        assert_same_function(thr.partition_A(row(M, K)), cute_output[f"tmma|{id_}|partition_A"], f"{id_} partition_A")
        assert_same_function(thr.partition_B(row(N, K)), cute_output[f"tmma|{id_}|partition_B"], f"{id_} partition_B")


def test_tiled_copies(cute_output):
    copies = tiled_copies(tiled_mmas())
    printed = {k.split("|")[1] for k in cute_output if k.startswith("tcopy|")}
    assert printed == set(copies), printed ^ set(copies)
    for id_, c in copies.items():
        assert_same_function(c.layout_src_tv_tiled, cute_output[f"tcopy|{id_}|S"], f"{id_} {c} src")
        assert_same_function(c.layout_dst_tv_tiled, cute_output[f"tcopy|{id_}|D"], f"{id_} {c} dst")
        assert c.tiler_mn == _parse(cute_output[f"tcopy|{id_}|tiler"]).shape
        M, N = (2 * s for s in c.tiler_mn)
        thr = c.get_slice(3)
        smem = wb.make_layout((M, N), stride=(N, 1))
        assert_same_function(thr.partition_S(smem), cute_output[f"tcopy|{id_}|partition_S"], f"{id_} partition_S")
        assert_same_function(thr.partition_D(smem), cute_output[f"tcopy|{id_}|partition_D"], f"{id_} partition_D")


def test_retile_of_mma_fragments(cute_output):
    copies = tiled_copies(tiled_mmas())
    ids = sorted({k.split("|")[1] for k in cute_output if k.startswith("tretile|")})
    assert len(ids) == 8
    for id_ in ids:
        frag = _parse(cute_output[f"tretile|{id_}|frag"])  # CuTe's partition_fragment_A/B of thread 1
        ours = copies[id_].get_slice(1).retile_D(frag)
        assert_same_function(ours, cute_output[f"tretile|{id_}|retile"], f"{id_} retile_D({frag})")
