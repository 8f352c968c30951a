"""Triton itself as the oracle: every Gluon layout of the families below gives, through Triton 3.9's own
``to_linear_layout`` (the Gluon builder on a CPU with only an MLIR context: no GPU, no CUDA toolchain), exactly the
LinearLayout the workbench builds for the CuTe object ``from_gluon`` gives (Triton -> workbench -> Triton), and
that object's Gluon layout (``to_gluon``) gives Triton the same LinearLayout and reads back to the same object
(CuTe object -> Triton -> CuTe object).  The TTGIR text both ways: the attribute Triton prints for the layout (in
its tensor / memdesc type) is exactly ``format_ttgir``'s, and ``parse_ttgir`` reads Triton's whole type back to the
same layout and shape.

Where it runs: only where the ``triton`` package imports (its wheel is ~286 MB, too large for the CI extras), so on
developer machines with ``pip install triton`` (or PYTHONPATH at an unpacked wheel); elsewhere the Triton cases are
skipped with the reason, and the Triton-free checks below still run."""

from __future__ import annotations

import itertools

import pytest

import workbench as wb
from workbench.interop import GluonLayout, GluonTextError, format_ttgir, parse_ttgir
from workbench.interop.linear import LinearLayout
from workbench.interop.triton import from_gluon, to_gluon, to_triton


# -- the families -----------------------------------------------------------------------------------------------------
def _cases():
    G = GluonLayout
    out = []
    for wm, wn in [(1, 1), (2, 2), (4, 1), (1, 4), (2, 1)]:
        p = G("NVMMADistributedLayout", version=[2, 0], warps_per_cta=[wm, wn], instr_shape=[16, 8])
        for M, N in [(16 * wm, 8 * wn), (64, 64), (32 * wm, 32 * wn)]:
            out.append((p, (M, N)))
        for kw in (1, 2, 4):
            for K in (8 * kw, 32 * kw):
                for M in (16 * wm, 64):
                    out.append((G("DotOperandLayout", operand_index=0, parent=p, k_width=kw), (M, K)))
                for N in (8 * wn, 64):
                    out.append((G("DotOperandLayout", operand_index=1, parent=p, k_width=kw), (K, N)))
    for wm, wn, n in [(4, 1, 32), (8, 1, 64), (4, 2, 16), (8, 2, 32)]:
        p = G("NVMMADistributedLayout", version=[3, 0], warps_per_cta=[wm, wn], instr_shape=[16, n, 16])
        for M, N in [(16 * wm, n * wn), (32 * wm, 2 * n * wn)]:
            out.append((p, (M, N)))
        for kw, K in [(2, 16), (2, 64), (1, 8), (1, 32), (4, 32), (4, 64)]:
            if wn == 1:   # the register A operand of a warpgroup MMA
                out.append((G("DotOperandLayout", operand_index=0, parent=p, k_width=kw), (16 * wm, K)))
    for sw, bits, tr in itertools.product((0, 32, 64, 128), (8, 16, 32), (False, True)):
        row = max(sw, 16) * 8 // bits
        shp = (row, 8) if tr else (8, row)
        g = G("NVMMASharedLayout", swizzle_byte_width=sw, element_bitwidth=bits, rank=2, transposed=tr)
        out.append((g, shp))
        out.append((g, (shp[0] * 2, shp[1] * 4)))
    for vec, per, mx, order, shp in [(8, 1, 8, [1, 0], (16, 64)), (4, 2, 4, [1, 0], (32, 32)),
                                     (2, 1, 4, [0, 1], (16, 16)), (1, 1, 1, [1, 0], (8, 16)),
                                     (8, 1, 4, [1, 0], (8, 32)), (4, 1, 8, [0, 1], (64, 8))]:
        out.append((G("SwizzledSharedLayout", vec=vec, per_phase=per, max_phase=mx, order=order), shp))
    return out


