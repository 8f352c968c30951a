// Printers for the generated atom harnesses (tests/test_atoms_cute_cpp.py writes one main() per
// translation unit from workbench's catalogs): one atom's layouts, as CuTe C++ itself computes them.
#pragma once
#include "atoms_common.hpp"
using namespace cute;

// CuTe's type letters in MMA names, from the traits' value types (so signedness is checked too)
template <class T>
char const* type_code() {
  if constexpr (std::is_same_v<T, half_t>) return "F16";
  else if constexpr (std::is_same_v<T, bfloat16_t>) return "BF16";
  else if constexpr (std::is_same_v<T, tfloat32_t>) return "TF32";
  else if constexpr (std::is_same_v<T, float>) return "F32";
  else if constexpr (std::is_same_v<T, double>) return "F64";
  else if constexpr (std::is_same_v<T, int8_t>) return "S8";
  else if constexpr (std::is_same_v<T, uint8_t>) return "U8";
  else if constexpr (std::is_same_v<T, int32_t>) return "S32";
  else if constexpr (std::is_same_v<T, float_e4m3_t>) return "E4M3";
  else if constexpr (std::is_same_v<T, float_e5m2_t>) return "E5M2";
  else return "?";
}

// An MMA atom's traits; `label` is "name|major_a|major_b" (majors: K or MN, CuTe's GMMA::Major).
template <class Op>
void mma(char const* label) {
  using T = MMA_Traits<Op>;
  printf("mma|%s|types|%s,%s,%s,%s\n", label, type_code<typename T::ValTypeD>(), type_code<typename T::ValTypeA>(),
         type_code<typename T::ValTypeB>(), type_code<typename T::ValTypeC>());
  char buf[256];
  snprintf(buf, sizeof buf, "mma|%s|thr_id", label); emit(buf, typename T::ThrID{});
  snprintf(buf, sizeof buf, "mma|%s|A", label); emit(buf, typename T::ALayout{});
  snprintf(buf, sizeof buf, "mma|%s|B", label); emit(buf, typename T::BLayout{});
  snprintf(buf, sizeof buf, "mma|%s|C", label); emit(buf, typename T::CLayout{});
  snprintf(buf, sizeof buf, "mma|%s|mnk", label); emit(buf, make_layout(typename T::Shape_MNK{}));
}

// A copy atom over one value type (Copy_Atom recasts the bit layouts of the traits).
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
