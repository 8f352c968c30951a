"""What notebooks 03-06 and 08 state about CuTe, checked against CuTe DSL 4.8.1 (its algebra and runtime run on
the CPU while a ``@cute.jit`` function is traced) and the CUTLASS headers, and the workbench facts those notebooks
compute.  One test per claim of issue 22; each would have failed on the text it replaced."""

import json
import pathlib
import re

import pytest

import workbench as wb
from workbench.kernels import examples as E

cute = pytest.importorskip("cutlass.cute", reason="nvidia-cutlass-dsl is not installed")
cutlass = pytest.importorskip("cutlass")
cute_runtime = pytest.importorskip("cutlass.cute.runtime")
torch = pytest.importorskip("torch")

P = wb.parse_layout
M = wb.make_layout
ROOT = pathlib.Path(__file__).resolve().parent.parent


def _printed(capsys, fn):
    fn()
    return {k: v.strip() for k, v in (line.split("|", 1) for line in capsys.readouterr().out.splitlines() if "|" in line)}


@cute.jit
def _cute_claims():
    mk = cute.make_layout
    print("composition|", cute.composition(mk((6, 2), stride=(8, 2)), mk(4, stride=4)))
    print("complement|", cute.complement(mk(4, stride=2), 24))
    print("blocked|", cute.blocked_product(mk((2, 5), stride=(5, 1)), mk((3, 4), stride=(1, 3))))
    print("tv|", cute.make_layout_tv(mk((4, 8), stride=(8, 1)), mk((1, 4), stride=(1, 1)))[1])
    from cutlass.cute.nvgpu import warpgroup
    for kind in ("K_SW128", "K_SW64", "K_SW32"):
        print(f"{kind}_f16|", warpgroup.make_smem_layout_atom(getattr(warpgroup.SmemLayoutAtomKind, kind), cutlass.Float16))
    print("K_SW128_f32|", warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, cutlass.Float32))


@pytest.fixture(scope="module")
def cute_says():
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        _cute_claims()
    return {k: v.strip() for k, v in (line.split("|", 1) for line in buf.getvalue().splitlines() if "|" in line)}


# item 2 (04): CuTe composes (6,2):(8,2) o 4:4 into (2,2):(32,2), which is not A o B; the workbench refuses
def test_composition_cute_accepts_is_not_a_o_b_and_we_refuse(cute_says):
    assert cute_says["composition"] == "(2,2):(32,2)"
    A, B, R = P("(6,2):(8,2)"), P("4:4"), P(cute_says["composition"])
    assert [R(i) for i in range(3)] != [A(B(i)) for i in range(3)]
    with pytest.raises(ValueError, match="divide"):
        wb.composition(A, B)


# item 6 (04): the complement is where the copies start, not the offsets A misses
def test_complement_is_where_copies_start(cute_says):
    assert cute_says["complement"] == "(2,3):(1,8)"
    A, C = P("4:2"), wb.complement(P("4:2"), 24)
    assert str(C) == cute_says["complement"]
    reached, starts = set(A.offsets().tolist()), set(C.offsets().tolist())
    assert starts == {0, 1, 8, 9, 16, 17} and 0 in reached          # shares A's own 0
    assert starts != set(range(24)) - reached                       # not "what A does not reach"
    assert sorted(wb.make_layout(A, C).offsets().tolist()) == list(range(24))


# item 4 (04): CuTe 4.x's blocked_product hierarchy is the zip, the same function as ours
def test_blocked_product_is_cute4_zip(cute_says):
    assert cute_says["blocked"] == "((2,3),(5,4)):((5,10),(1,30))"
    ours = wb.blocked_product(P("(2,5):(5,1)"), P("(3,4):(1,3)"))
    assert ours.offsets().tolist() == P(cute_says["blocked"]).offsets().tolist()


# item 7 (04/05): make_layout_tv rakes the threads; each thread's values stay side by side
def test_make_layout_tv_keeps_a_threads_values_together(cute_says):
    tiler, tv = wb.make_layout_tv(M((4, 8), stride=(8, 1)), M((1, 4)))
    assert str(tv) == cute_says["tv"]
    for t in range(32):
        crds = [wb.idx2crd(tv((t, v)), tiler) for v in range(4)]
        assert len({m for m, _ in crds}) == 1 and [n for _, n in crds] == list(range(crds[0][1], crds[0][1] + 4))


