"""Differential test of the CuTe interop against CuTe C++ itself (g++ over the CUTLASS headers).

Stage 1: a generated harness prints, with CuTe's own ``print()``, 380+ objects: random static and dynamic
layouts, swizzled layouts, the GMMA shared-memory atoms over four element types and tiled to shapes
(``tile_to_shape``), identity layouts and tensors,
MMA and copy atoms, 20 tiled MMAs and 22 tiled copies (the ones tests/test_atoms_cute_cpp.py checks).
Each printed text is parsed (``wb.parse_cute``) and must equal the workbench's own construction of the same
object as a function, and print back (``wb.format_cute(x, "cpp")``) to the very text CuTe printed: the same
hierarchy.  Stage 2: ``wb.to_cute_cpp`` of every parsed object is compiled into a second harness whose
``print()`` must give the same text again.  Both harnesses are cached under build/cxx_harness/ by content.
"""

from __future__ import annotations

import os
import random
import tempfile

import numpy as np
import pytest
from cxx_harness import CACHE_ROOT, CUDA_INCLUDE, build_harnesses, cute_toolchain, run_harness
from test_atoms_cute_cpp import HERE, tiled_copies, tiled_mmas

import workbench as wb
from workbench.atoms import copy_atom, mma_atom

GEN_DIR = CACHE_ROOT / "gen"
CXX_T = {wb.Uint8: "uint8_t", wb.Float16: "half_t", wb.Float32: "float", wb.Float64: "double"}
HEAD = '#include "atoms_tiled_mmas.hpp"\n#include <cute/atom/copy_traits_sm90.hpp>\n\n'


# ---- what stage 1 prints, and the workbench's own construction of each ---------------------------------

def _shape(rng, depth=0):
    r = rng.randint(1, 3)
    out = []
    for _ in range(r):
        if depth < 1 and rng.random() < 0.3:
            out.append(_shape(rng, depth + 1))
        else:
            out.append(rng.randint(1, 8))
    return tuple(out) if r > 1 or depth == 0 and rng.random() < 0.5 else out[0]


def _stride_like(rng, s):
    if type(s) is tuple:
        return tuple(_stride_like(rng, e) for e in s)
    return rng.choice([0, 1, 1, 2, 3, 4, 8, 16, 24, 64, -1, -4])


def _compact_shape(rng):
    return tuple(rng.choice([1, 2, 4, 8]) for _ in range(rng.randint(2, 3)))


def _cxx_static(t, kind):
    """An IntTuple as a C++ type, written here independently of wb.to_cute_cpp."""
    if type(t) is tuple:
        return f"{kind}<{','.join(_cxx_static(e, kind) for e in t)}>"
    return f"Int<{t}>"


def _cxx_value(t, kind, dyn):
    if type(t) is tuple:
        return f"make_{kind}(" + ",".join(_cxx_value(e, kind, d) for e, d in zip(t, dyn)) + ")"
    return f"{t}" if dyn else f"Int<{t}>{{}}"


def _wb_value(t, dyn):
    if type(t) is tuple:
        return tuple(_wb_value(e, d) for e, d in zip(t, dyn))
    return wb.Dyn(t) if dyn else t


def _dyn_mask(rng, t):
    if type(t) is tuple:
        return tuple(_dyn_mask(rng, e) for e in t)
    return rng.random() < 0.4


