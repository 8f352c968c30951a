"""Differential test: the Blackwell host objects (workbench.atoms.sm100 / tmem / umma_desc) against CuTe C++ 4.2.

The harness is generated here from workbench's catalogs and built with g++ against the CUTLASS headers of the
nvidia-cutlass wheel (tests/cxx_harness.py caches the executables): every legal M/N of every modelled UMMA
family (ThrID, A/B/C layouts, Shape_MNK, the instruction descriptor's 32 bits) plus type, major, negate and
saturate variants, every SM100_TMEM_LOAD/STORE_* and SM100_UTCCP_* copy atom over 32/16/8-bit value types
(its Copy_Atom layouts and ValID), accumulator fragments (tmem_frg) and make_tmem_copy tiled copies over them,
and make_umma_desc words of generated shared-memory tiles.  Layouts are compared as functions at every index;
descriptors bit for bit.  Refusals are checked to carry CuTe's own static_assert text (found in the headers).
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
from workbench.atoms import (
    UMMA_BLOCK_SCALED_FAMILIES,
    UMMA_FAMILIES,
    UMMA_SMEM_ATOMS,
    copy_atom,
    make_tmem_copy,
    make_umma_desc,
    make_utccp_copy,
    mma_atom,
    tmem_copy_atom_names,
    umma_smem_atom,
)
from workbench.atoms.sm100 import _legal_bs, _legal_mn

HERE = pathlib.Path(__file__).parent
GEN_DIR = CACHE_ROOT / "gen_sm100"
GEN_UNITS = 2

CXX = {"Float16": "half_t", "BFloat16": "bfloat16_t", "TFloat32": "tfloat32_t", "Float32": "float", "Int8": "int8_t",
       "Uint8": "uint8_t", "Int32": "int32_t", "Float8E4M3FN": "float_e4m3_t", "Float8E5M2": "float_e5m2_t",
       "Float6E2M3FN": "cutlass::detail::float_e2m3_unpacksmem_t",
       "Float6E3M2FN": "cutlass::detail::float_e3m2_unpacksmem_t",
       "Float4E2M1FN": "cutlass::detail::float_e2m1_unpacksmem_t"}
T = {n: getattr(wb, n) for n in CXX}

# default (a, b, c) per kind, and the variants printed at one (M, N) per family
DEFAULT = {"F16BF16": ("Float16", "Float16", "Float32"), "TF32": ("TFloat32", "TFloat32", "Float32"),
           "S8": ("Int8", "Int8", "Int32"), "F8F6F4": ("Float8E4M3FN", "Float8E4M3FN", "Float32")}
VARIANT_TYPES = {
    "F16BF16": [("BFloat16", "BFloat16", "Float32"), ("Float16", "Float16", "Float16"), ("BFloat16", "Float16", "Float32")],
    "TF32": [],
    "S8": [("Uint8", "Int8", "Int32"), ("Int8", "Uint8", "Int32"), ("Uint8", "Uint8", "Int32")],
    "F8F6F4": [("Float8E5M2", "Float8E4M3FN", "Float16"), ("Float6E2M3FN", "Float6E3M2FN", "Float32"),
               ("Float4E2M1FN", "Float8E5M2", "Float32")],
}


def _kind(family):
    return family[len("SM100_MMA_"):].split("_")[0]


def umma_instances():
    """(family, a, b, c, m, n, a_major, b_major, a_neg, b_neg, c_sat) tuples CuTe compiles."""
    out = []
    for fam in UMMA_FAMILIES:
        kind, ts = _kind(fam), fam.endswith("_TS")
        a, b, c = DEFAULT[kind]
        legal = _legal_mn(fam)
        for m, n, bm in legal:
            if bm == "K" or kind == "F8F6F4":
                if (m, n, "MN") in legal and kind == "F8F6F4" and bm == "K" and (m, n, "MN") != (m, n, bm):
                    pass
                out.append((fam, a, b, c, m, n, "K", bm, False, False, False))
        m, n, _ = legal[len(legal) // 2]
        for ta, tb, tc in VARIANT_TYPES[kind]:
            out.append((fam, ta, tb, tc, m, n, "K", "K", False, False, False))
        for am, bm in ([("MN", "K"), ("K", "MN"), ("MN", "MN")] if not ts else [("K", "MN")]):
            if (m, n, bm) in legal:
                out.append((fam, a, b, c, m, n, am, bm, False, False, False))
        neg = kind != "S8"   # S8: CuTe's SS atoms take no negate, its TS atoms drop it (refused here)
        sat = ts or kind == "S8"
        if neg:
            out.append((fam, a, b, c, m, n, "K", "K", True, False, False))
            out.append((fam, a, b, c, m, n, "K", "K", False, True, False))
        if sat:
            out.append((fam, a, b, c, m, n, "K", "K", False, False, True))
    return sorted(set(out))


def cxx_umma_op(fam, a, b, c, m, n, am, bm, an, bn, sat):
    args = f"{CXX[a]}, {CXX[b]}, {CXX[c]}, {m}, {n}, UMMA::Major::{am}, UMMA::Major::{bm}"
    neg = f"UMMA::ScaleIn::{'Neg' if an else 'One'}, UMMA::ScaleIn::{'Neg' if bn else 'One'}"
    s = f"UMMA::Saturate::{'True' if sat else 'False'}"
    kind, ts = _kind(fam), fam.endswith("_TS")
    if ts:
        return f"{fam}<{args}, {neg}, {s}>"
    if kind == "S8":
        return f"{fam}<{args}, {s}>"
    return f"{fam}<{args}, {neg}>"


def cxx_umma_traits(inst):
    fam, a, b, c, m, n, am, bm, an, bn, sat = inst
    if _kind(fam) == "F8F6F4" and fam.endswith("_SS"):
        ic = lambda e, v: f"integral_constant<UMMA::{e}, UMMA::{e}::{v}>"  # noqa: E731
        return (f"MMA_Traits<{fam}, {CXX[a]}, {CXX[b]}, {CXX[c]}, C<{m}>, C<{n}>, {ic('Major', am)}, "
                f"{ic('Major', bm)}, {ic('ScaleIn', 'Neg' if an else 'One')}, {ic('ScaleIn', 'Neg' if bn else 'One')}>")
    return f"MMA_Traits<{cxx_umma_op(*inst)}>"


def _atom(inst):
    fam, a, b, c, m, n, am, bm, an, bn, sat = inst
    return mma_atom(fam, a_type=T[a], b_type=T[b], c_type=T[c], m=m, n=n, a_major=am, b_major=bm, a_neg=an,
                    b_neg=bn, c_sat=sat)


def _std(fam, a, b, c, m, n):
    return (fam, a, b, c, m, n, "K", "K", False, False, False)


# accumulator fragments: (id, atom instance, tile M, tile N)
ACCS = {
    "a1": (_std("SM100_MMA_F16BF16_SS", "Float16", "Float16", "Float32", 128, 256), 128, 256),
    "a2": (_std("SM100_MMA_F16BF16_SS", "Float16", "Float16", "Float32", 128, 256), 256, 256),
    "a3": (_std("SM100_MMA_F16BF16_SS", "Float16", "Float16", "Float32", 64, 128), 128, 256),
    "a4": (_std("SM100_MMA_F16BF16_SS", "Float16", "Float16", "Float16", 64, 64), 128, 128),
    "a5": (_std("SM100_MMA_F16BF16_TS", "Float16", "Float16", "Float32", 64, 128), 128, 128),
    "a6": (_std("SM100_MMA_F16BF16_TS", "Float16", "Float16", "Float32", 128, 128), 128, 256),
    "a7": (_std("SM100_MMA_F16BF16_2x1SM_SS", "Float16", "Float16", "Float32", 256, 256), 256, 256),
    "a8": (_std("SM100_MMA_F16BF16_2x1SM_SS", "Float16", "Float16", "Float32", 128, 128), 256, 256),
    "a9": (_std("SM100_MMA_TF32_SS", "TFloat32", "TFloat32", "Float32", 128, 64), 256, 128),
    "a10": (_std("SM100_MMA_S8_SS", "Int8", "Int8", "Int32", 128, 128), 128, 256),
    "a11": (_std("SM100_MMA_F16BF16_2x1SM_TS", "Float16", "Float16", "Float32", 128, 128), 128, 128),
    "a12": (_std("SM100_MMA_F16BF16_SS", "Float16", "Float16", "Float16", 128, 128), 128, 128),
    "a13": (_std("SM100_MMA_F16BF16_SS", "BFloat16", "BFloat16", "Float32", 64, 256), 64, 256),
}

# make_tmem_copy over the (M, N) slice of an accumulator: (id, copy op, accumulator id)
TMEM_COPIES = {
    "m1": ("SM100_TMEM_LOAD_32dp32b1x", "a1"), "m2": ("SM100_TMEM_LOAD_32dp32b8x", "a1"),
    "m3": ("SM100_TMEM_LOAD_32dp32b32x", "a1"), "m4": ("SM100_TMEM_STORE_32dp32b16x", "a1"),
    "m5": ("SM100_TMEM_LOAD_16dp256b1x", "a1"), "m6": ("SM100_TMEM_LOAD_16dp128b2x", "a1"),
    "m7": ("SM100_TMEM_LOAD_16dp64b4x", "a1"), "m8": ("SM100_TMEM_LOAD_16dp32b8x", "a1"),
    "m9": ("SM100_TMEM_LOAD_16dp256b2x", "a3"), "m10": ("SM100_TMEM_LOAD_16dp32b4x", "a3"),
    "m11": ("SM100_TMEM_LOAD_16dp64b8x", "a13"), "m12": ("SM100_TMEM_LOAD_32dp32b16x", "a7"),
    "m13": ("SM100_TMEM_LOAD_32dp32b4x", "a8"), "m14": ("SM100_TMEM_LOAD_32dp32b8x_16b", "a12"),
    "m15": ("SM100_TMEM_LOAD_32dp32b4x", "a10"), "m16": ("SM100_TMEM_LOAD_16dp128b4x", "a5"),
    "m17": ("SM100_TMEM_STORE_16dp256b1x", "a13"), "m18": ("SM100_TMEM_LOAD_32dp32b2x", "a9"),
}

COPY_TYPES = {"Float32": "float", "Float16": "half_t", "Uint8": "uint8_t"}
DESC_TYPES = {"Float16": "half_t", "Float32": "float", "Uint8": "uint8_t"}
# the host's cast_smem_ptr_to_uint returns 0 (no shared memory on a CPU): CuTe's start address field is 0 for
# every address, so the generated tiles sit at 0 and the start field's bits are checked by test_descriptor_fields
DESC_ADDRESSES = (0,)


def desc_cases():
    """(atom name, type, MN, K, address) for make_umma_desc, every UMMA smem atom at two tile sizes."""
    out = []
    for name in UMMA_SMEM_ATOMS:
        for tname in DESC_TYPES:
            atom = umma_smem_atom(name, T[tname] if tname in T else getattr(wb, tname))
            r0, r1 = atom.outer.shape
            # one atom along K for K-major tiles: CuTe refuses a tiled K mode ("Expected profile failure")
            for mult in ((16, 1), (32, 1)) if name.startswith("Layout_K_") else ((1, 4), (2, 8)):
                mn, k = r0 * mult[0], r1 * mult[1]
                if name.startswith("Layout_MN_"):
                    mn, k = max(r0, 128) * mult[0], r1 * mult[1] // (2 if r1 == 8 else 1)
                for addr in DESC_ADDRESSES:
                    out.append((name, tname, mn, k, addr))
    return out


def _desc_label(c):
    return "|".join(map(str, c))


# ---- block-scaled UMMA (SM100_MMA_MXF8F6F4_SS, _2x1SM_SS, SM100_MMA_MXF4_SS, _2x1SM_SS) ---------------------------
# CuTe's type per role: MXF4 operands are the packed float_e2m1_t (to_UMMAFormat: MXF4Format::E2M1 = 1), MXF8F6F4's
# the unpacked-in-smem types as for F8F6F4; wb.Float8E4M3FN as a scale factor stands for float_ue4m3_t.
SF_CXX = {"Float8E8M0FNU": "cutlass::float_ue8m0_t", "Float8E4M3FN": "cutlass::float_ue4m3_t"}
T["Float8E8M0FNU"] = wb.Float8E8M0FNU


def _bs_default(fam, vs):
    if fam.startswith("SM100_MMA_MXF4"):
        return ("Float4E2M1FN", "Float4E2M1FN", "Float32", "Float8E4M3FN" if vs == 16 else "Float8E8M0FNU")
    return ("Float8E4M3FN", "Float8E4M3FN", "Float32", "Float8E8M0FNU")


def bs_instances():
    """(family, a, b, c, sf, m, n, vs, a_major, b_major, a_neg, b_neg) tuples CuTe compiles: every legal (M, N, vs)
    of each block-scaled family, and at one shape per family and vs the operand types, scale types, majors and
    negates."""
    out = []
    for fam in UMMA_BLOCK_SCALED_FAMILIES:
        legal = _legal_bs(fam)
        for m, n, vs in legal:
            out.append((fam, *_bs_default(fam, vs), m, n, vs, "K", "K", False, False))
        for vs in sorted({v for _, _, v in legal}, key=str):
            shapes = [(m, n) for m, n, v in legal if v == vs]
            m, n = shapes[len(shapes) // 2]
            a, b, c, sf = _bs_default(fam, vs)
            if fam.startswith("SM100_MMA_MXF8F6F4"):
                for ta, tb in (("Float8E5M2", "Float8E4M3FN"), ("Float6E2M3FN", "Float6E3M2FN"),
                               ("Float4E2M1FN", "Float8E5M2"), ("Float4E2M1FN", "Float4E2M1FN"),
                               ("Float6E3M2FN", "Float4E2M1FN")):
                    out.append((fam, ta, tb, c, sf, m, n, vs, "K", "K", False, False))
            elif vs == 16:
                out.append((fam, a, b, c, "Float8E8M0FNU", m, n, vs, "K", "K", False, False))
            for am, bm in (("MN", "K"), ("K", "MN"), ("MN", "MN")):
                out.append((fam, a, b, c, sf, m, n, vs, am, bm, False, False))
            out.append((fam, a, b, c, sf, m, n, vs, "K", "K", True, False))
            out.append((fam, a, b, c, sf, m, n, vs, "K", "K", False, True))
    return sorted(set(out), key=str)


def _bs_label(inst):
    return "|".join(map(str, inst))


def cxx_bs_op(fam, a, b, c, sf, m, n, vs, am, bm, an, bn):
    ab = CXX if fam.startswith("SM100_MMA_MXF8F6F4") else {"Float4E2M1FN": "cutlass::float_e2m1_t"}
    v = f"{vs}, " if vs is not None else ""
    return (f"{fam}<{ab[a]}, {ab[b]}, {CXX[c]}, {SF_CXX[sf]}, {m}, {n}, {v}UMMA::Major::{am}, UMMA::Major::{bm}, "
            f"UMMA::ScaleIn::{'Neg' if an else 'One'}, UMMA::ScaleIn::{'Neg' if bn else 'One'}>")


def _bs_atom(inst):
    fam, a, b, c, sf, m, n, vs, am, bm, an, bn = inst
    return mma_atom(fam, a_type=T[a], b_type=T[b], c_type=T[c], sf_type=T[sf], m=m, n=n, vs=vs, a_major=am,
                    b_major=bm, a_neg=an, b_neg=bn)


def _bs_std(fam, m, n, vs=None):
    return (fam, *_bs_default(fam, vs), m, n, vs, "K", "K", False, False)


# scale factors over a tile: (id, atom instance, tile (M, N, K), UTCCP op) -> CUTLASS's smem SF layouts, CuTe's
# TMEM SF fragments of their shapes, and the UTCCP tiled copies of the compacted fragments
SF_CASES = {
    "s1": (_bs_std("SM100_MMA_MXF8F6F4_SS", 128, 256), (128, 256, 128), "SM100_UTCCP_4x32dp128bit_1cta"),
    "s2": (_bs_std("SM100_MMA_MXF8F6F4_SS", 128, 64), (128, 64, 256), "SM100_UTCCP_4x32dp128bit_1cta"),
    "s3": (_bs_std("SM100_MMA_MXF8F6F4_SS", 128, 192), (256, 192, 128), "SM100_UTCCP_4x32dp128bit_1cta"),
    "s4": (_bs_std("SM100_MMA_MXF8F6F4_2x1SM_SS", 256, 256), (256, 256, 128), "SM100_UTCCP_4x32dp128bit_2cta"),
    "s5": (_bs_std("SM100_MMA_MXF4_SS", 128, 128, 16), (128, 128, 256), "SM100_UTCCP_4x32dp128bit_1cta"),
    "s6": (_bs_std("SM100_MMA_MXF4_SS", 128, 256, 32), (128, 256, 256), "SM100_UTCCP_4x32dp128bit_1cta"),
    "s7": (_bs_std("SM100_MMA_MXF4_2x1SM_SS", 128, 192, 16), (256, 192, 256), "SM100_UTCCP_4x32dp128bit_2cta"),
    "s8": (_bs_std("SM100_MMA_MXF4_2x1SM_SS", 256, 256, 32), (256, 256, 512), "SM100_UTCCP_4x32dp128bit_2cta"),
    "s9": (_bs_std("SM100_MMA_MXF4_2x1SM_SS", 128, 64, 16), (256, 64, 128), "SM100_UTCCP_4x32dp128bit_2cta"),
    "s10": (_bs_std("SM100_MMA_MXF4_SS", 128, 8, 16), (128, 8, 64), "SM100_UTCCP_4x32dp128bit_1cta"),
}
# accumulators of block-scaled atoms (their FrgTypeC is the dense atoms' tmem_frg)
BS_ACCS = {
    "b1": (_bs_std("SM100_MMA_MXF8F6F4_SS", 128, 256), 128, 256),
    "b2": (_bs_std("SM100_MMA_MXF4_2x1SM_SS", 128, 192, 16), 256, 192),
    "b3": (_bs_std("SM100_MMA_MXF8F6F4_2x1SM_SS", 256, 128), 256, 256),
}
# runtime descriptors (a_sf_id / b_sf_id from the scale factors' TMEM addresses) of a few atoms
BS_RUNTIME = [_bs_std("SM100_MMA_MXF8F6F4_SS", 128, 256), _bs_std("SM100_MMA_MXF4_2x1SM_SS", 256, 256, 32)]


def bs_sources():
    body = [f'  umma_bs<MMA_Traits<{cxx_bs_op(*i)}>>("{_bs_label(i)}");' for i in bs_instances()]
    for id_, (inst, tile, utccp) in SF_CASES.items():
        body.append(f"  sf_frg<{cxx_bs_op(*inst)}, {utccp}, {tile[0]}, {tile[1]}, {tile[2]}>(\"{id_}\");")
    for id_, (inst, M, N) in BS_ACCS.items():
        body.append(f'  acc<{cxx_bs_op(*inst)}, {M}, {N}>("{id_}");')
    for inst in BS_RUNTIME:
        body.append(f'  bs_runtime<MMA_Traits<{cxx_bs_op(*inst)}>>("{_bs_label(inst)}");')
    return body


def generated_sources():
    lines = [f'  umma<{cxx_umma_traits(i)}>("{"|".join(map(str, i))}");' for i in umma_instances()]
    extra = []
    for id_, (inst, M, N) in ACCS.items():
        extra.append(f'  acc<{cxx_umma_op(*inst)}, {M}, {N}>("{id_}");')
    for id_, (op, acc_id) in TMEM_COPIES.items():
        inst, M, N = ACCS[acc_id]
        vt = CXX[inst[3]]
        extra.append(f'  tmem_copy<Copy_Atom<{op}, {vt}>, {cxx_umma_op(*inst)}, {M}, {N}>("{id_}");')
    for name in tmem_copy_atom_names():
        for tname, ct in COPY_TYPES.items():
            extra.append(f'  tcpy<{name}, {ct}>("{name}", "{tname}");')
    for c in desc_cases():
        name, tname, mn, k, addr = c
        major = "K" if name.startswith("Layout_K_") else "MN"
        extra.append(f'  udesc<UMMA::Major::{major}, {DESC_TYPES[tname]}, UMMA::{name}<{DESC_TYPES[tname]}>, {mn}, {k}>'
                     f'("{_desc_label(c)}", {addr});')
    extra.append("  descriptor_fields();")
    # GEN_UNITS units of about equal compile time (one g++ per core on a 2-core CI machine): the block-scaled
    # atoms, then the dense ones, then the rest, dealt out in turn
    items = bs_sources() + lines + extra
    units = [items[i::GEN_UNITS] for i in range(GEN_UNITS)]
    GEN_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
    paths = []
    for i, body in enumerate(units):
        text = ("// Generated by tests/test_atoms_sm100_cute_cpp.py from workbench's catalogs; do not edit.\n"
                '#include "sm100_bs_printers.hpp"\n\nint main() {\n' + "\n".join(body) + "\n  return 0;\n}\n")
        path = GEN_DIR / f"sm100_gen_{i}.cpp"
        if not path.is_file() or path.read_text() != text:
            fd, tmp = tempfile.mkstemp(dir=GEN_DIR, suffix=".cpp")
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def cute_output():
    cutlass, cccl = cute_toolchain("the SM100 CuTe C++ differential test")
    cute_dir = cutlass / "cute"
    hash_files = [HERE / "cute" / "sm100_printers.hpp", HERE / "cute" / "sm100_bs_printers.hpp",
                  *cute_dir.glob("atom/*.hpp"), *cute_dir.glob("arch/*.hpp"), *cute_dir.glob("*.hpp"),
                  cutlass / "cutlass" / "detail" / "sm100_blockscaled_layout.hpp"]
    exes, seconds = build_harnesses(generated_sources(), [HERE / "cute", cutlass, CUDA_INCLUDE, cccl], hash_files)
    print(f"\nSM100 CuTe harness: compiled in {seconds:.1f} s" if seconds > 0.5 else "\nSM100 CuTe harness: cached")
    out = {}
    for exe in exes.values():
        for line in run_harness(exe).splitlines():
            label, sep, value = line.rpartition("|")
            if not sep:   # CuTe's host-side notes (cast_smem_ptr_to_uint has no shared memory to cast on a CPU)
                continue
            assert label not in out, f"the harness printed {label!r} twice"
            out[label] = value
    return out


def _parse(text):
    return wb.parse_layout(text.replace("_", ""))


def _modes(L):
    return [L[i].size for i in range(L.rank)] if type(L.shape) is tuple else [L.size]


def same_function(ours, cute_text, what):
    theirs = _parse(cute_text)
    strip = lambda xs: [x for x in xs if x != 1] or [1]  # noqa: E731
    assert ours.size == theirs.size and strip(_modes(ours)) == strip(_modes(theirs)), (
        f"{what}: shape differs: ours {ours} vs CuTe {theirs}")
    a, b = np.asarray(ours.offsets()), np.asarray(theirs.offsets())
    bad = np.nonzero(a != b)[0]
    assert bad.size == 0, f"{what}: ours {ours} vs CuTe {theirs} differ at {bad.size} of {a.size} indices"


def test_every_umma_atom(cute_output):
    insts = umma_instances()
    assert len(insts) > 600
    printed = {k.split("|", 1)[1].rsplit("|", 1)[0] for k in cute_output if k.startswith("umma|")}
    assert printed == {"|".join(map(str, i)) for i in insts}
    seen = set()
    for inst in insts:
        atom = _atom(inst)
        label = "umma|" + "|".join(map(str, inst))
        for part, ours in (("thr_id", atom.thr_id), ("A", atom.tv_layout_A), ("B", atom.tv_layout_B),
                           ("C", atom.tv_layout_C)):
            key = (str(ours), cute_output[f"{label}|{part}"])
            if key not in seen:
                same_function(ours, key[1], f"{inst} {part}")
                seen.add(key)
        assert atom.shape_mnk == _parse(cute_output[f"{label}|mnk"]).shape, inst
        assert atom.instr_desc.encode() == int(cute_output[f"{label}|idesc"], 16), (
            inst, atom.instr_desc, hex(int(cute_output[f"{label}|idesc"], 16)))


def test_accumulator_fragments(cute_output):
    for id_, (inst, M, N) in ACCS.items():
        atom = _atom(inst)
        frg = atom.make_fragment_C(atom.partition_shape_C((M, N)))
        same_function(frg.layout, cute_output[f"acc|{id_}"], f"{id_} {inst} tCtAcc of ({M},{N})")


def test_tmem_copy_atoms(cute_output):
    names = tmem_copy_atom_names()
    assert len(names) == 148 + 12
    for name in names:
        for tname in COPY_TYPES:
            atom = copy_atom(name, getattr(wb, tname))
            label = f"tcopy|{name}|{tname}"
            for part, ours in (("thr_id", atom.thr_id), ("src", atom.layout_src_tv), ("dst", atom.layout_dst_tv),
                               ("ref", atom.layout_ref_tv), ("val_id", atom.val_id_bits)):
                same_function(ours, cute_output[f"{label}|{part}"], f"{name}<{tname}> {part}")


def test_make_tmem_copy(cute_output):
    for id_, (op, acc_id) in TMEM_COPIES.items():
        inst, M, N = ACCS[acc_id]
        atom = _atom(inst)
        frg = atom.make_fragment_C(atom.partition_shape_C((M, N)))
        tc = make_tmem_copy(copy_atom(op, T[inst[3]]), frg[(None, None), 0, 0])
        same_function(tc.layout_src_tv_tiled, cute_output[f"tmcp|{id_}|S"], f"{id_} {op} S")
        same_function(tc.layout_dst_tv_tiled, cute_output[f"tmcp|{id_}|D"], f"{id_} {op} D")
        for i in range(2):
            same_function(tc.tiler_mn[i], cute_output[f"tmcp|{id_}|tiler{i}"], f"{id_} {op} tiler {i}")


def test_umma_smem_descriptors(cute_output):
    cases = desc_cases()
    assert len(cases) == len(UMMA_SMEM_ATOMS) * len(DESC_TYPES) * 2 * len(DESC_ADDRESSES)
    for c in cases:
        name, tname, mn, k, addr = c
        t = getattr(wb, tname)
        layout = wb.tile_to_shape(umma_smem_atom(name, t), (mn, k))
        d = make_umma_desc(layout, t, "K" if name.startswith("Layout_K_") else "MN", addr)
        want = int(cute_output[f"udesc|{_desc_label(c)}"], 16)
        assert d.encode() == want, (c, d, wb.UmmaSmemDescriptor.decode(want))


def test_refusals_carry_cutes_own_text():
    """Each refusal names CuTe's reason: the quoted part is a static_assert message found in the headers."""
    cutlass = cutlass_include()
    if cutlass is None:
        pytest.skip("needs the CUTLASS headers (pip install nvidia-cutlass)")
    text = " ".join((cutlass / "cute" / p).read_text() for p in (
        "arch/mma_sm100_umma.hpp", "atom/mma_traits_sm100.hpp", "atom/copy_traits_sm100.hpp", "atom/copy_atom.hpp"))
    text = " ".join(text.split())
    h, f = wb.Float16, wb.Float32
    cases = [
        (dict(name="SM100_MMA_F16BF16_SS", m=96, n=128), "SM100_MMA_F16BF16 M-mode size should be 64 or 128 for 1 CTA cluster MMA."),
        (dict(name="SM100_MMA_F16BF16_SS", m=128, n=12), "SM100_MMA_F16BF16 N-mode size should be a multiple of 8 between 8 and 256."),
        (dict(name="SM100_MMA_F16BF16_TS", m=128, n=128, a_major="MN"), "SM100_MMA_F16BF16 A from TMEM can't be transposed"),
        (dict(name="SM100_MMA_F16BF16_2x1SM_SS", m=64, n=128), "SM100_MMA_F16BF16_2x1SM_SS M-mode size should be 128 or 256 for 2 CTA cluster MMA."),
        (dict(name="SM100_MMA_F16BF16_2x1SM_TS", m=256, n=48), "SM100_MMA_F16BF16_2x1SM_TS N-mode size should be a multiple of 32 between 32 and 256."),
        (dict(name="SM100_MMA_S8_SS", m=128, n=24, a_type=wb.Int8, b_type=wb.Int8, c_type=wb.Int32), "SM100_MMA_S8_SS N-mode size should be 8 or a multiple of 16 between 16 and 256."),
    ]
    for kw, msg in cases:
        assert msg in text, msg
        kw = {"a_type": h, "b_type": h, "c_type": f, **kw}
        with pytest.raises(ValueError) as e:
            mma_atom(kw.pop("name"), **kw)
        assert msg in " ".join(str(e.value).split()), (kw, str(e.value))
    atom = mma_atom("SM100_MMA_F16BF16_SS", a_type=h, b_type=h, c_type=f, m=128, n=256)
    for msg, fn in (("Requesting more TMEM than is available.", lambda: atom.make_fragment_C(atom.partition_shape_C((256, 512)))),):
        assert msg in text
        with pytest.raises(ValueError, match=msg):
            fn()
    a64 = mma_atom("SM100_MMA_F16BF16_SS", a_type=h, b_type=h, c_type=f, m=64, n=128)
    acc = a64.make_fragment_C(a64.partition_shape_C((64, 128)))
    msg = "The memory pointed to by AtomTVLayout does not exist in the DataLayout."
    assert msg in text
    with pytest.raises(ValueError, match=msg):
        make_tmem_copy(copy_atom("SM100_TMEM_LOAD_32dp32b1x", f), acc[(None, None), 0, 0])


