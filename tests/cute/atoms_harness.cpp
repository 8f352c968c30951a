// Differential harness, part 1: every catalog atom's layouts, printed by CuTe C++ itself.
// Built host-only with g++ by tests/test_atoms_cute_cpp.py; see that file for the comparison.
#include "atoms_common.hpp"
using namespace cute;

template <class Op>
void mma(char const* name) {
  using T = MMA_Traits<Op>;
  char buf[256];
  snprintf(buf, sizeof buf, "mma|%s|thr_id", name); emit(buf, typename T::ThrID{});
  snprintf(buf, sizeof buf, "mma|%s|A", name); emit(buf, typename T::ALayout{});
  snprintf(buf, sizeof buf, "mma|%s|B", name); emit(buf, typename T::BLayout{});
  snprintf(buf, sizeof buf, "mma|%s|C", name); emit(buf, typename T::CLayout{});
  snprintf(buf, sizeof buf, "mma|%s|mnk", name); emit(buf, make_layout(typename T::Shape_MNK{}));
}

#define MMA(op) mma<op>(#op)
#define MMA_T(op) mma<op<>>(#op)
#define MMA_SAT(op) MMA(op); MMA(op##_SATURATE)
#define MMA_T_SAT(op) MMA_T(op); MMA_T(op##_SATURATE)
#define GK SM90::GMMA::Major::K
#define GMMA16(N)                                                                                 \
  mma<SM90_64x##N##x16_F16F16F16_SS<GK, GK>>("SM90_64x" #N "x16_F16F16F16_SS");                    \
  mma<SM90_64x##N##x16_F16F16F16_RS<GK, GK>>("SM90_64x" #N "x16_F16F16F16_RS");                    \
  mma<SM90_64x##N##x16_F32F16F16_SS<GK, GK>>("SM90_64x" #N "x16_F32F16F16_SS");                    \
  mma<SM90_64x##N##x16_F32F16F16_RS<GK, GK>>("SM90_64x" #N "x16_F32F16F16_RS");                    \
  mma<SM90_64x##N##x16_F32BF16BF16_SS<GK, GK>>("SM90_64x" #N "x16_F32BF16BF16_SS");                \
  mma<SM90_64x##N##x16_F32BF16BF16_RS<GK, GK>>("SM90_64x" #N "x16_F32BF16BF16_RS");                \
  MMA_T(SM90_64x##N##x8_F32TF32TF32_SS_TN); MMA_T(SM90_64x##N##x8_F32TF32TF32_RS_TN);              \
  MMA_T(SM90_64x##N##x32_F32E4M3E4M3_SS_TN); MMA_T(SM90_64x##N##x32_F32E4M3E4M3_RS_TN);            \
  MMA_T(SM90_64x##N##x32_F16E5M2E4M3_SS_TN); MMA_T(SM90_64x##N##x32_F32E5M2E5M2_RS_TN)
#define GMMA_I8(N) MMA_SAT(SM90_64x##N##x32_S32S8S8_SS_TN); MMA(SM90_64x##N##x32_S32U8S8_RS_TN)

template <class Op, class T>
void cpy(char const* name, char const* tname) {
  using A = Copy_Atom<Op, T>;
  char buf[256];
  snprintf(buf, sizeof buf, "copy|%s|%s|thr_id", name, tname); emit(buf, typename A::ThrID{});
  snprintf(buf, sizeof buf, "copy|%s|%s|src", name, tname); emit(buf, typename A::ValLayoutSrc{});
  snprintf(buf, sizeof buf, "copy|%s|%s|dst", name, tname); emit(buf, typename A::ValLayoutDst{});
  snprintf(buf, sizeof buf, "copy|%s|%s|ref", name, tname); emit(buf, typename A::ValLayoutRef{});
  snprintf(buf, sizeof buf, "copy|%s|%s|src_bits", name, tname); emit(buf, typename A::BitLayoutSrc{});
  snprintf(buf, sizeof buf, "copy|%s|%s|dst_bits", name, tname); emit(buf, typename A::BitLayoutDst{});
}
#define CPY(op, name, T, tname) cpy<op, T>(name, tname)
#define CPY_UPTO32(op) CPY(op, #op, uint8_t, "Uint8"); CPY(op, #op, half_t, "Float16"); \
  CPY(op, #op, bfloat16_t, "BFloat16"); CPY(op, #op, float, "Float32")
#define CPY_16(op) CPY(op, #op, half_t, "Float16"); CPY(op, #op, bfloat16_t, "BFloat16")

// The GMMA shared-memory layout atoms, as functions on element offsets: CuTe's swizzle acts on the
// byte address of an smem pointer, so value i is sw(layout(i) * bytes) / bytes.
template <class T, class Atom>
void smem(char const* name, char const* tname) {
  Atom atom{};
  auto inner = atom.layout_b();
  auto sw = atom.layout_a();
  constexpr int bytes = sizeof(T);
  printf("smem|%s|%s|", name, tname);
  print(inner);
  printf("|");
  for (int i = 0; i < int(size(inner)); ++i) printf(i ? ",%d" : "%d", int(sw(inner(i) * bytes)) / bytes);
  printf("\n");
}
#define SMEM_T(T, tname, kind) smem<T, GMMA::Layout_##kind##_Atom<T>>(#kind, tname)
#define SMEM_ALL(T, tname) SMEM_T(T, tname, K_INTER); SMEM_T(T, tname, K_SW32); SMEM_T(T, tname, K_SW64); \
  SMEM_T(T, tname, K_SW128); SMEM_T(T, tname, MN_INTER); SMEM_T(T, tname, MN_SW32); SMEM_T(T, tname, MN_SW64); \
  SMEM_T(T, tname, MN_SW128)

int main() {
  MMA(UniversalFMA<float>);
  MMA(SM70_8x8x4_F16F16F16F16_TN); MMA(SM70_8x8x4_F16F16F16F16_NT); MMA(SM70_8x8x4_F16F16F16F16_NN);
  MMA(SM70_8x8x4_F16F16F16F16_TT); MMA(SM70_8x8x4_F32F16F16F32_TN); MMA(SM70_8x8x4_F32F16F16F32_NT);
  MMA(SM70_8x8x4_F32F16F16F32_NN); MMA(SM70_8x8x4_F32F16F16F32_TT);
  MMA(SM75_16x8x8_F32F16F16F32_TN); MMA(SM75_8x8x16_S32S8S8S32_TN);
  MMA(SM80_16x8x8_F16F16F16F16_TN); MMA(SM80_16x8x16_F16F16F16F16_TN);
  MMA(SM80_16x8x8_F32F16F16F32_TN); MMA(SM80_16x8x16_F32F16F16F32_TN);
  MMA(SM80_16x8x8_F32BF16BF16F32_TN); MMA(SM80_16x8x16_F32BF16BF16F32_TN);
  MMA(SM80_16x8x4_F32TF32TF32F32_TN); MMA(SM80_16x8x8_F32TF32TF32F32_TN); MMA(SM80_8x8x4_F64F64F64F64_TN);
  MMA_SAT(SM80_8x8x16_S32S8S8S32_TN); MMA_SAT(SM80_16x8x16_S32S8S8S32_TN); MMA_SAT(SM80_16x8x32_S32S8S8S32_TN);
  MMA(SM80_8x8x16_S32U8S8S32_TN); MMA(SM80_16x8x16_S32S8U8S32_TN); MMA(SM80_16x8x32_S32U8U8S32_TN);
  MMA(SM89_16x8x32_F32E4M3E4M3F32_TN); MMA(SM89_16x8x32_F32E4M3E5M2F32_TN); MMA(SM89_16x8x32_F32E5M2E4M3F32_TN);
  MMA(SM89_16x8x32_F32E5M2E5M2F32_TN); MMA(SM89_16x8x32_F16E4M3E4M3F16_TN); MMA(SM89_16x8x32_F16E5M2E5M2F16_TN);
  GMMA16(8); GMMA16(16); GMMA16(24); GMMA16(32); GMMA16(40); GMMA16(48); GMMA16(56); GMMA16(64);
  GMMA16(72); GMMA16(80); GMMA16(88); GMMA16(96); GMMA16(104); GMMA16(112); GMMA16(120); GMMA16(128);
  GMMA16(136); GMMA16(144); GMMA16(152); GMMA16(160); GMMA16(168); GMMA16(176); GMMA16(184); GMMA16(192);
  GMMA16(200); GMMA16(208); GMMA16(216); GMMA16(224); GMMA16(232); GMMA16(240); GMMA16(248); GMMA16(256);
  GMMA_I8(8); GMMA_I8(16); GMMA_I8(24); GMMA_I8(32); GMMA_I8(48); GMMA_I8(64); GMMA_I8(80); GMMA_I8(96);
  GMMA_I8(112); GMMA_I8(128); GMMA_I8(144); GMMA_I8(160); GMMA_I8(176); GMMA_I8(192); GMMA_I8(208); GMMA_I8(224);
  GMMA_I8(240); GMMA_I8(256);

  CPY_UPTO32(SM75_U32x1_LDSM_N); CPY_UPTO32(SM75_U32x2_LDSM_N); CPY_UPTO32(SM75_U32x4_LDSM_N);
  CPY_16(SM75_U16x2_LDSM_T); CPY_16(SM75_U16x4_LDSM_T); CPY_16(SM75_U16x8_LDSM_T);
  CPY_UPTO32(SM90_U32x1_STSM_N); CPY_UPTO32(SM90_U32x2_STSM_N); CPY_UPTO32(SM90_U32x4_STSM_N);
  CPY_16(SM90_U16x2_STSM_T); CPY_16(SM90_U16x4_STSM_T); CPY_16(SM90_U16x8_STSM_T);
  CPY(UniversalCopy<uint8_t>, "UniversalCopy_U8", uint8_t, "Uint8");
  CPY(UniversalCopy<uint16_t>, "UniversalCopy_U16", half_t, "Float16");
  CPY(UniversalCopy<uint32_t>, "UniversalCopy_U32", half_t, "Float16");
  CPY(UniversalCopy<uint32_t>, "UniversalCopy_U32", float, "Float32");
  CPY(UniversalCopy<uint64_t>, "UniversalCopy_U64", float, "Float32");
  CPY(UniversalCopy<uint64_t>, "UniversalCopy_U64", double, "Float64");
  CPY(UniversalCopy<uint128_t>, "UniversalCopy_U128", half_t, "Float16");
  CPY(UniversalCopy<uint128_t>, "UniversalCopy_U128", uint8_t, "Uint8");
  CPY(UniversalCopy<uint128_t>, "UniversalCopy_U128", double, "Float64");
  CPY(SM80_CP_ASYNC_CACHEALWAYS<uint32_t>, "SM80_CP_ASYNC_CACHEALWAYS_U32", half_t, "Float16");
  CPY(SM80_CP_ASYNC_CACHEALWAYS<uint64_t>, "SM80_CP_ASYNC_CACHEALWAYS_U64", float, "Float32");
  CPY(SM80_CP_ASYNC_CACHEALWAYS<uint128_t>, "SM80_CP_ASYNC_CACHEALWAYS_U128", half_t, "Float16");
  CPY(SM80_CP_ASYNC_CACHEALWAYS<uint128_t>, "SM80_CP_ASYNC_CACHEALWAYS_U128", float, "Float32");
  CPY(SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>, "SM80_CP_ASYNC_CACHEGLOBAL_U128", bfloat16_t, "BFloat16");

  SMEM_ALL(uint8_t, "Uint8"); SMEM_ALL(half_t, "Float16"); SMEM_ALL(float, "Float32"); SMEM_ALL(double, "Float64");
  return 0;
}