def cases():
    """[(id, C++ expression printed by CuTe, the workbench's own object, parse_cute keyword arguments)]."""
    rng = random.Random(19)
    out = []
    for k in range(170):
        s = _shape(rng)
        d = _stride_like(rng, s)
        out.append((f"L{k}", f"Layout<{_cxx_static(s, 'Shape')},{_cxx_static(d, 'Stride')}>{{}}",
                    wb.make_layout(s, stride=d), {}))
    for k in range(45):
        s = _shape(rng)
        d = _stride_like(rng, s)
        ms, md = _dyn_mask(rng, s), _dyn_mask(rng, d)
        out.append((f"D{k}", f"make_layout({_cxx_value(s, 'shape', ms)}, {_cxx_value(d, 'stride', md)})",
                    wb.make_layout(_wb_value(s, ms), stride=_wb_value(d, md)), {}))
    for k in range(40):
        b = rng.randint(0, 3)
        m = rng.randint(0, 4)
        sh = rng.choice([b, b + 1, 3, 4]) * rng.choice([1, -1]) if b else rng.choice([0, 1, 3])
        if abs(sh) < b:
            sh = b
        s = (rng.choice([4, 8, 16]), rng.choice([8, 32, 64]))
        d = rng.choice([(s[1], 1), (1, s[0])])
        out.append((f"S{k}", f"composition(Swizzle<{b},{m},{sh}>{{}}, Layout<{_cxx_static(s, 'Shape')},"
                    f"{_cxx_static(d, 'Stride')}>{{}})",
                    wb.composition(wb.Swizzle(b, m, sh), wb.make_layout(s, stride=d)), {}))
    for name in ("K_INTER", "K_SW32", "K_SW64", "K_SW128", "MN_INTER", "MN_SW32", "MN_SW64", "MN_SW128"):
        for t, ct in CXX_T.items():
            out.append((f"G_{name}_{t.name}", f"GMMA::Layout_{name}_Atom<{ct}>{{}}",
                        wb.gmma_smem_atom(f"Layout_{name}_Atom", t), {}))
    for name, t, trg in (("K_SW128", wb.Float16, (128, 64)), ("MN_SW64", wb.Float32, (64, 32)),
                         ("K_SW32", wb.Uint8, (64, 64, 2)), ("MN_INTER", wb.Float64, (16, 16)),
                         ("K_SW64", wb.Float16, (64, 128))):
        out.append((f"T_{name}_{t.name}", f"tile_to_shape(GMMA::Layout_{name}_Atom<{CXX_T[t]}>{{}}, "
                    f"make_shape({', '.join(f'Int<{x}>{{}}' for x in trg)}))",
                    wb.tile_to_shape(wb.gmma_smem_atom(f"Layout_{name}_Atom", t), trg), {}))
    for k in range(10):
        s = _compact_shape(rng)
        trg = tuple(x * rng.randint(1, 3) for x in s) + ((rng.randint(1, 3),) if rng.random() < 0.3 else ())
        out.append((f"T{k}", f"tile_to_shape(Layout<{_cxx_static(s, 'Shape')}>{{}}, "
                    f"make_shape({', '.join(f'Int<{x}>{{}}' for x in trg)}))", wb.tile_to_shape(wb.make_layout(s), trg), {}))
    for k in range(20):
        s = _shape(rng)
        s = s if type(s) is tuple else (s,)
        ms = _dyn_mask(rng, s)
        out.append((f"I{k}", f"make_identity_layout({_cxx_value(s, 'shape', ms)})",
                    wb.make_identity_tensor(_wb_value(s, ms)).layout, {}))
    for k in range(10):
        s = _shape(rng)
        s = s if type(s) is tuple else (s, 3)
        ms = _dyn_mask(rng, s)
        out.append((f"IT{k}", f"make_identity_tensor({_cxx_value(s, 'shape', ms)})",
                    wb.make_identity_tensor(_wb_value(s, ms)), {}))
    mmas = tiled_mmas()
    for id_, m in mmas.items():
        out.append((f"TM_{id_}", id_, m, {"mma_atom": m.atom.name, "major": (m.atom.major_a, m.atom.major_b)}))
    for id_, c in tiled_copies(mmas).items():
        out.append((f"TC_{id_}", f"c_{id_}", c, {"copy_atom": c.atom.name, "value_type": c.atom.value_type}))
    for name in ("SM80_16x8x16_F32F16F16F32_TN", "SM80_16x8x8_F32TF32TF32F32_TN", "SM80_8x8x4_F64F64F64F64_TN",
                 "SM80_16x8x32_S32S8S8S32_TN", "SM75_16x8x8_F32F16F16F32_TN", "SM70_8x8x4_F32F16F16F32_NT",
                 "SM89_16x8x32_F32E4M3E4M3F32_TN", "SM80_16x8x16_F16F16F16F16_TN"):
        out.append((f"MA_{name}", f"MMA_Atom<{name}>{{}}", mma_atom(name), {"mma_atom": name}))
    for name, t, cxx in (("SM75_U32x4_LDSM_N", wb.Float16, "SM75_U32x4_LDSM_N"),
                         ("SM75_U16x8_LDSM_T", wb.Float16, "SM75_U16x8_LDSM_T"),
                         ("SM75_U32x2_LDSM_N", wb.Int8, "SM75_U32x2_LDSM_N"),
                         ("SM90_U32x4_STSM_N", wb.Float16, "SM90_U32x4_STSM_N"),
                         ("UniversalCopy_U128", wb.Float32, "UniversalCopy<uint128_t>"),
                         ("SM80_CP_ASYNC_CACHEALWAYS_U64", wb.Float16, "SM80_CP_ASYNC_CACHEALWAYS<uint64_t>")):
        out.append((f"CA_{name}_{t.name}", f"Copy_Atom<{cxx}, {CXX_T.get(t, {wb.Int8: 'int8_t'}.get(t))}>{{}}",
                    copy_atom(name, t), {"copy_atom": name, "value_type": t}))
    return out