def test_descriptor_fields(cute_output):
    """Every field of UMMA::SmemDescriptor, InstrDescriptor and InstrDescriptorBlockScaled set alone to generated
    values: our word equals the raw union CuTe's bit-fields make."""
    classes = {"SmemDescriptor": wb.UmmaSmemDescriptor, "InstrDescriptor": wb.UmmaInstrDescriptor,
               "InstrDescriptorBlockScaled": wb.atoms.UmmaInstrDescriptorBlockScaled}
    keys = [k for k in cute_output if k.startswith("field|")]
    fields = {(k.split("|")[1], k.split("|")[2]) for k in keys}
    for cname, cls in classes.items():
        assert {f for c, f in fields if c == cname} == {f for f, _, _ in cls._FIELDS}, cname
    assert len(keys) == 76
    for k in keys:
        _, cname, field, value = k.split("|")
        ours = classes[cname](**{field: int(value)})
        assert ours.encode() == int(cute_output[k], 16), (k, ours, cute_output[k])
        assert classes[cname].decode(int(cute_output[k], 16)) == ours


def test_every_block_scaled_atom(cute_output):
    """Every legal (M, N, vs) of the four block-scaled families and the type / scale / major / negate variants:
    ThrID, A/B/C as functions, Shape_MNK, SFVecSize, the block-scaled instruction descriptor's 32 bits, and
    MMA_ScaleFactor's shape and descriptor."""
    insts = bs_instances()
    assert len(insts) > 200
    printed = {k.split("|", 1)[1].rsplit("|", 1)[0] for k in cute_output if k.startswith("bs|")}
    assert printed == {_bs_label(i) for i in insts}
    seen = set()
    for inst in insts:
        atom = _bs_atom(inst)
        label = "bs|" + _bs_label(inst)
        for part, ours in (("thr_id", atom.thr_id), ("A", atom.tv_layout_A), ("B", atom.tv_layout_B),
                           ("C", atom.tv_layout_C)):
            key = (str(ours), cute_output[f"{label}|{part}"])
            if key not in seen:
                same_function(ours, key[1], f"{inst} {part}")
                seen.add(key)
        assert atom.shape_mnk == _parse(cute_output[f"{label}|mnk"]).shape, inst
        assert atom.sf_vec_size == int(cute_output[f"{label}|vs"]), inst
        want = int(cute_output[f"{label}|idesc"], 16)
        assert atom.instr_desc.encode() == want, (inst, atom.instr_desc, wb.atoms.UmmaInstrDescriptorBlockScaled.decode(want))
        sf = atom.mma_scale_factor
        assert sf.shape_mnk == _parse(cute_output[f"{label}|sf_mnk"]).shape, inst
        assert sf.instr_desc.encode() == int(cute_output[f"{label}|sf_idesc"], 16), inst


