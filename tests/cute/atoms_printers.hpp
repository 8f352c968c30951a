// Printers for the generated atom harnesses (tests/test_atoms_cute_cpp.py writes one main() per
// translation unit from workbench's catalogs): one atom's layouts, as CuTe C++ itself computes them.
#pragma once
#include "atoms_common.hpp"
using namespace cute;

// An MMA atom's traits; `label` is "name|major_a|major_b" (majors: K or MN, CuTe's GMMA::Major).
template <class Op>
void mma(char const* label) {
  using T = MMA_Traits<Op>;
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
