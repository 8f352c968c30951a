"""Differential test: workbench.atoms against CuTe C++ itself, every layout compared as a function.

The harness is host-only C++ built with g++ against the CUTLASS headers of the nvidia-cutlass wheel
and the CCCL of nvidia-cuda-cccl (tests/cxx_harness.py caches the executables under
build/cxx_harness/).  Its atom part is generated here from workbench's own catalogs: every name of
``mma_atom_names()`` (and the MN-major instantiations of every 16-bit GMMA), every copy atom over
every value type it accepts, every GMMA shared-memory atom; a name CuTe does not define fails to
compile.  The tiled part (tests/cute/atoms_tiled_*.cpp) prints 20 tiled MMAs and 22 tiled copies
with one thread's partitions and 8 retiles.  Each layout is compared with ours at every index
(sizes of the thread and value modes, then every value), not as strings: CuTe's own rank
conventions may differ.
"""

from __future__ import annotations

import os
import pathlib
import re
import tempfile

import numpy as np
import pytest
from cxx_harness import CACHE_ROOT, CUDA_INCLUDE, build_harnesses, cute_toolchain, cutlass_include, run_harness

import workbench as wb
from workbench._element_types import ALL_SCALAR_TYPES
from workbench.atoms import (
    copy_atom,
    copy_atom_names,
    make_tiled_copy,
    make_tiled_copy_A,
    make_tiled_copy_B,
    make_tiled_copy_C,
    make_tiled_mma,
    mma_atom,
    mma_atom_names,
)
from workbench.atoms.smem import GMMA_SMEM_ATOMS, gmma_smem_atom

HERE = pathlib.Path(__file__).parent
TILED_SOURCES = [HERE / "cute" / n for n in ("atoms_tiled_mma.cpp", "atoms_tiled_copy.cpp")]
HEADERS = sorted((HERE / "cute").glob("*.hpp"))


# ---- the generated atom harness ----------------------------------------------------------------

# translation units the generated atom lines are split over (build_harnesses compiles them in
# parallel and caches each): ~10 s of g++ each on a CI core, beside the ~80 s of each tiled unit
GEN_UNITS = 3
GEN_DIR = CACHE_ROOT / "gen"

# value types the copy atoms are printed over: ours -> CuTe C++ (every width an element type has but 6,
# which no copy atom takes; test_value_types_the_harness_skips checks that)
CXX_VALUE_TYPES = {
    wb.Float4E2M1FN: "float_e2m1_t", wb.Uint8: "uint8_t", wb.Int8: "int8_t", wb.Float8E4M3FN: "float_e4m3_t",
    wb.Float16: "half_t", wb.BFloat16: "bfloat16_t", wb.Float32: "float", wb.Int32: "int32_t",
    wb.Float64: "double", wb.Complex128: "complex<double>",
}
SMEM_VALUE_TYPES = {wb.Uint8: "uint8_t", wb.Float16: "half_t", wb.Float32: "float", wb.Float64: "double"}
TYPES = {t.name: t for t in CXX_VALUE_TYPES}
CODES = {"Float16": "F16", "Float32": "F32", "Float64": "F64"}  # UniversalFMA's types in CuTe's letters


def mma_instances():
    """(name, major_a, major_b) for every catalog atom (K-major), and the MN-major operands the 16-bit
    GMMA atoms take: SS with MN-major A and/or B, RS with an MN-major B."""
    out = [(n, "K", "K") for n in mma_atom_names()]
    for n in mma_atom_names():
        if n.startswith("SM90_") and "_TN" not in n:
            majors = [("MN", "MN"), ("MN", "K"), ("K", "MN")] if n.endswith("_SS") else [("K", "MN")]
            out += [(n, a, b) for a, b in majors]
    return out


def cxx_mma(name, major_a, major_b):
    """CuTe C++'s spelling of an MMA op: the catalog name, with GMMA's template arguments."""
    if name == "UniversalFMA":
        return "UniversalFMA<float, float, float, float>"
    if not name.startswith("SM90_"):
        return name
    if "_TN" not in name:  # 16-bit GMMA: <tnspA, tnspB>
        return f"{name}<GMMA::Major::{major_a}, GMMA::Major::{major_b}>"
    # tf32/fp8 GMMA are templates over their input scales (defaults); int8 GMMA are plain structs
    return name if mma_atom(name).a_type.is_integer else f"{name}<>"