def test_block_scaled_runtime_descriptor(cute_output):
    """make_runtime_instr_desc_block_scaled: a_sf_id / b_sf_id from the top two bits of the scale factors' TMEM
    addresses, the descriptor in the upper 32 bits of the operand."""
    n = 0
    for inst in BS_RUNTIME:
        atom = _bs_atom(inst)
        prefix = f"bsrt|{_bs_label(inst)}|"
        for k, v in cute_output.items():
            if k.startswith(prefix):
                sfa, sfb = (int(x, 16) for x in k[len(prefix):].split("|"))
                assert atom.instr_desc.runtime(sfa, sfb) == int(v, 16), (inst, hex(sfa), hex(sfb))
                n += 1
    assert n == 16 * len(BS_RUNTIME)


def test_scale_factor_fragments_and_utccp(cute_output):
    """CUTLASS's shared-memory SF layouts (Sm1xxBlockScaledConfig::deduce_smem_layoutSFA/SFB), CuTe's TMEM SF
    fragments of their shapes (make_tensor<FrgTypeSFA/SFB>: tmem_sf_frg, 4x1 and 2x2 data paths), the fragments
    with zero strides filtered, and make_utccp_copy over those (get_layoutS_TV, get_layoutD_TV, the by-mode
    tiler), as functions at every index."""
    for id_, (inst, tile, utccp) in SF_CASES.items():
        atom = _bs_atom(inst)
        for w in "AB":
            smem = getattr(atom, f"smem_layout_SF{w}")(tile)
            same_function(smem, cute_output[f"sf|{id_}|s{w}"], f"{id_} smem SF{w}")
            assert str(smem) == cute_output[f"sf|{id_}|s{w}"].replace("_", ""), (id_, w, smem)
            frg = getattr(atom, f"make_fragment_SF{w}")(smem.shape)
            same_function(frg.layout, cute_output[f"sf|{id_}|t{w}"], f"{id_} tmem SF{w}")
            compact = frg.filter_zeros()
            same_function(compact.layout, cute_output[f"sf|{id_}|c{w}"], f"{id_} compact SF{w}")
            tc = make_utccp_copy(copy_atom(utccp, atom.sf_type), compact)
            same_function(tc.layout_src_tv_tiled, cute_output[f"sf|{id_}|u{w}_S"], f"{id_} {utccp} SF{w} S")
            same_function(tc.layout_dst_tv_tiled, cute_output[f"sf|{id_}|u{w}_D"], f"{id_} {utccp} SF{w} D")
            modes = [k for k in cute_output if k.startswith(f"sf|{id_}|u{w}_T|")]
            assert len(modes) == len(tc.tiler_mn) == compact.layout.rank
            for i, t in enumerate(tc.tiler_mn):
                same_function(t, cute_output[f"sf|{id_}|u{w}_T|{i}"], f"{id_} {utccp} SF{w} tiler {i}")


