"""Blackwell host objects on the Python side: UMMA atoms, their refusals, TMEM allocation and tensors, copy atoms,
make_tmem_copy's lane check, descriptors' bits (the values against CuTe C++ are in test_atoms_sm100_cute_cpp.py)."""

import pytest

import workbench as wb
from workbench.atoms import TmemAllocator, UmmaInstrDescriptor, UmmaSmemDescriptor, copy_atom, make_tmem_copy

H, F = wb.Float16, wb.Float32


def atom(name="SM100_MMA_F16BF16_SS", **kw):
    return wb.mma_atom(name, **{"a_type": H, "b_type": H, "c_type": F, "m": 128, "n": 256, **kw})


def test_umma_atom_facts():
    a = atom()
    assert (a.instruction, a.arch, a.ptx_kind, a.cta_group) == ("tcgen05_mma", 100, "f16", 1)
    assert a.shape_mnk == (128, 256, 16) and a.thr_id.size == 1
    assert str(a.tv_layout_C) == "(1,(128,256)):(0,(1,128))"
    assert a.partition_shape_C((256, 512)) == ((128, 256), 2, 2)
    b = atom("SM100_MMA_F16BF16_2x1SM_SS", m=256)
    assert b.thr_id.size == 2 and b.partition_shape_C((256, 256)) == ((128, 256), 1, 1)
    acc = a.make_fragment_C(a.partition_shape_C((128, 256)))
    assert str(acc.layout) == "((128,256),1,1):((65536,1),0,0)"
    assert acc.lanes() == list(range(128)) and acc.columns() == list(range(256))
    assert hex(a.instr_desc.encode()) == "0x8400010" and a.instr_desc.runtime() == 0x8400010 << 32


@pytest.mark.parametrize("kw, msg", [
    (dict(m=96), "M-mode size should be 64 or 128"),
    (dict(n=12), "N-mode size should be a multiple of 8 between 8 and 256"),
    (dict(name="SM100_MMA_F16BF16_TS", a_major="MN", n=128), "A from TMEM can't be transposed"),
    (dict(a_type=F, b_type=F), "supports 16bit types"),
    (dict(name="SM100_MMA_S8_SS", a_type=wb.Int8, b_type=wb.Int8, c_type=F), "result type can only be int32_t"),
    (dict(c_sat=True), "takes no c_sat"),
])
def test_umma_refusals(kw, msg):
    with pytest.raises((ValueError, TypeError), match=msg):
        atom(**kw)


def test_tmem_capacity_and_lane_checks():
    a = atom()
    with pytest.raises(ValueError, match="Requesting more TMEM than is available"):
        a.make_fragment_C(a.partition_shape_C((256, 512)))
    a64 = atom(m=64, n=128)
    acc = a64.make_fragment_C(a64.partition_shape_C((64, 128)))
    with pytest.raises(ValueError, match="does not exist in the DataLayout"):
        make_tmem_copy(copy_atom("SM100_TMEM_LOAD_32dp32b1x", F), acc[(None, None), 0, 0])
    tc = make_tmem_copy(copy_atom("SM100_TMEM_LOAD_16dp256b1x", F), acc[(None, None), 0, 0])
    assert tc.size == 128


def test_allocator():
    al = TmemAllocator()
    x = al.allocate(128)
    y = al.allocate(256)
    assert (x, y) == (0, 256) and al.columns_in_use == 384
    with pytest.raises(ValueError, match="power of 2"):
        al.allocate(48)
    with pytest.raises(RuntimeError, match="free"):
        al.allocate(256)
    al.free(y, 256)
    al.release_allocation_lock()
    with pytest.raises(RuntimeError, match="relinquished"):
        al.allocate(32)


def test_descriptor_words_round_trip():
    d = UmmaSmemDescriptor(start_address=0x40, leading_byte_offset=1, stride_byte_offset=64, version=1, layout_type=2)
    assert UmmaSmemDescriptor.decode(d.encode()) == d and d.layout_type_name == "SWIZZLE_128B"
    with pytest.raises(ValueError, match="14 bits"):
        UmmaSmemDescriptor(start_address=1 << 14)
    i = UmmaInstrDescriptor(m_dim=8, n_dim=32, c_format=1)
    assert i.encode() == (8 << 24) | (32 << 17) | (1 << 4)
    atomK = wb.umma_smem_atom("Layout_K_SW128_Atom", H)
    d = wb.make_umma_desc(wb.tile_to_shape(atomK, (128, 64)), H, "K")
    assert (d.layout_type_name, d.leading_byte_offset, d.stride_byte_offset, d.version) == ("SWIZZLE_128B", 1, 64, 1)


def test_copy_atoms():
    c = copy_atom("SM100_TMEM_LOAD_32dp32b8x", F)
    assert (c.instruction, c.arch, c.dp, c.repeat, c.pack_16b) == ("tcgen05_ld", 100, 32, 8, False)
    assert str(c.val_id) == "(8,32):(1,65536)"
    assert copy_atom("SM100_TMEM_STORE_16dp64b2x_16b", H).instruction == "tcgen05_st"
    with pytest.raises(ValueError, match="unknown SM100 copy atom"):
        copy_atom("SM100_TMEM_LOAD_16dp256b64x", F)


E4, E2, UE8 = wb.Float8E4M3FN, wb.Float4E2M1FN, wb.Float8E8M0FNU


