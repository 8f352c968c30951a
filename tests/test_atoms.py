"""workbench.atoms: the catalog, bad input, and the bank-conflict model against a brute-force count.

(The layouts themselves are checked against CuTe C++ in test_atoms_cute_cpp.py.)
"""

from __future__ import annotations

import collections
import re

import pytest

import workbench as wb
from workbench.atoms import (
    bank_conflicts,
    copy_atom,
    gmma_smem_atom,
    make_tiled_copy,
    make_tiled_copy_A,
    make_tiled_copy_B,
    make_tiled_copy_C,
    make_tiled_mma,
    mma_atom,
    mma_atom_names,
    suggest_swizzle,
)
from workbench.layout import ComposedLayout

F16 = wb.Float16
SM80 = "SM80_16x8x16_F32F16F16F32_TN"


def test_catalog_covers_the_issue_list():
    names = set(mma_atom_names())
    for n in ["SM70_8x8x4_F32F16F16F32_NT", "SM70_8x8x4_F16F16F16F16_TN", "SM75_16x8x8_F32F16F16F32_TN",
              "SM80_16x8x8_F16F16F16F16_TN", "SM80_16x8x16_F32BF16BF16F32_TN", "SM80_16x8x8_F32TF32TF32F32_TN",
              "SM80_16x8x32_S32S8S8S32_TN", "SM80_8x8x4_F64F64F64F64_TN", "SM89_16x8x32_F32E4M3E4M3F32_TN",
              "SM90_64x8x16_F32BF16BF16_RS", "SM90_64x256x32_F32E4M3E4M3_SS_TN", "UniversalFMA"]:
        assert n in names, n
    gmma16 = [n for n in names if n.startswith("SM90_") and n.endswith("x16_F32F16F16_SS")]
    assert len(gmma16) == 32  # every N CuTe defines: 8..256 step 8
    for n in sorted(names):
        mma_atom(n)  # every listed name builds


def test_atom_fields():
    a = mma_atom(SM80)
    assert a.shape_mnk == (16, 8, 16) and a.thr_id.size == 32
    assert (a.a_type, a.b_type, a.c_type, a.d_type) == (F16, F16, wb.Float32, wb.Float32)
    assert str(a.tv_layout_A) == "((4,8),(2,2,2)):((32,1),(16,8,128))"
    g = mma_atom("SM90_64x256x16_F16F16F16_SS", major_a="MN", major_b="K")
    assert g.shape_mnk == (64, 256, 16) and g.tv_layout_C.size == 64 * 256 and g.major_a == "MN"
    c = copy_atom("SM75_U32x4_LDSM_N", F16)
    assert str(c.layout_src_tv) == "(32,8):(8,1)" and c.layout_src_tv_bits.size == 32 * 128
    a = gmma_smem_atom("Layout_K_SW128_Atom", F16)
    assert str(a) == "Sw<3,4,3> o smem_ptr[16b](unset) o (8,64):(64,1)"  # CuTe C++'s spelling
    assert str(a.inner) == "S<3,3,3>" and a.alignment == 1024  # the same function of the element offset


