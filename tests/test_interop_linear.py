"""Triton linear layouts: every SM80 atom's TV layouts and the GMMA shared-memory atoms round-trip through F2
bases; the bases are checked against Triton's own LinearLayout where the triton package imports (CPU), and
against brute-force evaluation of both sides always; layouts that are not F2-linear are refused by name."""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.atoms import copy_atom_names, mma_atom_names
from workbench.atoms.smem import GMMA_SMEM_ATOMS


def _sm80_layouts():
    out = {}
    for n in mma_atom_names(include_gmma=False):
        if n.startswith(("SM80", "SM75", "SM89")):
            a = wb.mma_atom(n)
            for k in "ABC":
                out[f"{n}.{k}"] = getattr(a, f"tv_layout_{k}")
    for n in copy_atom_names():
        if "LDSM" in n or "STSM" in n:
            c = wb.copy_atom(n, wb.Float16)
            out[f"{n}.src"], out[f"{n}.dst"] = c.layout_src_tv, c.layout_dst_tv
    for name in GMMA_SMEM_ATOMS:
        for t in (wb.Uint8, wb.Float16, wb.Float32):
            out[f"{name}<{t}>"] = wb.gmma_smem_atom(name, t)
    return out


LAYOUTS = _sm80_layouts()


def _brute(ll, layout, dims):
    """Every index: the layout's offset equals the XOR of the bases of its bits."""
    offs = layout.offsets()
    widths = [s.bit_length() - 1 for _, s in dims]
    for i in range(layout.size):
        inputs, j = {}, 0
        for (name, _), w in zip(dims, widths):
            inputs[name] = inputs.get(name, 0) | ((i >> j) & ((1 << w) - 1))
            j += w
        assert ll(**inputs) == (int(offs[i]),), (layout, i)


def _brute_shared(ll, layout):
    """Every coordinate c of the memory layout: the shared layout sends offset layout(c) back to c (Triton's
    direction, offset -> (dim0, dim1))."""
    offs = layout.offsets()
    split = [s for _, s in ll.out_dims]
    for i in range(layout.size):
        crd, r = [], i
        for s in split:
            crd.append(r % s)
            r //= s
        assert ll(offset=int(offs[i])) == tuple(crd), (layout, i)


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_round_trip(name):
    L = LAYOUTS[name]
    ll = wb.to_linear_layout(L)
    if type(L) is wb.ComposedLayout:     # a memory layout: exported as offset -> coordinate
        assert ll.kind == "shared" and ll.direction == "offset -> (dim0, dim1)"
        _brute_shared(ll, L)
        back = wb.from_linear_layout(ll, element_bits=L.ptr_bits)
        assert back == L, (name, back)
        return
    _brute(ll, L, [(k, ll.in_size(k)) for k in ll.bases])
    back = wb.from_linear_layout(ll)
    assert back.size == L.size and list(back.offsets()) == list(L.offsets()), (name, back)


def test_shared_layouts_run_offset_to_coordinate():
    """The 128-byte-swizzled 8x64 fp16 tile: Triton's NVMMASharedLayout(128, 16) bases (offset -> (row, col)), not
    CuTe's coordinate -> offset; the printout says so; a rank-1 layout is a memory layout too."""
    ll = wb.to_linear_layout(wb.gmma_smem_atom("Layout_K_SW128_Atom", wb.Float16))
    assert ll.bases == {"offset": [(0, 1), (0, 2), (0, 4), (0, 8), (0, 16), (0, 32), (1, 8), (2, 16), (4, 32)]}
    assert repr(ll).startswith("LinearLayout[shared: offset -> (dim0, dim1)]")
    assert "offset &rarr; (dim0, dim1)" in ll._repr_html_()
    one = wb.to_linear_layout(wb.make_layout((2, 4), stride=(4, 1)), dims=[("offset", 8)])
    assert one.bases == {"offset": [(0, 1), (0, 2), (1, 0)]}
    with pytest.raises(ValueError, match="bijection onto \\[0, 8\\)"):
        wb.to_linear_layout(wb.make_layout(8, stride=2))
    with pytest.raises(ValueError, match="'offset' alone"):
        wb.to_linear_layout(wb.make_layout((4, 2)), dims=[("offset", 4), ("lane", 2)])
    with pytest.raises(ValueError, match="bijection onto its 4 coordinates"):
        wb.from_linear_layout({"offset": [(0, 1), (0, 1)]}, out_shape=(2, 2))