TILED_COPY_EXPR = {  # the C++ of tiled_copies() (tests/cute/atoms_tiled_copy.cpp), by id
    "c1": "make_tiled_copy_A(LDSM4{}, t1)", "c2": "make_tiled_copy_B(LDSM4{}, t1)",
    "c3": "make_tiled_copy_B(Copy_Atom<SM75_U32x2_LDSM_N, half_t>{}, t2)",
    "c4": "make_tiled_copy_A(Copy_Atom<SM75_U16x8_LDSM_T, half_t>{}, t1)",
    "c5": "make_tiled_copy_C(Copy_Atom<SM90_U32x4_STSM_N, half_t>{}, t1)",
    "c6": "make_tiled_copy_C(Copy_Atom<SM90_U32x2_STSM_N, half_t>{}, t2)",
    "c7": "make_tiled_copy_A(Copy_Atom<SM75_U32x2_LDSM_N, half_t>{}, t6)",
    "c8": "make_tiled_copy_A(Copy_Atom<UniversalCopy<uint32_t>, half_t>{}, t1)",
    "c9": "make_tiled_copy_C(Copy_Atom<UniversalCopy<uint32_t>, float>{}, t1)",
    "c10": "make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS<uint128_t>, half_t>{}, "
           "Layout<Shape<_16, _8>, Stride<_8, _1>>{}, Layout<Shape<_1, _8>>{})",
    "c11": "make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, half_t>{}, Layout<Shape<_32, _4>>{}, "
           "Layout<Shape<_8, _1>>{})",
    "c12": "make_tiled_copy(Copy_Atom<UniversalCopy<uint64_t>, float>{}, Layout<Shape<_8, _16>, Stride<_16, _1>>{}, "
           "Layout<Shape<_1, _2>>{})",
    "c13": "make_tiled_copy(Copy_Atom<UniversalCopy<uint32_t>, float>{}, Layout<Shape<_32, _8>>{}, "
           "Layout<Shape<_4, _1>>{})",
    "c14": "make_tiled_copy_A(LDSM4{}, t4)", "c15": "make_tiled_copy_B(LDSM4{}, t4)",
    "c16": "make_tiled_copy_B(Copy_Atom<SM75_U32x4_LDSM_N, bfloat16_t>{}, t7)",
    "c17": "make_tiled_copy_C(Copy_Atom<SM90_U16x8_STSM_T, half_t>{}, t1)",
    "c18": "make_tiled_copy_B(Copy_Atom<SM75_U16x4_LDSM_T, half_t>{}, t1)",
    "c19": "make_tiled_copy_A(Copy_Atom<SM75_U32x4_LDSM_N, int8_t>{}, t9)",
    "c20": "make_tiled_copy_A(Copy_Atom<SM75_U32x1_LDSM_N, half_t>{}, t6)",
    "c21": "make_tiled_copy_A(LDSM4{}, t20)", "c22": "make_tiled_copy_A(LDSM4{}, t5)",
}


