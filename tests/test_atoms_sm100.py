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
