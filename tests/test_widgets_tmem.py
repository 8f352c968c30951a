"""The Blackwell views (widgets/tmem_view.py): TmemView draws every accumulator element where the TMEM model puts it,
and every register of a tcgen05.ld where the CPU executor's tcgen05.ld reads it from; MMAView of UMMA atoms (one
issuer, a 2-SM pair side by side); the UMMA descriptor views name every field.  Nothing here ran on a Blackwell GPU."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

pytest.importorskip("ipywidgets", reason="the widgets need the Jupyter stack (make test installs it)")
pytest.importorskip("anywidget", reason="the widgets need anywidget (make test installs it)")

import workbench as wb
from widgets import MMAView, TmemView, UmmaInstrDescView, UmmaSmemDescView
from widgets.svg import SVG_MAX_BYTES
from widgets.tmem_view import copy_register_cells
from workbench.atoms.tmem import TmemAllocator
from workbench.atoms.umma_desc import make_umma_desc


def _atom(name="SM100_MMA_F16BF16_SS", m=128, n=256):
    return wb.mma_atom(name, a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32, m=m, n=n)


def _texts(svg):
    return " ".join(e.text for e in ET.fromstring(svg).iter() if e.text)


@pytest.mark.parametrize("name,m,n,tile", [("SM100_MMA_F16BF16_SS", 128, 256, (128, 256)),
                                           ("SM100_MMA_F16BF16_SS", 64, 64, (128, 128)),
                                           ("SM100_MMA_F16BF16_2x1SM_SS", 256, 128, (256, 128)),
                                           ("SM100_MMA_F16BF16_2x1SM_SS", 128, 64, (128, 64))])
def test_every_accumulator_element_is_drawn_where_the_tmem_model_puts_it(name, m, n, tile):
    a = _atom(name, m, n)
    acc = a.make_fragment_C(a.partition_shape_C(tile))
    base = wb.atoms.tmem.tmem_address(0, 128) if acc.columns()[-1] < 256 else 0
    acc = acc.with_base(base)
    v = TmemView(acc)
    shape = a.partition_shape_C(tile)
    (mm, nn), tm, tn = shape[0], shape[1], shape[2]
    drawn = 0
    for i in range(wb.size(acc.layout)):
        lane, col, sub = acc.lane_column(i)
        cell = v.cell(lane, col)
        assert cell["index"] == i and sub == 0
        crd = wb.idx2crd(i, ((mm, nn), tm, tn))    # CuTe's natural coordinate of the fragment index
        (mi, ni), ti, tj = crd
        assert cell["mn"] == (mi + mm * ti, ni + nn * tj), i
        assert cell["address"] == acc.address(i)
        assert cell["allocation"] == 0
        drawn += 1
    occupied = int((v.cells["index"] >= 0).sum())
    assert occupied == drawn == wb.size(acc.layout)          # no cell drawn that the model does not put there
    assert v.allocations == [(wb.atoms.tmem.tmem_column(base), max(32, 1 << (len(acc.columns()) - 1).bit_length()))]


def test_an_allocator_colours_its_allocations_and_two_buffers_are_labelled():
    alloc = TmemAllocator()
    first = alloc.allocate(256)
    second = alloc.allocate(256)
    a = _atom()
    acc = a.make_fragment_C(a.partition_shape_C((128, 512)))   # a 128 x 512 C: two N tiles side by side
    v = TmemView(acc.with_base(first), allocator=alloc)
    assert v.allocations == [(0, 256), (256, 256)] and second == 256
    assert v.cell(3, 260)["mn"] == (3, 260) and v.cell(3, 260)["buffer"] == 0
    acc = a.make_fragment_C(a.partition_shape_C((128, 256, 2)))   # two 256-column buffers (a further mode)
    v = TmemView(acc.with_base(first), allocator=alloc)
    assert v.cell(3, 260)["mn"] == (3, 4) and v.cell(3, 260)["buffer"] == 1 and v.cell(3, 260)["allocation"] == 1
    assert v.source.text(3, 260) == "1:(3,4)" and v.source.text(3, 4) == "(3,4)"
    legend = v.source.legend
    assert "allocation 1: columns 256..511" in str(legend["entries"])


@pytest.mark.parametrize("copy_name", ["SM100_TMEM_LOAD_32dp32b16x", "SM100_TMEM_LOAD_32dp32b4x"])
def test_each_thread_register_is_drawn_where_the_cpu_executor_reads_it_from(copy_name):
    """C(m, n) = m + 256 n through a real tcgen05.mma on the CPU executor, then tcgen05.ld of it: every register of
    every thread holds the C(m, n) of the cell the view draws for that (thread, register)."""
    UM, UN, UK = 128, 64, 16
    atom = _atom(m=UM, n=UN)
    acc_l = atom.make_fragment_C(atom.partition_shape_C((UM, UN)))
    chunk = acc_l[(None, None), 0, 0]
    tc = wb.make_tmem_copy(wb.copy_atom(copy_name, wb.Float32), chunk)
    t_, v_, idx = copy_register_cells(tc, chunk)
    nreg = int(v_.max()) + 1
    sa = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW32_Atom", wb.Float16), (UM, UK))
    sb = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW32_Atom", wb.Float16), (UN, UK))

    @wb.kernel
    def ld(a, b, out):
        t = wb.thread_idx().x
        sA = wb.shared_tensor(wb.Float16, sa)
        sB = wb.shared_tensor(wb.Float16, sb)
        bar = wb.shared_tensor(wb.Uint64, 1)
        holder = wb.shared_tensor(wb.Uint32, 1)
        for i in range(t, UM * UK, 128):
            sA[i % UM, i // UM] = a[i % UM, i // UM]
        for i in range(t, UN * UK, 128):
            sB[i % UN, i // UN] = b[i % UN, i // UN]
        if t < 32:
            wb.tmem_alloc(holder, 64)
            wb.tmem_relinquish_alloc_permit()
        if t == 0:
            wb.mbarrier_init(bar, 0, 1)
            wb.mbarrier_init_fence()
        wb.fence_proxy_async()
        wb.tcgen05_fence_before()
        wb.sync_threads()
        wb.tcgen05_fence_after()
        addr = holder[0]
        acc = wb.make_tmem_tensor(addr, chunk)
        if t == 0:
            wb.gemm(atom, acc, sA, sB, acc, accumulate=False)
            wb.tcgen05_commit(bar, 0)
        wb.mbarrier_wait(bar, 0, 0)
        wb.tcgen05_fence_after()
        frag = wb.make_fragment(nreg, wb.Float32)
        wb.copy(tc, acc, frag)
        wb.tcgen05_wait_ld()
        for j in range(nreg):
            out[t, j] = frag[j]
        wb.tcgen05_fence_before()
        wb.sync_threads()
        if t < 32:
            wb.tmem_dealloc(addr, 64)

    a = np.zeros((UM, UK), np.float16)
    b = np.zeros((UN, UK), np.float16)
    a[:, 0], a[:, 1] = np.arange(UM), 256
    b[:, 0], b[:, 1] = 1, np.arange(UN)
    out = np.full((128, nreg), np.nan, np.float32)
    ld[1, 128](a, b, out)
    view = TmemView(acc_l, copy=tc)
    for t in range(128):
        for reg, lane, col in view.thread_cells(t):
            mn = view.cell(lane, col)["mn"]
            assert out[t, reg] == mn[0] + 256 * mn[1], (t, reg, lane, col)
            assert lane // 32 == (t // 32) % 4                     # a warp reads only its own quarter
    assert len(t_) == 128 * nreg and sorted(set(idx.tolist())) == list(range(UM * UN))


def test_a_16dp_copy_covers_the_tile_once_each_warp_in_its_quarter():
    """(Kernels lower only the 32dp32b atoms so far: the 16dp copies are checked against the copy's own tiling.)"""
    a = _atom(m=128, n=64)
    chunk = a.make_fragment_C(a.partition_shape_C((128, 64)))[(None, None), 0, 0]
    tc = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_LOAD_16dp256b1x", wb.Float32), chunk)
    t, v, idx = copy_register_cells(tc, chunk)
    view = TmemView(chunk, copy=tc)
    lanes = np.array([chunk.lane_column(int(i))[0] for i in idx])
    assert sorted(idx.tolist()) == list(range(128 * 64))                 # every element once
    assert set(lanes // 32 == (t // 32) % 4) == {True}
    V = wb.size(tc.layout_dst_tv_tiled.shape[1])                         # registers of one copy a thread
    first = (v // V) % 2 == 0                                            # 16dp: 16 lanes a quarter, then the next 16
    assert set(lanes[first] % 32 < 16) == {True} and set(lanes[~first] % 32 >= 16) == {True}
    for k in range(0, len(t), 97):
        lane, col, _ = chunk.lane_column(int(idx[k]))
        assert view.cell(lane, col)["thread"] == t[k] and view.cell(lane, col)["register"] == v[k]


def test_the_static_picture_is_readable_at_the_real_size_and_bounded():
    a = _atom()
    acc = a.make_fragment_C(a.partition_shape_C((128, 256)))
    tc = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_LOAD_32dp32b8x", wb.Float32), acc[(None, None), 0, 0])
    v = TmemView(acc, copy=tc, thread=37)
    svg = v.to_svg()
    assert len(svg) < SVG_MAX_BYTES
    text = _texts(svg)
    assert "lanes 32-63: warp 1" in text and "zoom: lanes 32..63, columns 0..15" in text
    assert "(37,5)" in text and "red: thread 37's cells" in text and "no Blackwell GPU" in text
    assert all(lane == 37 for _, lane, _ in v.thread_cells(37))
    v.thread = None
    assert "zoom: lanes 0..31" in _texts(v.to_svg())
    v2 = TmemView(acc, copy=tc, show="tv", window=(96, 240))
    t2 = _texts(v2.to_svg())
    assert "zoom: lanes 96..127, columns 240..255" in t2 and "T100V" in t2
    assert v2.describe(100, 250).endswith(f"-> thread 100 register {v2.cell(100, 250)['register']}")


def test_bad_input_is_refused():
    a = _atom()
    acc = a.make_fragment_C(a.partition_shape_C((128, 256)))
    with pytest.raises(TypeError, match="expected a TMEM tensor"):
        TmemView(a)
    with pytest.raises(ValueError, match=r"expected thread None \(this view has no copy="):
        TmemView(acc, thread=3)
    with pytest.raises(ValueError, match="expected color_by one of allocation, tensor, quarter, but"):
        TmemView(acc, color_by="thread")
    with pytest.raises(ValueError, match="outside the 128 x 64 grid"):
        TmemView(acc, columns=64)
    with pytest.raises(ValueError, match=r"window=\(lane, column\)"):
        TmemView(acc, window=(128, 0))
    with pytest.raises(TypeError, match="allocator="):
        TmemView(acc, allocator="all")
    with pytest.raises(ValueError, match="a lane in"):
        TmemView(acc).cell(0, 512)


def test_mma_view_of_umma_atoms_one_issuer_and_the_pair_side_by_side():
    one = MMAView(_atom())
    names = [p["name"] for p in one.panels]
    assert names == ["A", "B", "C", "tmem0"] and one._num_threads == 1
    assert set(one.panels[2]["thr"]) == {0} and "one thread of the CTA issues" in one.panels[2]["note"]
    pair = MMAView(_atom("SM100_MMA_F16BF16_2x1SM_SS", 256, 128))
    assert [p["name"] for p in pair.panels] == ["A", "B", "C", "tmem0", "tmem1"]
    c = np.asarray(pair.panels[2]["thr"]).reshape(256, 128)
    assert (c[:128] == 0).all() and (c[128:] == 1).all()            # CTA 0 rows 0..127, CTA 1 rows 128..255
    t1 = np.asarray(pair.panels[4]["val"]).reshape(128, 128)
    assert t1[5, 7] == (128 + 5) + 256 * 7                          # CTA 1's lane 5, column 7 holds C(133, 7)
    ts = MMAView(wb.mma_atom("SM100_MMA_F16BF16_TS", a_type=wb.Float16, b_type=wb.Float16, c_type=wb.Float32,
                             m=128, n=128))
    assert "TMEM" in ts.panels[0]["title"]
    text = _texts(pair.to_svg())
    assert "C in CTA 1's TMEM" in text and "never run on a Blackwell GPU" in text


def test_descriptor_views_name_every_field():
    tile = wb.tile_to_shape(wb.umma_smem_atom("Layout_K_SW128_Atom", wb.Float16), (128, 64))
    d = make_umma_desc(tile, wb.Float16, "K")
    v = UmmaSmemDescView(d, tile, wb.Float16)
    rows = dict(v.rows())
    assert rows["layout_type [61,64)"].startswith(f"{d.layout_type} = SWIZZLE_128B")
    assert rows["stride_byte_offset [32,46)"].startswith(f"{d.stride_byte_offset} = {d.sbo_bytes} B")
    assert rows["word"] == f"0x{d.encode():016x}" and rows["version [46,48)"].startswith("1")
    text = _texts(v.to_svg())
    assert "SWIZZLE_128B" in text and f"0x{d.encode():016x}" in text
    bits = "".join(e.text for e in ET.fromstring(v.to_svg()).iter() if e.text in ("0", "1"))
    assert len(bits) >= 64
    a = wb.mma_atom("SM100_MMA_F16BF16_SS", a_type=wb.BFloat16, b_type=wb.BFloat16, c_type=wb.Float32, m=128, n=256,
                    a_major="MN")
    iv = UmmaInstrDescView(a)
    r = dict(iv.rows())
    assert r["a_format [7,10)"] == "1 = BF16 (kind::f16)" and r["c_format [4,6)"] == "1 = F32"
    assert r["a_major [15]"] == "1 = MN-major" and r["b_major [16]"] == "0 = K-major"
    assert r["n_dim [17,23)"] == "32 = N >> 3: N=256" and r["m_dim [24,29)"] == "8 = M >> 4: M=128"
    assert r["word"].startswith(f"0x{a.instr_desc.encode():08x}")
    bare = dict(UmmaInstrDescView(a.instr_desc).rows())
    assert "BF16 (f16)" in bare["a_format [7,10)"] and "S8 (i8)" in bare["a_format [7,10)"]
    with pytest.raises(TypeError, match="expected a UmmaSmemDescriptor"):
        UmmaSmemDescView(a.instr_desc)
    with pytest.raises(TypeError, match="expected a UMMA atom"):
        UmmaInstrDescView(d)
    with pytest.raises(ValueError, match="element_type="):
        UmmaSmemDescView(d, tile)


# ---- block-scaled UMMA: scale-factor fragments, MMAView, the block-scaled instruction descriptor -----------------

def _bs_atom(name="SM100_MMA_MXF8F6F4_SS", m=128, n=128, **kw):
    types = dict(a_type=wb.Float4E2M1FN, b_type=wb.Float4E2M1FN) if "MXF4" in name else \
        dict(a_type=wb.Float8E4M3FN, b_type=wb.Float8E4M3FN)
    kw.setdefault("sf_type", wb.Float8E8M0FNU)
    return wb.mma_atom(name, c_type=wb.Float32, m=m, n=n, **types, **kw)


def _sf_expected(frag, i):
    """(row, K block, copy, buffer) of index i from CuTe's natural coordinate of the fragment's shape:
    ((MN x copies, (VecSize, NSF)), num_MMA_MN, num_MMA_K, ...) with the first mode j = row + MMA_MN * copy."""
    shape = frag.layout.shape
    crd = wb.idx2crd(i, shape)
    first = shape[0][0]
    nfirst, rep = wb.size(first), wb.size(first[-1])
    mn = nfirst // rep
    j = wb.crd2idx(crd[0][0], first)
    _, s = crd[0][1]
    nsf = wb.size(shape[0][1][1])
    tm = wb.crd2idx(crd[1], shape[1])
    tk = wb.crd2idx(crd[2], shape[2])
    buf = wb.crd2idx(tuple(crd[3:]), tuple(shape[3:])) if len(shape) > 3 else 0
    return j % mn + mn * tm, s + nsf * tk, j // mn, buf


@pytest.mark.parametrize("name,m,n,vs,tile_k", [("SM100_MMA_MXF8F6F4_SS", 128, 128, None, 256),
                                                ("SM100_MMA_MXF4_SS", 128, 64, 16, 128),
                                                ("SM100_MMA_MXF4_SS", 128, 256, 32, 128),
                                                ("SM100_MMA_MXF8F6F4_2x1SM_SS", 256, 128, None, 128),
                                                ("SM100_MMA_MXF4_2x1SM_SS", 128, 64, 16, 64)])
def test_every_scale_factor_byte_is_drawn_where_the_tmem_model_puts_it(name, m, n, vs, tile_k):
    """C, SFA and SFB of a block-scaled MMA in one TMEM, each in its allocation: every index of each fragment is
    drawn at the (lane, column, byte) the TMEM model gives, labelled with the row and K block CuTe's coordinates
    give (4x1 data path: one copy a lane quarter; 2-SM M=128 SFB: the 2x2 path)."""
    a = _bs_atom(name, m, n, **({"vs": vs} if vs else {}))
    tile = (m, n, tile_k)
    alloc = TmemAllocator()
    acc = a.make_fragment_C(a.partition_shape_C((m, n)))
    acc = acc.with_base(alloc.allocate(max(32, 1 << (len(acc.columns()) - 1).bit_length())))
    base = alloc.allocate(32)
    sfs = {}
    if a.thr_id.size == 1 or m == 256:      # CUTLASS's SFA smem layout takes 128-row blocks a CTA (2-SM M=128: none)
        sfs["SFA"] = a.make_fragment_SFA(wb.shape(a.smem_layout_SFA(tile))).with_base(base)
        base += len(sfs["SFA"].columns())
    sfs["SFB"] = a.make_fragment_SFB(wb.shape(a.smem_layout_SFB(tile))).with_base(base)
    v = TmemView({"C": acc, **sfs}, allocator=alloc, color_by="tensor")
    for name_, frag in sfs.items():
        seen = set()
        n_all = wb.size(frag.layout)
        nfirst, vsz = wb.size(frag.layout.shape[0][0]), wb.size(frag.layout.shape[0][1][0])
        idx = np.arange(n_all)
        sibling = idx % nfirst + nfirst * vsz * (idx // (nfirst * vsz))   # the same index at VecSize coordinate 0
        offs = np.asarray(frag.layout.offsets())
        assert (offs[idx] == offs[sibling]).all()          # one factor for all VecSize values: every index checked
        for i in np.unique(sibling).tolist():
            lane, col, byte = frag.lane_column(i)
            cell = v.cell(lane, col)
            assert cell["tensor"] == name_ and cell["allocation"] == 1, (name_, i)
            row, block, copy, buf = _sf_expected(frag, i)
            assert (byte, row, block, copy, buf) in cell["sf"], (name_, i, cell["sf"])
            seen.add((lane, col, byte))
        subs = v.all_cells[v.names.index(name_)]["subs"]
        drawn = {(int(ln), int(c), int(s)) for ln, c, s in zip(*np.nonzero(subs >= 0))}
        assert drawn == seen                                      # no byte drawn that the model does not put there
        # every factor sits once in each copy, the copies in distinct lane quarters (4x1) or 32-lane halves (2x2)
        rows = {}
        for ln, c, s in seen:
            for s2, r, bl, cp, b in v.cell(ln, c)["sf"]:
                if s2 == s:
                    rows.setdefault((r, bl, b), set()).add((cp, ln // 32))
        copies = 2 if a.sf_alloc.endswith("2by2") and name_ == "SFB" else 4
        assert {len(x) for x in rows.values()} == {copies}
        assert all(len({q for _, q in x}) == copies for x in rows.values())
    assert v.cell(0, 0)["tensor"] == "C" and v.cell(0, 0)["mn"] == (0, 0)
    text = _texts(v.to_svg())
    assert f"colour: tensor ({', '.join(['C'] + list(sfs))})" in text and "scale factors: Float8E8M0FNU" in text


def test_tensors_sharing_a_cell_and_sf_in_a_pair_are_refused():
    a = _bs_atom()
    sfa = a.make_fragment_SFA(wb.shape(a.smem_layout_SFA((128, 128, 128))))
    sfb = a.make_fragment_SFB(wb.shape(a.smem_layout_SFB((128, 128, 128))))
    with pytest.raises(ValueError, match="tensors 'SFA' and 'SFB' both hold lane 0, column 0"):
        TmemView({"SFA": sfa, "SFB": sfb})
    with pytest.raises(TypeError, match="a dict of named TMEM tensors"):
        TmemView({"SFA": a})
    pair = _atom("SM100_MMA_F16BF16_2x1SM_SS", 256, 128)
    with pytest.raises(ValueError, match="draw scale-factor fragments one CTA at a time"):
        TmemView({"SFA": sfa}, pair=pair)
    with pytest.raises(TypeError, match="pair= a 2x1SM UMMA atom"):
        TmemView(sfa, pair=a)


def test_mma_view_of_block_scaled_atoms_says_which_factor_scales_which_block():
    for name, m, n, vs in (("SM100_MMA_MXF8F6F4_SS", 128, 64, None), ("SM100_MMA_MXF4_SS", 128, 64, 16),
                           ("SM100_MMA_MXF8F6F4_2x1SM_SS", 256, 128, None)):
        a = _bs_atom(name, m, n, **({"vs": vs} if vs else {}))
        view = MMAView(a)
        p = {q["name"]: q for q in view.panels}
        k = a.shape_mnk[2]
        nb = k // a.sf_vec_size
        assert list(p) == ["A", "B", "C", "SFA", "SFB"] + [f"tmem{c}" for c in range(a.thr_id.size)] + ["tmem_SFA",
                                                                                                        "tmem_SFB"]
        for op, rows in (("A", m), ("B", n)):
            fill = np.asarray(p[op]["fill"]).reshape(rows, k)
            assert (fill == np.arange(k)[None, :] // a.sf_vec_size).all()      # value (r, kk) scaled by block kk // vs
            sf = p["SF" + op]
            assert (sf["rows"], sf["cols"]) == (rows, nb)
            assert np.asarray(sf["val"]).reshape(rows, nb)[rows - 1, nb - 1] == rows - 1 + rows * (nb - 1)
        kt = max(k, 4 * a.sf_vec_size)
        for op, rows in (("A", m), ("B", n)):     # TMEM panels: byte (lane, 4 c + b) holds SF(r, j), V = r + rows j
            frag = getattr(a, f"make_fragment_SF{op}")(wb.shape(getattr(a, f"smem_layout_SF{op}")((m, n, kt))))
            q = p[f"tmem_SF{op}"]
            val = np.asarray(q["val"]).reshape(q["rows"], q["cols"])
            for i in range(0, wb.size(frag.layout), 7):
                lane, col, byte = frag.lane_column(i)
                row, block, _, _ = _sf_expected(frag, i)
                expect = row + rows * block if row < rows else -1
                assert val[lane, 4 * col + byte] == expect, (op, i)
        assert any("one per" in line for line in view.readout)
        assert "never run on a Blackwell GPU" in _texts(view.to_svg())


def test_block_scaled_instruction_descriptor_view_names_every_field():
    a = _bs_atom("SM100_MMA_MXF4_SS", 128, 64, vs=16, sf_type=wb.Float8E4M3FN)
    r = dict(UmmaInstrDescView(a).rows())
    d = a.instr_desc
    assert r["a_format [7,10)"] == "1 = E2M1 (kind::mxf4nvf4)" and r["scale_format [23]"].startswith("0 = UE4M3")
    assert r["n_dim [17,23)"] == "8 = N >> 3: N=64" and r["m_dim [24,29)"] == "8 = M >> 4: M=128"
    assert r["word"].startswith(f"0x{d.encode():08x}") and "c_format [4,6)" not in r
    e = _bs_atom()
    bare = UmmaInstrDescView(e.instr_desc.replace(a_sf_id=2, b_sf_id=3))
    rb = dict(bare.rows())
    assert rb["a_sf_id [29,31)"].startswith("2: SFA's byte") and rb["b_sf_id [4,6)"].startswith("3: SFB's byte")
    assert rb["scale_format [23]"].startswith("1 = UE8M0") and "E4M3 (mxf8f6f4)" in rb["a_format [7,10)"]
    assert rb["word"].startswith(f"0x{bare.desc.encode():08x}")
    names = [f[0] for f in bare.desc._FIELDS]               # every field of the descriptor has its row, bits named
    assert all(any(k.startswith(f + " [") for k in rb) for f in names)
    word = bare.desc.encode()
    for f, lo, nbits in bare.desc._FIELDS:
        assert getattr(bare.desc, f) == (word >> lo) & ((1 << nbits) - 1)
    assert "UMMA block-scaled instruction descriptor" in _texts(bare.to_svg())


def test_tmem_view_of_a_2sm_pair_draws_each_ctas_half_at_every_index():
    """Both CTAs' TMEM side by side: CTA c's cell (lane, column) holds the C(m, n) that the pair atom's CLayout gives
    thread c for the fragment index there (M = 256: each CTA 128 rows; M = 128: 64 rows, N's second half in lanes
    64..127), checked at every index of both CTAs."""
    for m, n, tile in ((256, 128, (256, 256)), (128, 64, (128, 64))):
        a = _atom("SM100_MMA_F16BF16_2x1SM_SS", m, n)
        shape = a.partition_shape_C(tile)
        acc = a.make_fragment_C(shape)
        v = TmemView(acc, pair=a)
        tv = a.tv_layout_C
        mmn = shape[0]
        count = 0
        for cta in range(2):
            for i in range(wb.size(acc.layout)):
                lane, col, _ = acc.lane_column(i)
                (j0, j1), ti, tj = wb.idx2crd(i, shape)
                jv = wb.crd2idx((j0, j1), mmn)
                off = tv(cta, jv)
                expect = (off % m + m * ti, off // m + n * tj)
                cell = v.cell(lane, col, cta)
                assert cell["mn"] == expect and cell["index"] == i and cell["cta"] == cta, (m, cta, i)
                count += 1
        assert count == 2 * wb.size(acc.layout)
        mns = {v.cell(ln, c, cta)["mn"] for cta in range(2) for ln in range(128) for c in range(v.source.columns)
               if v.cell(ln, c, cta)["mn"] is not None}
        assert mns == {(i, j) for i in range(tile[0]) for j in range(tile[1])}     # the pair covers C exactly once
    text = _texts(v.to_svg())
    assert "CTA 0" in text and "CTA 1" in text and "zoom: lanes 0..15, columns 0..15 of CTA 1" in text
    tc = wb.make_tmem_copy(wb.copy_atom("SM100_TMEM_LOAD_32dp32b8x", wb.Float32), acc[(None, None), 0, 0])
    vc = TmemView(acc, copy=tc, pair=a, thread=70)
    assert vc.cell(70, 0, 1)["thread"] == 70 and "in each CTA of the pair" in vc._readout_lines()[0]