def test_block_scaled_accumulators(cute_output):
    for id_, (inst, M, N) in BS_ACCS.items():
        atom = _bs_atom(inst)
        frg = atom.make_fragment_C(atom.partition_shape_C((M, N)))
        same_function(frg.layout, cute_output[f"acc|{id_}"], f"{id_} {inst} tCtAcc of ({M},{N})")


def test_block_scaled_refusals_carry_cutes_own_text():
    """Each block-scaled refusal that is CuTe's names CuTe's static_assert text (found in the headers); the
    departures (ue4m3 scales for mxf8f6f4, a non-f32 accumulator, 2-SM vs=32 with ue4m3) say they depart."""
    cutlass = cutlass_include()
    if cutlass is None:
        pytest.skip("needs the CUTLASS headers (pip install nvidia-cutlass)")
    text = " ".join((cutlass / "cute" / p).read_text() for p in (
        "arch/mma_sm100_umma.hpp", "atom/mma_traits_sm100.hpp", "arch/mma_sm100_desc.hpp"))
    text = " ".join(text.split())
    e4, e2, f, ue8, ue4 = wb.Float8E4M3FN, wb.Float4E2M1FN, wb.Float32, wb.Float8E8M0FNU, wb.Float8E4M3FN
    mx8 = dict(a_type=e4, b_type=e4, c_type=f, sf_type=ue8, m=128, n=128)
    mx4 = dict(a_type=e2, b_type=e2, c_type=f, sf_type=ue8, m=128, n=128, vs=32)
    cases = [
        ("SM100_MMA_MXF8F6F4_SS", dict(mx8, m=64), "SM100_MMA_MXF8F6F4_SS M-mode size should be 64 or 128 for 1 CTA cluster MMA."),
        ("SM100_MMA_MXF8F6F4_SS", dict(mx8, n=260), "SM100_MMA_MXF8F6F4_SS N-mode size should be a multiple of 8 between 8 and 256."),
        ("SM100_MMA_MXF8F6F4_2x1SM_SS", dict(mx8, m=128), "SM100_MMA_MXF8F6F4_2x1SM_SS M-mode size should be 128 or 256 for 2 CTA cluster MMA."),
        ("SM100_MMA_MXF8F6F4_2x1SM_SS", dict(mx8, m=256, n=24), "SM100_MMA_MXF8F6F4_2x1SM_SS N-mode size should be a multiple of 16 between 16 and 256."),
        ("SM100_MMA_MXF8F6F4_SS", dict(mx8, a_type=wb.Float16), "SM100_MMA_MXF8F6F4_SS supports types with leq 8bit types"),
        ("SM100_MMA_MXF4_SS", dict(mx4, m=256), "SM100_MMA_MXF4_SS M-mode size should be 128 for 1 CTA cluster MMA."),
        ("SM100_MMA_MXF4_SS", dict(mx4, vs=64), "SM100_MMA_MXF4_SS Vector size can only be 16 or 32."),
        ("SM100_MMA_MXF4_2x1SM_SS", dict(mx4, m=64), "SM100_MMA_MXF4_2x1SM_SS M-mode size should be 128 or 256 for 2 CTA cluster MMA."),
        ("SM100_MMA_MXF4_2x1SM_SS", dict(mx4, n=8), "SM100_MMA_MXF4_2x1SM_SS N-mode size should be a multiple of 16 between 16 and 256."),
        ("SM100_MMA_MXF4_2x1SM_SS", dict(mx4, vs=8), "SM100_MMA_MXF4_2x1SM_SS Vector size can only be 16 or 32."),
        ("SM100_MMA_MXF4_SS", dict(mx4, a_type=e4), "SM100_MMA_MXF4_SS supports 4bit types"),
        ("SM100_MMA_MXF4_SS", dict(mx4, sf_type=ue4),
         "2x mode (VectorSize=32) only supports a_type and b_type=float_e2m1_t or cutlass::type_erased_dynamic_float4_t and sf_type=ue8m0_t"),
    ]
    for name, kw, msg in cases:
        assert msg in text, msg
        with pytest.raises(ValueError) as e:
            mma_atom(name, **kw)
        assert msg in " ".join(str(e.value).split()), (name, kw, str(e.value))
    departures = [
        ("SM100_MMA_MXF8F6F4_SS", dict(mx8, sf_type=ue4), "ue8m0 scale factors only"),
        ("SM100_MMA_MXF8F6F4_SS", dict(mx8, c_type=wb.Float16), "f32 only"),
        ("SM100_MMA_MXF4_2x1SM_SS", dict(mx4, sf_type=ue4), "2x mode (VectorSize=32)"),
    ]
    for name, kw, msg in departures:
        with pytest.raises(ValueError, match=r"(?s)" + re.escape(msg) + ".*a departure from CuTe"):
            mma_atom(name, **kw)
    assert "Unknown type for ScaleFormat" in text
    with pytest.raises(TypeError, match="Unknown type for ScaleFormat"):
        mma_atom("SM100_MMA_MXF8F6F4_SS", **dict(mx8, sf_type=wb.Float16))
    for name in ("SM100_MMA_MXF4NVF4_SS", "SM100_MMA_MXF4NVF4_2x1SM_SS"):
        assert f"struct {name}_SPARSE" in text and f"struct {name}\n" not in text and f"struct {name} " not in text
        with pytest.raises(ValueError, match="CuTe 4.2 has no dense"):
            mma_atom(name, **dict(mx4, vs=16))