def _source(name, items, tiled):
    """A main() printing every (id, C++ expression) between @@id markers."""
    body = []
    if tiled:
        body.append("  TILED_MMAS\n  using LDSM4 = Copy_Atom<SM75_U32x4_LDSM_N, half_t>;")
        body += [f"  auto c_{k} = {v};" for k, v in TILED_COPY_EXPR.items()]
    for id_, expr in items:
        body.append(f'  printf("@@{id_}\\n"); print({expr}); printf("\\n");')
    text = HEAD + "int main() {\n" + "\n".join(body) + "\n  return 0;\n}\n"
    GEN_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = GEN_DIR / f"{name}.cpp"
    if not path.is_file() or path.read_text() != text:
        fd, tmp = tempfile.mkstemp(dir=GEN_DIR, suffix=".cpp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    return path


def _printed(out):
    res, cur = {}, None
    for line in out.splitlines():
        if line.startswith("@@"):
            cur = line[2:]
            res[cur] = []
        elif cur is not None:
            res[cur].append(line)
    return {k: "\n".join(v).strip("\n") for k, v in res.items()}


def _build(sources):
    cutlass, cccl = cute_toolchain("the CuTe C++ interop test")
    cute_dir = cutlass / "cute"
    hash_files = [*sorted((HERE / "cute").glob("*.hpp")), *cute_dir.glob("atom/*.hpp"), *cute_dir.glob("*.hpp")]
    exes, seconds = build_harnesses(sources, [HERE / "cute", cutlass, CUDA_INCLUDE, cccl], hash_files)
    print(f"\nCuTe interop harness: compiled in {seconds:.1f} s" if seconds > 0.5 else "\nCuTe interop harness: cached")
    out = {}
    for exe in exes.values():
        out.update(_printed(run_harness(exe)))
    return out


@pytest.fixture(scope="module")
def stage1():
    cs = cases()
    printed = _build([_source("interop_print", [(i, e) for i, e, _, _ in cs], tiled=True)])
    return cs, printed


def _parse(text, kw):
    kw = {k: v for k, v in kw.items() if k != "major"}
    return wb.parse_cute(text, "cpp", **kw)   # C++'s text: a plain 8 is a run-time value even with no _8 beside it


def _same_function(a, b):
    if isinstance(a, wb.TiledMMA):
        return all(_same_function(getattr(a, f), getattr(b, f)) for f in
                   ("thr_layout_vmnk", "tv_layout_A_tiled", "tv_layout_B_tiled", "tv_layout_C_tiled"))
    if isinstance(a, wb.TiledCopy):
        return _same_function(a.layout_tv, b.layout_tv) and \
            [wb.size(t) for t in a.tiler_mn] == [wb.size(t) for t in b.tiler_mn]
    if isinstance(a, wb.IdentityTensor):
        return _same_function(a.layout, b.layout) and a.origin == b.origin
    if isinstance(a, (wb.MMAAtom, wb.CopyAtom)):
        fields = ("thr_id", "tv_layout_A", "tv_layout_B", "tv_layout_C") if isinstance(a, wb.MMAAtom) else \
            ("thr_id", "layout_src_tv", "layout_dst_tv", "layout_ref_tv")
        return all(_same_function(getattr(a, f), getattr(b, f)) for f in fields)
    if wb.size(a) != wb.size(b) or wb.rank(a) != wb.rank(b):
        return False
    if not any(type(d) is wb.E for d in wb.flatten(a.stride)):   # offsets, vectorized
        return bool(np.array_equal(a.offsets(), b.offsets()))
    n = int(wb.size(a)) if not wb.is_dynamic(wb.size(a)) else wb.size(a).value
    return [a(i) for i in range(n)] == [b(i) for i in range(n)]   # coordinates (basis strides)


def test_the_harness_prints_enough(stage1):
    cs, printed = stage1
    assert len(cs) >= 300 and set(printed) == {c[0] for c in cs}
    kinds = {c[0].split("_")[0].rstrip("0123456789") for c in cs}
    assert {"L", "D", "S", "G", "T", "I", "IT", "TM", "TC", "MA", "CA"} <= kinds


def test_parsing_cute_cpp_prints_gives_equal_objects_in_function_and_hierarchy(stage1):
    cs, printed = stage1
    bad = []
    for id_, _, ours, kw in cs:
        text = printed[id_]
        got = _parse(text, kw)
        if not _same_function(got, ours):
            bad.append(f"{id_}: parse({text!r}) = {got!r} differs as a function from ours {ours!r}")
        elif wb.format_cute(got, "cpp") != text:
            bad.append(f"{id_}: parse({text!r}) prints back as {wb.format_cute(got, 'cpp')!r}")
        elif wb.format_cute(ours, "cpp") != text:
            bad.append(f"{id_}: ours prints {wb.format_cute(ours, 'cpp')!r}, CuTe {text!r} (hierarchy)")
    assert not bad, f"{len(bad)} of {len(cs)}:\n" + "\n".join(bad[:20])


def test_to_cute_cpp_compiles_and_prints_the_same(stage1):
    cs, printed = stage1
    items = []
    for id_, _, _, kw in cs:
        got = _parse(printed[id_], kw)
        if isinstance(got, wb.TiledMMA) and got.atom.name.startswith("SM90"):
            majors = kw["major"]
            got = wb.make_tiled_mma(wb.mma_atom(got.atom.name, major_a=majors[0], major_b=majors[1]),
                                    got.atom_layout_mnk, got.permutation_mnk)
        items.append((id_, wb.to_cute_cpp(got)))
    again = _build([_source("interop_roundtrip", items, tiled=False)])
    diff = [f"{i}: {e}\n  CuTe printed {printed[i]!r}\n  then         {again.get(i)!r}" for i, e in items
            if again.get(i) != printed[i]]
    assert not diff, f"{len(diff)} of {len(items)}:\n" + "\n".join(diff[:20])


def test_gmma_smem_atoms_spell_cutes_swizzle_and_alignment(stage1):
    _, printed = stage1
    assert printed["G_K_SW128_Float16"] == "Sw<3,4,3> o smem_ptr[16b](unset) o (_8,_64):(_64,_1)"
    a = wb.parse_cute(printed["G_K_SW128_Float16"])
    assert str(a.inner) == "S<3,3,3>" and a.alignment == 1024 and a.ptr_bits == 16
    assert a == wb.gmma_smem_atom("Layout_K_SW128_Atom", wb.Float16)
    # the element-offset function is CuTe's byte swizzle applied to byte addresses
    sw = a.cute_swizzle
    assert list(a.offsets()) == [sw(int(o) * 2) // 2 for o in a.outer.offsets()]
    assert np.all(np.sort(a.offsets()) == np.arange(a.size))