def bs_atom(name="SM100_MMA_MXF8F6F4_SS", **kw):
    mx4 = name.startswith("SM100_MMA_MXF4")
    base = dict(a_type=E2 if mx4 else E4, b_type=E2 if mx4 else E4, c_type=F, sf_type=UE8, m=128, n=256)
    if mx4:
        base["vs"] = 32
    return wb.mma_atom(name, **{**base, **kw})


def test_block_scaled_atom_facts():
    a = bs_atom()
    assert type(a) is wb.atoms.UmmaBlockScaledAtom and a.shape_mnk == (128, 256, 32) and a.sf_vec_size == 32
    assert (a.ptx_kind, a.ptx_qualifiers) == ("mxf8f6f4", ".cta_group::1.kind::mxf8f6f4.block_scale")
    d = a.instr_desc
    assert (d.scale_format, d.m_dim, d.n_dim, d.a_format, d.k_size) == (1, 8, 32, 0, 0)
    # the scale factors' ids ride in the top two bits of their TMEM addresses
    assert a.instr_desc.runtime(3 << 30, 1 << 30) == d.replace(a_sf_id=3, b_sf_id=1).encode() << 32
    b = bs_atom("SM100_MMA_MXF4_2x1SM_SS", sf_type=E4, vs=16, n=192)
    assert b.ptx_qualifiers == ".cta_group::2.kind::mxf4nvf4.block_scale.block16" and b.shape_mnk == (128, 192, 64)
    assert b.instr_desc.a_format == 1 and b.instr_desc.scale_format == 0    # MXF4Format::E2M1, UE4M3
    assert b.sf_alloc == "ScaleFactorDuplicated2by2" and b.mma_scale_factor.shape_mnk == (128, 256, 64)
    # Float4E2M1FN in an mxf8f6f4 atom is the unpacked-in-smem E2M1 (MXF8F6F4Format 5)
    assert bs_atom(a_type=E2).instr_desc.a_format == 5
    assert a != bs_atom(b_neg=True) and a == bs_atom() and hash(a) == hash(bs_atom())


def test_block_scaled_fragments():
    a = bs_atom()
    smem = a.smem_layout_SFA((128, 256, 128))
    assert str(smem) == "((((32,4),1),(32,1)),1,(4,1)):((((16,4),512),(0,1)),0,(1,512))"
    sfa = a.make_fragment_SFA(smem.shape)
    # 128 rows x 4 k-blocks of one-byte factors: one 32-bit column per 32 rows, replicated in the four sub-partitions
    assert sfa.lanes() == list(range(128)) and sfa.columns() == list(range(4))
    assert sfa.lane_column(((((5, 1), 2), (0, 0)), 0, (3, 0))) == (69, 1, 3)
    tc = wb.atoms.make_utccp_copy(wb.copy_atom("SM100_UTCCP_4x32dp128bit_1cta", UE8), sfa.filter_zeros())
    assert tc.size == 1
    with pytest.raises(ValueError, match="multiple of 128"):
        a.smem_layout_SFA((64, 256, 128))
    with pytest.raises(ValueError, match="multiple of 4 scale factors"):
        a.smem_layout_SFA((128, 256, 64))
    with pytest.raises(ValueError, match="Expected an MMA-SF partitioned tensor"):
        a.make_fragment_SFA(((128, 32), 1, 1))
    with pytest.raises(TypeError, match="UTCCP"):
        wb.atoms.make_utccp_copy(copy_atom("SM100_TMEM_LOAD_32dp32b1x", UE8), sfa)


@pytest.mark.parametrize("name, kw, err, msg", [
    ("SM100_MMA_MXF8F6F4_SS", dict(m=64), ValueError, "M-mode size should be 64 or 128"),
    ("SM100_MMA_MXF8F6F4_SS", dict(vs=32), TypeError, "takes no VS template argument"),
    ("SM100_MMA_MXF8F6F4_SS", dict(sf_type=None), TypeError, "missing sf_type"),
    ("SM100_MMA_MXF4_SS", dict(vs=None), TypeError, "missing vs"),
    ("SM100_MMA_MXF4_SS", dict(vs=64), ValueError, "Vector size can only be 16 or 32"),
    ("SM100_MMA_MXF4_SS", dict(a_type=E4), ValueError, "supports 4bit types"),
    ("SM100_MMA_MXF4_SS", dict(sf_type=E4), ValueError, "2x mode"),
    ("SM100_MMA_MXF8F6F4_SS", dict(c_type=H), ValueError, "f32 only"),
    ("SM100_MMA_MXF8F6F4_SS", dict(sf_type=wb.Float16), TypeError, "Unknown type for ScaleFormat"),
    ("SM100_MMA_MXF4NVF4_SS", dict(), ValueError, "SM100_MMA_MXF4_SS with vs=16"),
    ("SM100_MMA_MXF8F6F4_TS", dict(), ValueError, "from shared memory only"),
    ("SM100_MMA_F16BF16_SS", dict(a_type=H, b_type=H, sf_type=UE8), TypeError, "block-scaled atoms only"),
])
def test_block_scaled_refusals(name, kw, err, msg):
    with pytest.raises(err, match=msg):
        bs_atom(name, **kw)


def test_block_scaled_descriptor_inputs():
    a = bs_atom()
    with pytest.raises(ValueError, match="32-bit TMEM address"):
        a.instr_desc.runtime(1 << 32, 0)
    with pytest.raises(ValueError, match="no TS form"):
        a.make_fragment_A(((128, 32), 1, 1))