def test_a_tv_layout_gets_lane_warp_register_bases():
    mma = wb.make_tiled_mma(wb.mma_atom("SM80_16x8x16_F32F16F16F32_TN"), wb.make_layout((2, 2, 1)))
    ll = wb.to_linear_layout(mma.tv_layout_C_tiled, out_shape=(32, 16))
    assert set(ll.bases) == {"lane", "warp", "register"} and ll.out_dims == (("dim0", 32), ("dim1", 16))
    assert ll.bases["lane"][0] == (0, 2)   # lane 1 holds column 2 of the C tile
    assert "<table>" in ll._repr_html_()


def test_swizzles_are_linear_and_come_back_swizzled():
    atom = wb.gmma_smem_atom("Layout_K_SW128_Atom", wb.Float16)
    back = wb.from_linear_layout(wb.to_linear_layout(atom, dims=[("offset", 512)]))
    assert type(back) is wb.ComposedLayout and list(back.offsets()) == list(atom.offsets())
    assert wb.from_linear_layout(wb.to_linear_layout(atom), element_bits=16) == atom


@pytest.mark.parametrize("layout, match", [
    (wb.make_layout((6, 4)), "power-of-two"),
    (wb.make_layout((4, 4), stride=(3, 8)), "not F2-linear: L\\(3\\) = 9"),
])
def test_refusals_name_the_obstacle(layout, match):
    with pytest.raises(ValueError, match=match):
        wb.to_linear_layout(layout, dims=[("register", layout.size)])


def test_overlapping_bases_come_back_as_a_swizzle_or_are_refused():
    back = wb.from_linear_layout({"register": [3, 1]})   # S<1,0,1> o (2,2):(2,1)
    assert [back(i) for i in range(4)] == [0, 3, 1, 2]
    with pytest.raises(ValueError, match="overlap in bits"):
        wb.from_linear_layout({"register": [1, 1]})   # XOR gives 0,1,1,0: no sum of strides does


def test_against_tritons_linear_layout():
    lt = pytest.importorskip("triton._C.libtriton", reason="triton is not installed").linear_layout
    checked = 0
    for name, L in LAYOUTS.items():
        ll = wb.to_linear_layout(L)
        outs = [n for n, _ in ll.out_dims]
        tri = lt.LinearLayout.from_bases([(k, [list(b) for b in v]) for k, v in ll.bases.items()], outs,
                                         [s for _, s in ll.out_dims], False)
        for k in ll.bases:   # the same dims and sizes on Triton's side
            assert tri.get_in_dim_names().count(k) == 1
        if ll.kind == "shared":
            offs = L.offsets()
            for i in range(L.size):
                assert tri.apply({"offset": int(offs[i])}) == dict(zip(outs, ll(offset=int(offs[i])))), (name, i)
        else:
            for k in ll.bases:
                for v in range(ll.in_size(k)):
                    assert tri.apply({**{d: 0 for d in ll.bases}, k: v}) == dict(zip(outs, ll(**{k: v}))), (name, k)
        checked += 1
    assert checked == len(LAYOUTS)


# -- bases and inputs are checked where they enter ------------------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_ENTRY = st.one_of(st.integers(-3, 40), st.floats(-2, 40), st.just(float("nan")), st.booleans())


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_ENTRY, min_size=1, max_size=3).map(tuple), min_size=1, max_size=4))
def test_from_linear_layout_takes_only_bases_inside_the_outputs(bases):
    """A basis is accepted only as ints in [0, size) per output (2 outputs of 4 and 8); otherwise a clear error, never
    a layout that points elsewhere."""
    shape = (4, 8)
    ok = all(len(b) == 2 and all(type(x) is int and 0 <= x < s for x, s in zip(b, shape)) for b in bases)
    try:
        lay = wb.from_linear_layout({"lane": list(bases)}, out_shape=shape)
    except (ValueError, TypeError) as e:
        assert not ok or "overlap" in str(e), (bases, e)
        return
    assert ok, bases
    flat = [b[0] + 4 * b[1] for b in bases]
    for i in range(1 << len(bases)):                  # the layout is the XOR of its bases at every index
        want = 0
        for j, f in enumerate(flat):
            if i >> j & 1:
                want ^= f
        got = lay(i)
        assert got == want or not all(f & g == 0 for k, f in enumerate(flat) for g in flat[k + 1:])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["lane", "warp", "register", "bogus"]), st.integers(-2, 9))
def test_a_linear_layout_answers_only_for_its_own_inputs(dim, v):
    ll = wb.to_linear_layout(wb.make_layout((4, 2), stride=(2, 1)), dims=[("lane", 4), ("warp", 2)])
    if dim in ("lane", "warp") and 0 <= v < ll.in_size(dim):
        ll(**{dim: v})
    else:
        with pytest.raises(ValueError, match="expected (input dimensions among|lane in|warp in)"):
            ll(**{dim: v})