def _blocked_cases():
    """Blocked layouts that fit their tile once, repeat in registers past it, and broadcast over a smaller one."""
    G = GluonLayout
    out = []
    for spt, tpw, wpc, order in [([1, 4], [4, 8], [2, 2], [1, 0]), ([4, 1], [8, 4], [1, 4], [0, 1]),
                                 ([1, 1], [1, 32], [4, 1], [1, 0]), ([2, 2], [2, 16], [2, 1], [0, 1]),
                                 ([1, 8], [8, 4], [4, 1], [1, 0]), ([8, 1], [2, 16], [1, 8], [0, 1]),
                                 ([1, 2], [32, 1], [1, 2], [1, 0])]:
        g = G("BlockedLayout", size_per_thread=spt, threads_per_warp=tpw, warps_per_cta=wpc, order=order)
        cta = [s * t * w for s, t, w in zip(spt, tpw, wpc)]
        for shp in [cta, [2 * cta[0], 4 * cta[1]], [max(1, cta[0] // 4), cta[1]], [cta[0], max(1, cta[1] // 2)],
                    [64, 64]]:
            out.append((g, tuple(shp)))
    for spt, wpc, shp in [([4], [4], (512,)), ([1], [2], (16,)), ([2], [8], (2048,))]:
        out.append((G("BlockedLayout", size_per_thread=spt, threads_per_warp=[32], warps_per_cta=wpc, order=[0]), shp))
    return out


def _linear_cases():
    """Triton's linear layouts, taken as their bases: a blocked layout's and an mma accumulator's (distributed), a
    128-byte swizzle's and a padded-free row-major one's (shared)."""
    G = GluonLayout
    return [(G("DistributedLinearLayout", reg_bases=[[0, 1], [0, 2]], lane_bases=[[0, 4], [0, 8], [1, 0], [2, 0],
                                                                                   [4, 0]],
               warp_bases=[[8, 0]], block_bases=[], shape=[16, 16]), (16, 16)),
            (G("DistributedLinearLayout", reg_bases=[[0, 1], [8, 0], [0, 8], [16, 0]],
               lane_bases=[[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp_bases=[[0, 16], [0, 0]], block_bases=[],
               shape=[32, 32]), (32, 32)),
            (G("SharedLinearLayout", offset_bases=[[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32], [1, 8], [2, 16],
                                                   [4, 32]]), (8, 64)),
            (G("SharedLinearLayout", offset_bases=[[0, 1], [0, 2], [1, 0], [2, 0]], alignment=128), (4, 4))]


CASES = _cases()
BLOCKED = _blocked_cases()
LINEAR = _linear_cases()


def _id(case):
    g, shp = case
    return f"{g!r}@{list(shp)}".replace(" ", "")


# -- Triton's side --------------------------------------------------------------------------------------------------
class _Triton:
    """Triton's own answers for a Gluon layout at a shape: its LinearLayout and its printed TTGIR type."""

    def __init__(self, ir_mod, gl):
        self.gl, self.ctx = gl, ir_mod.ir.context()   # the builder does not own the context: keep it, or segfault
        ir_mod.ir.load_dialects(self.ctx)
        self.builder = ir_mod.gluon_ir.GluonOpBuilder(self.ctx)

    def real(self, g):
        if type(g) is not GluonLayout:
            return g
        return getattr(self.gl, g.cls)(**{k: self.real(v) for k, v in g.kw.items()})

    def ll(self, g, shape):
        t = self.builder.to_linear_layout(self.real(g)._to_ir(self.builder), list(shape))
        outs = [(f"dim{k}", s) for k, s in enumerate(shape)]
        assert not t.block_bases
        if hasattr(t, "offset_bases"):
            return LinearLayout({"offset": [tuple(b) for b in t.offset_bases]}, outs)
        return LinearLayout({"register": [tuple(b) for b in t.reg_bases], "lane": [tuple(b) for b in t.lane_bases],
                             "warp": [tuple(b) for b in t.warp_bases]}, outs)

    def type_text(self, g, shape):
        b, attr = self.builder, self.real(g)._to_ir(self.builder)
        if "Shared" in g.cls:
            return str(b.get_shared_mem_desc_ty(b.get_half_ty(), list(shape), attr, list(shape)))
        return str(b.get_distributed_ty(b.get_half_ty(), list(shape), attr))


@pytest.fixture(scope="module")
def triton():
    ir_mod = pytest.importorskip("triton._C.libtriton", reason="triton is not installed (wheel ~286 MB, not in CI)")
    gl = pytest.importorskip("triton.experimental.gluon.language", reason="triton without Gluon")
    return _Triton(ir_mod, gl)


def _workbench_ll(obj):
    if type(obj) is tuple and type(obj[1]) is str:    # (tiled_mma, operand)
        return to_triton(*obj)
    return to_triton(obj)                             # a (tile, tv) pair or a memory layout


def _gluon(obj):
    return to_gluon(*obj) if type(obj) is tuple and type(obj[1]) is str else to_gluon(obj)


def _same(a, b):
    return a.out_dims == b.out_dims and {k: v for k, v in a.bases.items() if v} == {k: v for k, v in b.bases.items() if v}


def test_case_count():
    assert (len(CASES), len(BLOCKED), len(LINEAR)) == (209, 38, 4)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_strictly_tritons_layout_both_ways(case, triton):
    g, shape = case
    want = triton.ll(g, shape)
    obj = from_gluon(g, shape)                        # Triton -> the CuTe object a user writes
    got = _workbench_ll(obj)                          # -> Triton's LinearLayout, built by the workbench
    assert _same(got, want), (g, shape, obj, got, want)
    back = wb.from_linear_layout(got, element_bits=g.element_bitwidth) if got.kind == "shared" and \
        g.cls == "NVMMASharedLayout" else None
    if back is not None:                              # shared: the LinearLayout imports back to the same function
        assert list(back.offsets()) == list((obj if type(obj) is not tuple else obj[0]).offsets())
    if g.cls != "SwizzledSharedLayout":               # CuTe object -> Gluon text -> the same CuTe object
        text = repr(to_gluon(*obj)) if type(obj) is tuple else repr(to_gluon(obj))
        again = from_gluon(text, shape)
        assert repr(again) == repr(obj) and _same(_workbench_ll(again), want), (text, again, obj)


@pytest.mark.parametrize("case", BLOCKED + LINEAR, ids=_id)
def test_blocked_and_linear_strictly_both_ways(case, triton):
    g, shape = case
    want = triton.ll(g, shape)
    obj = from_gluon(g, shape)                        # Triton -> (tile, tv) or the memory layout
    assert _same(_workbench_ll(obj), want), (g, shape, obj, want)
    back = _gluon(obj)                                # CuTe object -> Gluon layout: Triton builds the same layout
    assert _same(triton.ll(back, shape), want), (obj, back)
    again = from_gluon(back, shape)                   # -> the same CuTe object
    assert repr(again) == repr(obj), (back, again, obj)
    if g.cls == "BlockedLayout":                      # a blocked layout is found again from its TV layout
        assert back == g or _same(triton.ll(back, shape), triton.ll(g, shape)), (g, back)


@pytest.mark.parametrize("case", CASES + BLOCKED + LINEAR, ids=_id)
def test_ttgir_text_is_tritons_both_ways(case, triton):
    g, shape = case
    typ = triton.type_text(g, shape)                  # what Triton prints, e.g. tensor<64x64xf16, #ttg.blocked<...>>
    attr = typ.split(", ", 1)[1]
    attr = attr.rsplit(", #ttg.shared_memory", 1)[0] if typ.startswith("!ttg.memdesc") else attr[:-1]
    assert format_ttgir(g) == attr == g.ttgir, (format_ttgir(g), attr)
    got, got_shape = parse_ttgir(typ)                 # Triton's text -> the same layout and shape
    assert got == g and tuple(got_shape) == tuple(shape), (typ, got)
    assert parse_ttgir(attr) == (g, None)
    if "Linear" not in g.cls:                         # from the text straight to the CuTe object
        assert repr(from_gluon(typ)) == repr(from_gluon(g, shape))


# -- Triton-free checks ---------------------------------------------------------------------------------------------
def test_the_two_conventions_differ_only_in_register_order_and_b():
    mma = wb.make_tiled_mma(wb.mma_atom("SM80_16x8x16_F32F16F16F32_TN"), wb.make_layout((2, 2, 1), stride=(2, 1, 0)),
                            (64, 64, 32))
    c, t = to_triton(mma, "C", convention="cute"), to_triton(mma, "C")
    assert c.bases["lane"] == t.bases["lane"] and c.bases["warp"] == t.bases["warp"]
    assert sorted(c.bases["register"]) == sorted(t.bases["register"]) and c != t
    assert t.bases["register"] == [(0, 1), (8, 0), (0, 16), (0, 32), (32, 0)]   # Triton: N-repeats first
    b = to_triton(mma, "B")
    assert b.out_dims == (("dim0", 32), ("dim1", 64)) and b.bases["lane"][:2] == [(2, 0), (4, 0)]   # (K, N)


def test_gluon_text_reads_and_refusals():
    g = from_gluon("gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)", (8, 64))
    assert g == wb.gmma_smem_atom("Layout_K_SW128_Atom", wb.Float16)
    assert repr(to_gluon(g)) == ("gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2, "
                                 "transposed=False)")
    mma, op = from_gluon("gl.DotOperandLayout(0, gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[2, 2], "
                         "instr_shape=[16, 8]), 2)", (64, 32))
    assert op == "A" and mma.atom.name == "SM80_16x8x16_F32F16F16F32_TN"
    with pytest.raises(GluonTextError, match="Gluon constructor text"):
        from_gluon("gl.NVMMASharedLayout(", (8, 64))
    with pytest.raises(ValueError, match="reaches past a row"):
        from_gluon(GluonLayout("SwizzledSharedLayout", vec=8, per_phase=1, max_phase=8, order=[1, 0]), (8, 16))
    with pytest.raises(ValueError, match="N-first"):
        to_gluon(wb.make_tiled_mma(wb.mma_atom("SM80_16x8x16_F32F16F16F32_TN"), wb.make_layout((2, 2, 1))), "C")
    with pytest.raises(ValueError, match="convention"):
        to_triton(mma, "A", convention="gluon")