def cxx_copy(name):
    m = re.fullmatch(r"(UniversalCopy|SM80_CP_ASYNC_CACHEALWAYS|SM80_CP_ASYNC_CACHEGLOBAL)_U(\d+)", name)
    if m:
        return f"{m.group(1)}<uint{m.group(2)}_t>"
    return name


def _copy_atoms_with_bits():
    """copy_atom_names() but the num_bits= spellings (UniversalCopy ...) of the _U<bits> atoms it also lists."""
    return [n for n in copy_atom_names() if not re.fullmatch(r"UniversalCopy|SM80_CP_ASYNC_CACHE(ALWAYS|GLOBAL)", n)]


def copy_instances():
    """(catalog name, value type) for every copy atom and every value type of CXX_VALUE_TYPES it accepts."""
    out = []
    for name in _copy_atoms_with_bits():
        for t in CXX_VALUE_TYPES:
            try:
                copy_atom(name, t)
            except ValueError:
                continue
            out.append((name, t))
    return out


def generated_sources():
    """Write the atom harness units (only where their text changed) and return their paths."""
    # same N in the same unit: their atoms share layout types, which g++ then instantiates once
    mmas = sorted(mma_instances(), key=lambda x: (mma_atom(x[0]).shape_mnk[1], x))
    lines = [f'  mma<{cxx_mma(*x)}>("{"|".join(x)}");' for x in mmas]
    extra = [f'  cpy<{cxx_copy(n)}, {CXX_VALUE_TYPES[t]}>("{n}", "{t.name}");' for n, t in copy_instances()]
    extra += [f'  smem<{ct}, GMMA::{a}<{ct}>>("{a[len("Layout_"):-len("_Atom")]}", "{t.name}");'
              for a in GMMA_SMEM_ATOMS for t, ct in SMEM_VALUE_TYPES.items()]
    per = -(-len(lines) // GEN_UNITS)
    units = [lines[i * per:(i + 1) * per] for i in range(GEN_UNITS)]
    units[-1] += extra
    GEN_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
    paths = []
    for i, body in enumerate(units):
        text = ("// Generated by tests/test_atoms_cute_cpp.py from workbench's atom catalogs; do not edit.\n"
                '#include "atoms_printers.hpp"\n\nint main() {\n' + "\n".join(body) + "\n  return 0;\n}\n")
        path = GEN_DIR / f"atoms_gen_{i}.cpp"
        if not path.is_file() or path.read_text() != text:
            fd, tmp = tempfile.mkstemp(dir=GEN_DIR, suffix=".cpp")  # atomic: parallel sessions never read half a file
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def cute_output():
    cutlass, cccl = cute_toolchain("the CuTe C++ differential test")
    cute_dir = cutlass / "cute"
    hash_files = [*HEADERS, *cute_dir.glob("atom/*.hpp"), *cute_dir.glob("arch/*.hpp"), *cute_dir.glob("*.hpp")]
    sources = [*TILED_SOURCES, *generated_sources()]  # the slow tiled units first: they start at once
    exes, seconds = build_harnesses(sources, [HERE / "cute", cutlass, CUDA_INCLUDE, cccl], hash_files)
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


_SAME = set()  # (our layout, CuTe's text) pairs already compared: atoms share layouts, compare each pair once


def assert_same_function(ours, cute_text, what):
    """Same total size, same sizes of the top modes (thread, value, ...) and the same value at every index."""
    key = (type(ours), str(ours), cute_text)
    if key in _SAME:
        return
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
    _SAME.add(key)


def _printed(cute_output, kind, fields):
    return {tuple(k.split("|")[1:1 + fields]) for k in cute_output if k.startswith(kind + "|")}


def test_every_mma_atom(cute_output):
    printed = _printed(cute_output, "mma", 3)
    # exactly the catalog, every name, K-major, and every MN-major operand the 16-bit GMMA atoms take
    assert {n for n, _, _ in printed} == set(mma_atom_names()), (
        f"printed by CuTe but not in the catalog: {sorted({n for n, _, _ in printed} - set(mma_atom_names()))[:8]}; "
        f"in the catalog but not printed: {sorted(set(mma_atom_names()) - {n for n, _, _ in printed})[:8]}")
    assert printed == set(mma_instances())
    assert len(mma_atom_names()) == 1108 and len(printed) == 1108 + 384
    for name, ma, mb in sorted(printed):
        atom = mma_atom(name, major_a=ma, major_b=mb)
        assert (atom.major_a, atom.major_b) == (ma, mb)
        label = f"mma|{name}|{ma}|{mb}"
        for part, ours in (("thr_id", atom.thr_id), ("A", atom.tv_layout_A), ("B", atom.tv_layout_B),
                           ("C", atom.tv_layout_C)):
            assert_same_function(ours, cute_output[f"{label}|{part}"], f"{name}<{ma},{mb}> {part}")
        assert atom.shape_mnk == _parse(cute_output[f"{label}|mnk"]).shape, name
        # the traits' (D, A, B, C) value types, in CuTe's letters: signedness and TF32 included
        codes = atom.type_codes or tuple(CODES[t.name] for t in (atom.d_type, atom.a_type, atom.b_type, atom.c_type))
        assert cute_output[f"{label}|types"] == ",".join(codes), f"{name}: ours {codes}"


# CuTe MMA atoms the catalog leaves out, and why; any other CuTe name missing from the catalog fails
NOT_IN_CATALOG = {
    r"_S32[SU]4[SU]4S32_": "4-bit integer MMAs (workbench has no 4-bit integer element type)",
    r"_S32U1U1S32_": "1-bit popc MMAs (no 1-bit element type)",
    r"C64": "complex MMAs (no complex atoms yet)",
    r"^SM90_16x8x\d+_F64": "SM90 DMMA, F64 mma.sync (not in the issue's list yet)",
}


def test_catalog_has_every_cute_mma_atom():
    cutlass = cutlass_include()
    if cutlass is None:
        pytest.skip("needs the CUTLASS headers (pip install nvidia-cutlass)")
    cute = cutlass / "cute"
    names = set()
    for f in ("mma_sm70", "mma_sm75", "mma_sm80", "mma_sm89"):
        names |= set(re.findall(r"^struct (SM\d\d_\w+)", (cute / "arch" / f"{f}.hpp").read_text(), re.M))
    for f in ("mma_traits_sm90", "mma_traits_sm90_gmma", "mma_traits_sm90_gmma_ext"):
        names |= set(re.findall(r"^using (SM90_\w+) =", (cute / "atom" / f"{f}.hpp").read_text(), re.M))
    left_out = {n for n in names if any(re.search(p, n) for p in NOT_IN_CATALOG)}
    catalog = set(mma_atom_names()) - {"UniversalFMA"}
    assert len(names) > 1100 and len(left_out) < 100
    missing, extra = sorted(names - left_out - catalog), sorted(catalog - names)
    assert not missing and not extra, f"CuTe atoms missing from the catalog: {missing[:8]}; catalog atoms CuTe lacks: {extra[:8]}"


def test_every_copy_atom(cute_output):
    printed = _printed(cute_output, "copy", 2)
    assert printed == {(n, t.name) for n, t in copy_instances()}
    # every name copy_atom takes was printed over at least one value type (num_bits= names through _U<bits>)
    for name in copy_atom_names():
        assert any(n == name or n.startswith(name + "_U") for n, _ in printed), f"{name}: not printed by CuTe"
    assert len(printed) == 158
    for name, tname in sorted(printed):
        atom = copy_atom(name, TYPES[tname])
        for part, ours in (("thr_id", atom.thr_id), ("src", atom.layout_src_tv), ("dst", atom.layout_dst_tv),
                           ("ref", atom.layout_ref_tv), ("src_bits", atom.layout_src_tv_bits),
                           ("dst_bits", atom.layout_dst_tv_bits)):
            assert_same_function(ours, cute_output[f"copy|{name}|{tname}|{part}"], f"{name}<{tname}> {part}")


def test_value_types_the_harness_skips():
    """The copy harness prints every width an element type has but 6: no copy atom takes a 6-bit value."""
    widths = {t.bits for t in ALL_SCALAR_TYPES}
    assert widths - {t.bits for t in CXX_VALUE_TYPES} == {6}
    for name in _copy_atoms_with_bits():
        for t in (wb.Float6E2M3FN, wb.Float6E3M2FN):
            with pytest.raises(ValueError, match="6-bit value does not fit"):
                copy_atom(name, t)


def test_gmma_smem_atoms(cute_output):
    keys = [k for k in cute_output if k.startswith("smem|")]
    assert len(keys) == len(GMMA_SMEM_ATOMS) * len(SMEM_VALUE_TYPES) == 32
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
