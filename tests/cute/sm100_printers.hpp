// Printers for the SM100 (Blackwell) differential harness: tests/test_atoms_sm100_cute_cpp.py writes one main()
// per translation unit from workbench's catalogs; every line is "label|value" with CuTe's own print().
#pragma once
#include <cstdio>
#include <cute/tensor.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cute/atom/copy_atom.hpp>
#include <cute/atom/mma_traits_sm100.hpp>
#include <cute/atom/copy_traits_sm100.hpp>
using namespace cute;

template <class L>
void emit(char const* label, L const& layout) {
  printf("%s|", label);
  print(layout);
  printf("\n");
}

// One UMMA atom's traits: ThrID, A/B/C layouts, Shape_MNK and the instruction descriptor CuTe builds.
template <class T>
void umma(char const* label) {
  char buf[512];
  snprintf(buf, sizeof buf, "umma|%s|thr_id", label); emit(buf, typename T::ThrID{});
  snprintf(buf, sizeof buf, "umma|%s|A", label); emit(buf, typename T::ALayout{});
  snprintf(buf, sizeof buf, "umma|%s|B", label); emit(buf, typename T::BLayout{});
  snprintf(buf, sizeof buf, "umma|%s|C", label); emit(buf, typename T::CLayout{});
  snprintf(buf, sizeof buf, "umma|%s|mnk", label); emit(buf, make_layout(typename T::Shape_MNK{}));
  printf("umma|%s|idesc|%08x\n", label, unsigned(T{}.idesc_.desc_));
}

// The accumulator fragment of a one-atom tiled MMA over an (M, N) tile (CuTe's tCtAcc).
template <class Op, int M, int N>
void acc(char const* label) {
  auto tmma = make_tiled_mma(Op{});
  auto frg = tmma.make_fragment_C(partition_shape_C(tmma, make_shape(Int<M>{}, Int<N>{})));
  char buf[512];
  snprintf(buf, sizeof buf, "acc|%s", label); emit(buf, frg.layout());
}

// A TMEM copy atom over a value type, and its traits' ValID.
template <class Op, class T>
void tcpy(char const* name, char const* tname) {
  using A = Copy_Atom<Op, T>;
  char buf[512];
  snprintf(buf, sizeof buf, "tcopy|%s|%s|thr_id", name, tname); emit(buf, typename A::ThrID{});
  snprintf(buf, sizeof buf, "tcopy|%s|%s|src", name, tname); emit(buf, typename A::ValLayoutSrc{});
  snprintf(buf, sizeof buf, "tcopy|%s|%s|dst", name, tname); emit(buf, typename A::ValLayoutDst{});
  snprintf(buf, sizeof buf, "tcopy|%s|%s|ref", name, tname); emit(buf, typename A::ValLayoutRef{});
  snprintf(buf, sizeof buf, "tcopy|%s|%s|val_id", name, tname); emit(buf, typename Copy_Traits<Op>::ValID{});
}

// make_tmem_copy of an atom over the (M, N) slice of a one-atom accumulator fragment.
template <class CopyOp, class MmaOp, int M, int N>
void tmem_copy(char const* label) {
  auto tmma = make_tiled_mma(MmaOp{});
  auto frg = tmma.make_fragment_C(partition_shape_C(tmma, make_shape(Int<M>{}, Int<N>{})));
  auto tc = make_tmem_copy(CopyOp{}, frg(make_coord(_, _), _0{}, _0{}));
  using TC = decltype(tc);
  char buf[512];
  snprintf(buf, sizeof buf, "tmcp|%s|S", label); emit(buf, tc.get_layoutS_TV());
  snprintf(buf, sizeof buf, "tmcp|%s|D", label); emit(buf, tc.get_layoutD_TV());
  snprintf(buf, sizeof buf, "tmcp|%s|tiler0", label); emit(buf, get<0>(typename TC::Tiler_MN{}));
  snprintf(buf, sizeof buf, "tmcp|%s|tiler1", label); emit(buf, get<1>(typename TC::Tiler_MN{}));
}