# item 11 (04): CuTe DSL prints the tile count of a div-16 extent divided by 4 as a plain ?; we derive div=4
def test_dynamic_divisibility_deviation_is_what_04_says(capsys):
    @cute.jit
    def f(m: cutlass.Int32):
        m = cute.assume(m, divby=16)
        print("zd|", cute.zipped_divide(cute.make_layout((m, 8)), (4, 8)))
    theirs = _printed(capsys, lambda: f(64))["zd"]
    ours = str(wb.zipped_divide(M((wb.Dyn(divisibility=16), 8)), (4, 8)))
    assert re.sub(r"\{[^}]*\}", "", ours) == re.sub(r"\{[^}]*\}", "", theirs), (ours, theirs)
    assert "?{div=4}" in ours and "div=4" not in theirs


# item 11 (07): an extent past 2^31 - 1: CuTe DSL prints a 32-bit ?, we keep 64 bits
def test_huge_extent_is_i64_here_and_not_in_cute_dsl():
    x = torch.zeros(1).expand(2**31 + 8)
    theirs = str(cute_runtime.from_dlpack(x).mark_layout_dynamic())
    assert re.search(r" o \(\?\):\(0\)>$", theirs), theirs
    assert str(wb.from_dlpack(x).mark_layout_dynamic().layout) == "(?{i64}):(0)"


# item 11 (07): the refusals 07 shows are ValueError here and RuntimeError in CuTe DSL, with the same message
@pytest.mark.parametrize("make", [
    lambda fd: fd(torch.empty(6).as_strided((2, 3), (1, 1))).mark_layout_dynamic(),
    lambda fd: fd(torch.empty(6, 8)).mark_layout_dynamic(leading_dim=0),
    lambda fd: fd(torch.empty(16, 8)).mark_compact_shape_dynamic(0, divisibility=3),
])
def test_refusals_are_valueerror_where_cute_dsl_raises_runtimeerror(make):
    with pytest.raises(RuntimeError) as theirs:
        make(cute_runtime.from_dlpack)
    with pytest.raises(ValueError) as ours:
        make(wb.from_dlpack)
    assert type(theirs.value) is RuntimeError and not isinstance(ours.value, RuntimeError)
    assert str(theirs.value).split("(")[0].strip()[:20] == str(ours.value).split("(")[0].strip()[:20]