@pytest.mark.parametrize("call, match", [
    (lambda: mma_atom("SM80_16x8x16_F32F16F16F32_NT"), "Close names: SM80_16x8x16_F32F16F16F32_TN"),
    (lambda: mma_atom("SM90_64x12x16_F32F16F16_SS"), "unknown MMA atom"),
    (lambda: mma_atom("SM90_64x64x32_F32E4M3E4M3_SS_TN", major_a="MN"), "K-major operands only"),
    (lambda: mma_atom(SM80, major_b="X"), "'K' or 'MN'"),
    (lambda: copy_atom("SM75_U32x4_LDSM", F16), "Close names: SM75_U32x4_LDSM_N"),
    (lambda: copy_atom("SM75_U32x4_LDSM_N", wb.Float64), "64-bit value does not fit.*Accepted value types: element types of 4/8/16/32 bits"),
    (lambda: copy_atom("SM75_U16x8_LDSM_T", wb.Float32), "Accepted value types"),
    (lambda: copy_atom("UniversalCopy", F16, num_bits=256), "accepted: UniversalCopy_U8"),
    (lambda: make_tiled_mma(mma_atom(SM80), wb.make_layout((2, 2, 1)), (24, 16, 16)), "multiple of 32"),
    (lambda: make_tiled_mma(mma_atom(SM80), wb.make_layout((2, 2, 1, 2))), "rank <= 3"),
    (lambda: make_tiled_copy_A(copy_atom("SM75_U32x4_LDSM_N", F16),
                               make_tiled_mma(mma_atom("SM80_16x8x8_F16F16F16F16_TN"))), "has 32 threads x 4 values.*multiple of 32 threads and of 8 values"),
    (lambda: make_tiled_copy(copy_atom("SM75_U32x4_LDSM_N", F16), wb.make_layout((4, 4)), wb.make_layout((1, 8))),
     "multiple of 32 threads"),
])
def test_bad_input_names_what_is_accepted(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("name, value_type, num_bits, accepted", [
    ("UniversalCopy_U16", wb.Float32, None, "4/8/16"),
    ("UniversalCopy_U8", wb.Float64, None, "4/8"),
    ("UniversalCopy", wb.Float64, 32, "4/8/16/32"),
    ("UniversalCopy_U32", wb.Float6E2M3FN, None, "4/8/16/32"),
    ("SM80_CP_ASYNC_CACHEALWAYS", wb.Float64, 32, "4/8/16/32"),
    ("SM80_CP_ASYNC_CACHEALWAYS_U64", wb.Complex128, None, "4/8/16/32/64"),
])
def test_copy_refuses_a_value_it_does_not_move_whole(name, value_type, num_bits, accepted):
    # CuTe's recast accepts these and gives (1,1):(0,1), a copy of part of one value
    bits = value_type.bits
    match = (rf"a {bits}-bit value does not fit this instruction \(the source layout .* moves runs of \d+ "
             rf"contiguous bits, which {bits}-bit values do not tile\)\. Accepted value types: element types of "
             rf"{accepted} bits\.")
    with pytest.raises(ValueError, match=match):
        copy_atom(name, value_type, num_bits=num_bits)


def test_copy_accepts_exactly_the_listed_widths():
    """One rule: copy_atom takes a value type iff the accepted-widths listing names its width."""
    from workbench._element_types import ALL_SCALAR_TYPES
    from workbench.atoms.copy import _CATALOG, _accepted_widths
    for name in _CATALOG:
        listed = {int(w) for w in re.fullmatch(r"element types of ([\d/]+) bits", _accepted_widths(name))[1].split("/")}
        for t in ALL_SCALAR_TYPES:
            try:
                a = copy_atom(name, t)
            except ValueError:
                assert t.bits not in listed, (name, t)
            else:
                assert t.bits in listed, (name, t)
                assert a.num_val_src * t.bits == a.layout_src_tv_bits[1].size  # whole values, every bit once
    assert str(copy_atom("UniversalCopy_U128", F16).layout_src_tv) == "(1,8):(0,1)"
    assert str(copy_atom("UniversalCopy_U32", wb.Float4E2M1FN).layout_dst_tv) == "(1,8):(0,1)"
    assert str(copy_atom("SM80_CP_ASYNC_CACHEGLOBAL_U128", wb.Complex128).layout_src_tv) == "(1,1):(0,1)"


def test_mma_atom_value_types():
    assert mma_atom(SM80, wb.Float32, F16, F16, wb.Float32) == mma_atom(SM80)
    assert mma_atom("SM80_8x8x4_F64F64F64F64_TN", wb.Float64).d_type is wb.Float64
    assert mma_atom("SM90_64x8x32_S32U8S8_RS_TN", wb.Int32, wb.Uint8, wb.Int8, wb.Int32).a_type is wb.Uint8
    assert mma_atom("UniversalFMA", F16).tv_layout_C.size == 1
    cases = [
        ((SM80, F16), r"expected \(D, A, B, C\) = \(Float32, Float16, Float16, Float32\) \(CuTe's F32/F16/F16/F32\), "
                      r"but got \(Float16,\)"),
        (("SM80_16x8x32_S32U8S8S32_TN_SATURATE", wb.Int32, wb.Int8, wb.Int8, wb.Int32),
         r"expected \(D, A, B, C\) = \(Int32, Uint8, Int8, Int32\) .*but got \(Int32, Int8, Int8, Int32\)"),
        (("SM90_64x24x32_F16E5M2E4M3_SS_TN", F16, wb.Float8E4M3FN, wb.Float8E5M2, F16),
         r"expected \(D, A, B, C\) = \(Float16, Float8E5M2, Float8E4M3FN, Float16\)"),
        (("SM80_16x8x8_F32TF32TF32F32_TN", wb.Float32, wb.Float32), r"\(CuTe's F32/TF32/TF32/F32\), but got"),
        ((SM80, "f16"), r"expected \(D, A, B, C\) = .*but got \('f16',\)"),
    ]
    for args, match in cases:
        with pytest.raises(TypeError, match=match):
            mma_atom(*args)


def test_bad_input_types():
    with pytest.raises(TypeError, match="element type"):
        copy_atom("SM75_U32x4_LDSM_N", "half")
    with pytest.raises(TypeError, match="MMA atom"):
        make_tiled_mma("SM80")
    with pytest.raises(TypeError, match="TiledMMA"):
        make_tiled_copy_A(copy_atom("SM75_U32x4_LDSM_N", F16), mma_atom(SM80))


def brute_force_wavefronts(tiled_copy, smem, ebytes, side):
    """Independent count: walk warps, calls and phases by the PTX rules, one (thread, value) at a time."""
    tv = tiled_copy.layout_src_tv_tiled if side == "src" else tiled_copy.layout_dst_tv_tiled
    atom = tiled_copy.atom
    nt, nv = tv[0].size, tv[1].size
    av = atom.num_val_src if side == "src" else atom.num_val_dst
    m_extent = tiled_copy.tiler_mn[0]
    if atom.kind in ("ldsm", "stsm"):
        groups = [list(range(8 * p, 8 * p + 8)) for p in range(atom.matrices)]
    else:
        bits = av * atom.value_type.bits
        per = 8 if bits >= 128 else 16 if bits == 64 else 32
        groups = [list(range(g, g + per)) for g in range(0, 32, per)]
    out = []
    for call in range(nv // av):
        for warp in range(max(1, nt // 32)):
            for group in groups:
                banks = collections.defaultdict(set)
                for lane in group:
                    t = warp * 32 + lane
                    for v in range(call * av, call * av + av):
                        i = tv((t, v))
                        off = smem((i % m_extent, i // m_extent))
                        for b in range(off * ebytes, off * ebytes + ebytes):
                            banks[(b // 4) % 32].add(b // 4)
                out.append(max(len(s) for s in banks.values()))
    return out


def _cases():
    a = mma_atom(SM80)
    L = wb.make_layout
    for k in (16, 32, 64):
        m = make_tiled_mma(a, L((2, 2, 1)), (32, 32, k))
        yield f"ldsm_A_K{k}", make_tiled_copy_A(copy_atom("SM75_U32x4_LDSM_N", F16), m), L((32, k), stride=(k, 1)), "src"
        yield f"ldsm_B_K{k}_T", make_tiled_copy_B(copy_atom("SM75_U16x4_LDSM_T", F16), m), L((32, k)), "src"
    m = make_tiled_mma(a, L((2, 2, 1)), (32, 32, 16))
    yield "stsm_C", make_tiled_copy_C(copy_atom("SM90_U32x4_STSM_N", F16), m), L((32, 32), stride=(32, 1)), "dst"
    yield "stsm_C_swz", make_tiled_copy_C(copy_atom("SM90_U32x2_STSM_N", F16), m), \
        ComposedLayout(wb.Swizzle(2, 3, 3), 0, L((32, 32), stride=(32, 1))), "dst"
    yield "u128", make_tiled_copy(copy_atom("UniversalCopy_U128", F16), L((16, 8), stride=(8, 1)), L((1, 8))), \
        L((16, 64), stride=(64, 1)), "dst"
    yield "u64_col", make_tiled_copy(copy_atom("UniversalCopy_U64", wb.Float32), L((32, 4)), L((2, 1))), \
        L((64, 4), stride=(1, 65)), "dst"
    yield "u32_rows", make_tiled_copy(copy_atom("UniversalCopy_U32", wb.Float32), L((32, 8)), L((1, 1))), \
        L((32, 8), stride=(8, 1)), "src"
    yield "cp_async_swz", make_tiled_copy(copy_atom("SM80_CP_ASYNC_CACHEALWAYS", F16), L((16, 8), stride=(8, 1)),
                                          L((1, 8))), ComposedLayout(wb.Swizzle(3, 3, 3), 0, L((16, 64), stride=(64, 1))), "dst"


@pytest.mark.parametrize("name, tc, smem, side", list(_cases()), ids=[c[0] for c in _cases()])
def test_bank_conflicts_match_brute_force(name, tc, smem, side):
    got = bank_conflicts(tc, smem, side=side)
    assert got.wavefronts == brute_force_wavefronts(tc, smem, tc.atom.value_type.bits // 8, side)


def test_an_access_the_layout_splits_is_refused():
    """A 16-byte load needs 4 consecutive floats; under S<5,0,5> each 16-byte chunk is permuted, so no such load
    exists (CuTe would not vectorize it) and counting its wavefronts would describe nothing that runs."""
    tc = make_tiled_copy(copy_atom("UniversalCopy_U128", wb.Float32), wb.make_layout((32, 1)), wb.make_layout((1, 32)))
    smem = wb.make_composed_layout(wb.Swizzle(5, 0, 5), 0, wb.make_layout((32, 32), stride=(32, 1)))
    with pytest.raises(ValueError, match=r"UniversalCopy_U128 moves 4 consecutive Float32 .* no such access exists"):
        bank_conflicts(tc, smem)
    with pytest.raises(ValueError, match="no such access exists"):   # the same tile with a column-major layout
        bank_conflicts(tc, wb.make_layout((32, 32)))


def test_known_conflicts():
    a = mma_atom(SM80)
    m = make_tiled_mma(a, wb.make_layout((2, 2, 1)), (32, 32, 64))
    c = make_tiled_copy_A(copy_atom("SM75_U32x4_LDSM_N", F16), m)
    plain = bank_conflicts(c, wb.make_layout((32, 64), stride=(64, 1)))
    assert plain.max_ways == 8 and set(plain.wavefronts) == {8}  # 8 rows of 128 B: all in the same 4 banks
    swz = bank_conflicts(c, ComposedLayout(wb.Swizzle(3, 3, 3), 0, wb.make_layout((32, 64), stride=(64, 1))))
    assert swz.conflict_free and set(swz.wavefronts) == {1}


@pytest.mark.parametrize("k, atom", [(16, "Layout_K_SW32_Atom"), (32, "Layout_K_SW64_Atom"), (64, "Layout_K_SW128_Atom")])
def test_suggest_swizzle_finds_cute_gmma_swizzles(k, atom):
    m = make_tiled_mma(mma_atom(SM80), wb.make_layout((2, 2, 1)), (32, 32, k))
    c = make_tiled_copy_A(copy_atom("SM75_U32x4_LDSM_N", F16), m)
    s = suggest_swizzle(c, wb.make_layout((32, k), stride=(k, 1)), F16)
    assert s.swizzle == gmma_smem_atom(atom, F16).inner
    assert s.after.conflict_free and not s.before.conflict_free and s.before.total > s.after.total
    assert len(s.compared) > 10 and min(s.compared.values()) == s.after.total


def test_suggest_swizzle_follows_the_access_width():
    # 32-bit loads, one 32-float row per thread: all 32 rows start in bank 0.  16-byte swizzles (M = 2 for
    # fp32) keep 4 floats together and stop at 4-way; M = 0 with 5 bits of row XORed into 5 bits of column
    # (S<5,0,5>) puts each row's element in its own bank.
    rows, one_row = wb.make_layout((32, 1)), wb.make_layout((1, 32))
    tc = make_tiled_copy(copy_atom("UniversalCopy_U32", wb.Float32), rows, one_row)
    tile = wb.make_layout((32, 32), stride=(32, 1))
    s = suggest_swizzle(tc, tile, wb.Float32)
    assert s.before.total == 1024 and s.after.total == s.after.ideal_total == 32
    assert s.swizzle == wb.Swizzle(5, 0, 5)
    assert bank_conflicts(tc, ComposedLayout(s.swizzle, 0, tile)).total == 32  # counted afresh
    assert bank_conflicts(tc, ComposedLayout(wb.Swizzle(3, 2, 3), 0, tile)).total == 128
    assert {sw.base for sw in s.compared} == {0} and max(sw.bits for sw in s.compared) == 5
    # 128-bit loads of the same tile keep M = log2(16 / 4) = 2 and find S<3,2,3>
    tc128 = make_tiled_copy(copy_atom("UniversalCopy_U128", wb.Float32), rows, one_row)
    s128 = suggest_swizzle(tc128, tile, wb.Float32)
    assert s128.swizzle == wb.Swizzle(3, 2, 3) and s128.after.conflict_free
    assert {sw.base for sw in s128.compared} == {2} and max(sw.bits for sw in s128.compared) == 3


def test_partitions_of_a_tensor():
    torch = pytest.importorskip("torch")
    m = make_tiled_mma(mma_atom(SM80), wb.make_layout((2, 2, 1)), (32, 32, 16))
    t = wb.from_dlpack(torch.zeros(64, 64))
    part = m.get_slice(5).partition_C(t)
    assert part.layout == m.get_slice(5).partition_C(t.layout)
    # lane 5 of the first atom holds C(1, 2), C(1, 3), C(9, 2), C(9, 3) (PTX's m16n8 accumulator fragment)
    assert part.data_ptr - t.data_ptr == 4 * (1 * 64 + 2)
    c = make_tiled_copy_A(copy_atom("SM75_U32x4_LDSM_N", F16), m)
    src = c.get_slice(3).partition_S(t)
    assert src.layout == c.get_slice(3).partition_S(t.layout) and src.layout.size == 8 * 2 * 4


def test_tiled_mma_shape_api():
    m = make_tiled_mma(mma_atom(SM80), wb.make_layout((2, 2, 1)), (32, wb.make_layout((8, 2, 2), stride=(1, 16, 8)), 16))
    assert m.size == 128 and [m.get_tile_size(i) for i in range(3)] == [32, 32, 16]
    assert str(m.thr_layout_vmnk) == "(32,2,2,1):(1,32,64,0)"
    with pytest.raises(ValueError, match="mode 0 .M., 1 .N. or 2 .K."):
        m.get_tile_size(3)
    with pytest.raises(ValueError, match=r"thread index in \[0, 128\)"):
        m.get_slice(128)