// make_umma_desc<Major> of tile_to_shape(atom, (MN, K)) at a shared-memory byte address.
template <UMMA::Major Mj, class T, class Atom, int MN, int K>
void udesc(char const* label, uintptr_t address) {
  auto layout = tile_to_shape(Atom{}, make_shape(Int<MN>{}, Int<K>{}));
  auto t = make_tensor(make_smem_ptr(reinterpret_cast<T*>(address)), layout);
  UMMA::SmemDescriptor d = UMMA::make_umma_desc<Mj>(t);
  printf("udesc|%s|%016llx\n", label, (unsigned long long)uint64_t(d));
}

// Every field of the three descriptor unions set alone to a value: the raw word shows where CuTe's bit-field
// puts it (the host cannot take a shared-memory address: cast_smem_ptr_to_uint returns 0 there).
#define SM100_FIELD(U, F, V, W) { UMMA::U d{}; d.F##_ = V; printf("field|" #U "|" #F "|%d|%0" #W "llx\n", int(V), (unsigned long long)uint64_t(d.desc_)); }
inline void descriptor_fields() {
  for (int v : {1, 2, 5, 0x155, 0x2aaa, 0x3fff}) {
    if (v < (1 << 14)) { SM100_FIELD(SmemDescriptor, start_address, v, 16) SM100_FIELD(SmemDescriptor, leading_byte_offset, v, 16)
                         SM100_FIELD(SmemDescriptor, stride_byte_offset, v, 16) }
    if (v < 4) SM100_FIELD(SmemDescriptor, version, v, 16)
    if (v < 8) { SM100_FIELD(SmemDescriptor, base_offset, v, 16) SM100_FIELD(SmemDescriptor, layout_type, v, 16) }
    if (v < 2) SM100_FIELD(SmemDescriptor, lbo_mode, v, 16)
    if (v < 4) { SM100_FIELD(InstrDescriptor, sparse_id2, v, 8) SM100_FIELD(InstrDescriptor, c_format, v, 8)
                 SM100_FIELD(InstrDescriptor, max_shift, v, 8) }
    if (v < 2) { SM100_FIELD(InstrDescriptor, sparse_flag, v, 8) SM100_FIELD(InstrDescriptor, saturate, v, 8)
                 SM100_FIELD(InstrDescriptor, a_negate, v, 8) SM100_FIELD(InstrDescriptor, b_negate, v, 8)
                 SM100_FIELD(InstrDescriptor, a_major, v, 8) SM100_FIELD(InstrDescriptor, b_major, v, 8) }
    if (v < 8) { SM100_FIELD(InstrDescriptor, a_format, v, 8) SM100_FIELD(InstrDescriptor, b_format, v, 8) }
    if (v < 64) SM100_FIELD(InstrDescriptor, n_dim, v, 8)
    if (v < 32) SM100_FIELD(InstrDescriptor, m_dim, v, 8)
    if (v < 4) { SM100_FIELD(InstrDescriptorBlockScaled, sparse_id2, v, 8) SM100_FIELD(InstrDescriptorBlockScaled, b_sf_id, v, 8)
                 SM100_FIELD(InstrDescriptorBlockScaled, a_sf_id, v, 8) }
    if (v < 2) { SM100_FIELD(InstrDescriptorBlockScaled, sparse_flag, v, 8) SM100_FIELD(InstrDescriptorBlockScaled, a_negate, v, 8)
                 SM100_FIELD(InstrDescriptorBlockScaled, b_negate, v, 8) SM100_FIELD(InstrDescriptorBlockScaled, a_major, v, 8)
                 SM100_FIELD(InstrDescriptorBlockScaled, b_major, v, 8) SM100_FIELD(InstrDescriptorBlockScaled, scale_format, v, 8)
                 SM100_FIELD(InstrDescriptorBlockScaled, k_size, v, 8) }
    if (v < 8) { SM100_FIELD(InstrDescriptorBlockScaled, a_format, v, 8) SM100_FIELD(InstrDescriptorBlockScaled, b_format, v, 8) }
    if (v < 64) SM100_FIELD(InstrDescriptorBlockScaled, n_dim, v, 8)
    if (v < 32) SM100_FIELD(InstrDescriptorBlockScaled, m_dim, v, 8)
  }
}
