// Differential harness, part 3: tiled copies, printed by CuTe C++ itself.
// The ids match TILED_MMAS / TILED_COPIES in tests/test_atoms_cute_cpp.py.
#include "atoms_tiled_mmas.hpp"

template <class TC>
void tcopy(char const* id, TC const& c) {
  char buf[256];
  snprintf(buf, sizeof buf, "tcopy|%s|S", id); emit(buf, c.get_layoutS_TV());
  snprintf(buf, sizeof buf, "tcopy|%s|D", id); emit(buf, c.get_layoutD_TV());
  snprintf(buf, sizeof buf, "tcopy|%s|tiler", id); emit(buf, make_layout(typename TC::Tiler_MN{}));
  using T = typename TC::ValType;
  auto tiler = typename TC::Tiler_MN{};
  auto M = size<0>(tiler) * _2{}; auto N = size<1>(tiler) * _2{};
  auto s = make_tensor(make_smem_ptr((T*)nullptr), make_layout(make_shape(M, N), LayoutRight{}));
  auto thr = c.get_slice(3);
  snprintf(buf, sizeof buf, "tcopy|%s|partition_S", id); emit(buf, thr.partition_S(s).layout());
  snprintf(buf, sizeof buf, "tcopy|%s|partition_D", id); emit(buf, thr.partition_D(s).layout());
}

// retile_D of one thread's MMA fragment (the ldmatrix -> mma register view of every CuTe GEMM mainloop)
template <int Operand, class TC, class TM>
void tretile(char const* id, TC const& c, TM const& m) {
  char buf[256];
  auto M = tile_size<0>(m) * _2{}; auto N = tile_size<1>(m) * _2{}; auto K = tile_size<2>(m) * _2{};
  auto thr = m.get_slice(1);
  auto frag = [&] {
    if constexpr (Operand == 0) {
      return thr.partition_fragment_A(make_tensor(make_smem_ptr((half_t*)nullptr), make_layout(make_shape(M, K))));
    } else {
      return thr.partition_fragment_B(make_tensor(make_smem_ptr((half_t*)nullptr), make_layout(make_shape(N, K))));
    }
  }();
  snprintf(buf, sizeof buf, "tretile|%s|frag", id); emit(buf, frag.layout());
  snprintf(buf, sizeof buf, "tretile|%s|retile", id); emit(buf, c.get_slice(1).retile_D(frag).layout());
}

int main() {
  TILED_MMAS
  using LDSM4 = Copy_Atom<SM75_U32x4_LDSM_N, half_t>;
  tcopy("c1", make_tiled_copy_A(LDSM4{}, t1));
  tcopy("c2", make_tiled_copy_B(LDSM4{}, t1));
  tcopy("c3", make_tiled_copy_B(Copy_Atom<SM75_U32x2_LDSM_N, half_t>{}, t2));
  tcopy("c4", make_tiled_copy_A(Copy_Atom<SM75_U16x8_LDSM_T, half_t>{}, t1));
  tcopy("c5", make_tiled_copy_C(Copy_Atom<SM90_U32x4_STSM_N, half_t>{}, t1));
  tcopy("c6", make_tiled_copy_C(Copy_Atom<SM90_U32x2_STSM_N, half_t>{}, t2));
  tcopy("c7", make_tiled_copy_A(Copy_Atom<SM75_U32x2_LDSM_N, half_t>{}, t6));
  tcopy("c8", make_tiled_copy_A(Copy_Atom<UniversalCopy<uint32_t>, half_t>{}, t1));
  tcopy("c9", make_tiled_copy_C(Copy_Atom<UniversalCopy<uint32_t>, float>{}, t1));
  tcopy("c10", make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS<uint128_t>, half_t>{},
                               Layout<Shape<_16, _8>, Stride<_8, _1>>{}, Layout<Shape<_1, _8>>{}));
  tcopy("c11", make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, half_t>{}, Layout<Shape<_32, _4>>{},
                               Layout<Shape<_8, _1>>{}));
  tcopy("c12", make_tiled_copy(Copy_Atom<UniversalCopy<uint64_t>, float>{}, Layout<Shape<_8, _16>, Stride<_16, _1>>{},
                               Layout<Shape<_1, _2>>{}));
  tcopy("c13", make_tiled_copy(Copy_Atom<UniversalCopy<uint32_t>, float>{}, Layout<Shape<_32, _8>>{},
                               Layout<Shape<_4, _1>>{}));
  tcopy("c14", make_tiled_copy_A(LDSM4{}, t4));
  tcopy("c15", make_tiled_copy_B(LDSM4{}, t4));
  tcopy("c16", make_tiled_copy_B(Copy_Atom<SM75_U32x4_LDSM_N, bfloat16_t>{}, t7));
  tcopy("c17", make_tiled_copy_C(Copy_Atom<SM90_U16x8_STSM_T, half_t>{}, t1));
  tcopy("c18", make_tiled_copy_B(Copy_Atom<SM75_U16x4_LDSM_T, half_t>{}, t1));
  tcopy("c19", make_tiled_copy_A(Copy_Atom<SM75_U32x4_LDSM_N, int8_t>{}, t9));
  tcopy("c20", make_tiled_copy_A(Copy_Atom<SM75_U32x1_LDSM_N, half_t>{}, t6));
  tcopy("c21", make_tiled_copy_A(LDSM4{}, t20));
  tcopy("c22", make_tiled_copy_A(LDSM4{}, t5));
  tretile<0>("c1", make_tiled_copy_A(LDSM4{}, t1), t1);
  tretile<1>("c2", make_tiled_copy_B(LDSM4{}, t1), t1);
  tretile<1>("c3", make_tiled_copy_B(Copy_Atom<SM75_U32x2_LDSM_N, half_t>{}, t2), t2);
  tretile<0>("c4", make_tiled_copy_A(Copy_Atom<SM75_U16x8_LDSM_T, half_t>{}, t1), t1);
  tretile<0>("c14", make_tiled_copy_A(LDSM4{}, t4), t4);
  tretile<1>("c15", make_tiled_copy_B(LDSM4{}, t4), t4);
  tretile<0>("c20", make_tiled_copy_A(Copy_Atom<SM75_U32x1_LDSM_N, half_t>{}, t6), t6);
  tretile<0>("c21", make_tiled_copy_A(LDSM4{}, t20), t20);
  return 0;
}