# item 3 (06): CuTe's GMMA atoms swizzle bytes (M = 4); ours swizzle elements, equal only on a 1024-byte base
def test_gmma_atoms_are_byte_swizzles_equal_to_ours_on_an_aligned_base(cute_says):
    for kind, bits, esize, dt in (("K_SW128", 3, 2, wb.Float16), ("K_SW64", 2, 2, wb.Float16),
                                  ("K_SW32", 1, 2, wb.Float16), ("K_SW128", 3, 4, wb.Float32)):
        key = f"{kind}_{'f16' if esize == 2 else 'f32'}"
        theirs = cute_says[key]
        assert theirs.startswith(f"S<{bits},4,3> o 0 o "), theirs
        ours = wb.gmma_smem_atom(f"Layout_{kind}_Atom", dt)
        outer = P(theirs.split(" o ")[2])
        assert str(ours.outer if hasattr(ours, "outer") else ours).endswith(str(outer))
        sw_bytes, sw_elems = wb.Swizzle(bits, 4, 3), wb.Swizzle(bits, 4 - (esize.bit_length() - 1), 3)
        n = wb.size(outer)
        align = 2 ** (bits + 4 + 3)
        for base in (0, align, 3 * align):
            assert all(sw_bytes(base + esize * e) == base + esize * sw_elems(e) for e in range(n))
        assert not all(sw_bytes(align // 2 + esize * e) == align // 2 + esize * sw_elems(e) for e in range(n))
        assert str(ours.inner) == f"S<{bits},{4 - (esize.bit_length() - 1)},3>"      # ours: over element offsets
        assert str(ours).startswith(f"Sw<{bits},4,3> o smem_ptr[{8 * esize}b]")        # printed as CuTe C++ spells it


# item 12 (06): CuTe's print_latex(TiledMMA) draws A to the left of C and B (K x N) above C
def test_print_latex_mma_puts_b_above_c_and_a_left():
    import importlib.util
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None:
        pytest.skip("the CUTLASS headers (nvidia-cutlass) are not installed")
    src = (pathlib.Path(spec.submodule_search_locations[0]) / "source/include/cute/util/print_latex.hpp").read_text()
    body = src[src.index("print_latex_mma("):]
    assert "x={(0cm,-1cm)},y={(1cm,0cm)}" in body          # first coordinate down the page, second across
    assert "int(m), int(k-K-1)" in body                    # A: rows m, columns left of C
    assert "int(k)-int(K)-1, int(n)" in body               # B: rows k above C, columns n (K x N)


# item 13 (06): the RS variant reads A from registers, with a thread/value layout, so A must be loaded there
def test_rs_gmma_reads_a_from_registers():
    rs, ss = wb.mma_atom("SM90_64x64x16_F32F16F16_RS"), wb.mma_atom("SM90_64x64x16_F32F16F16_SS")
    assert rs.a_source == "rmem" and ss.a_source == "smem"
    assert set(rs.tv_layout_A.offsets().tolist()) == set(range(64 * 16))      # every element held by a thread


# items 5 and 14 (05): under S<5,0,5> each aligned 4-float chunk stays whole but permuted: no 16-byte load,
# and the 32-bit loads CuTe falls back to are conflict-free; suggest_swizzle's B stops at log2(accesses per line)
def test_s505_permutes_within_chunks_and_scalar_loads_are_conflict_free():
    tile32 = M((32, 32), stride=(32, 1))
    sw = wb.make_composed_layout(wb.Swizzle(5, 0, 5), 0, tile32)
    permuted = 0
    for r in range(32):
        for k in range(8):
            got = [sw((r, 4 * k + j)) for j in range(4)]
            base = min(got)
            assert base % 4 == 0 and sorted(got) == list(range(base, base + 4))
            permuted += got != list(range(base, base + 4))
    assert permuted > 0
    ld32 = wb.make_tiled_copy(wb.copy_atom("UniversalCopy_U32", wb.Float32), (32, 1), (1, 32))
    assert wb.bank_conflicts(ld32, sw).max_ways == 1
    for atom, top in (("UniversalCopy_U32", 5), ("UniversalCopy_U128", 3)):
        tc = wb.make_tiled_copy(wb.copy_atom(atom, wb.Float32), (32, 1), (1, 32))
        assert max(s.bits for s in wb.suggest_swizzle(tc, tile32, wb.Float32).compared) == top


# item 1 (08): rung 3's tile in the row-major tensor is one 512-byte segment per warp request, fully used
def test_rung3_reads_512_byte_row_segments():
    widgets = pytest.importorskip("widgets")
    tiler, tv = E.LADDER_TV
    rep = widgets.TVLayoutView(tv, M(tiler, stride=(8192, 1)), element_type=wb.Float32).report
    assert rep.bytes_per_request == 512 and rep.sectors_per_request == 16 and rep.efficiency == 1.0
    shape_only = widgets.TVLayoutView(tv, tiler, element_type=wb.Float32).report
    assert shape_only.efficiency < 1.0          # what the notebook showed before: a column-major tile


# item 9 (08): consecutive blocks of rung 3 are 128 KiB apart
def test_rung3_blocks_are_128_kib_apart():
    tiler, _ = E.LADDER_TV
    tiles = wb.zipped_divide(M((8192, 8192), stride=(8192, 1)), tiler)[1]
    assert (tiles(1) - tiles(0)) * 4 == 128 * 1024


# item 10 (08/05): one warp instruction is one request; 32 floats from 32 rows touch 32 sectors, consecutive 4
def test_one_request_per_warp_instruction():
    widgets = pytest.importorskip("widgets")
    col = widgets.TVLayoutView(M((32, 1), stride=(1, 32)), M((32, 1), stride=(8192, 1)), element_type=wb.Float32).report
    row = widgets.TVLayoutView(M((32, 1), stride=(1, 32)), M((32, 1), stride=(1, 32)), element_type=wb.Float32).report
    assert col.sectors_per_request == 32 and row.sectors_per_request == 4
    assert col.bytes_per_request == row.bytes_per_request == 128


# item 8 (08): the measured curve, once committed, spans small to large and shows the latency is not constant
def test_committed_inflight_curve_supports_the_text():
    f = ROOT / "benchmarks" / "results" / "inflight-H200.json"
    if not f.exists():
        pytest.skip("benchmarks/results/inflight-H200.json is not committed yet (the lead runs it on an H200)")
    data = json.loads(f.read_text())
    curve = data["suites"]["inflight"] if "suites" in data else data
    pts = curve["points"]
    assert all(p["correct"] for p in pts)
    sizes = [p["bytes_in_flight_per_sm"] for p in pts]
    assert min(sizes) <= 2048 and max(sizes) >= 64 * 1024
    lat = [p["implied_latency_ns"] for p in pts]
    assert max(lat) > 1.1 * min(lat)
    assert max(p["fraction_of_d2d"] for p in pts) >= 0.9
