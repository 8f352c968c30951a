// Shared by the atoms harness translation units: host-only printing of CuTe layouts.
// Every line is "label|layout" with CuTe's own print() of the layout, or "label|v0,v1,..." for
// functions the test compares value by value (swizzled shared-memory atoms).
#pragma once
#include <cstdio>
#include <cute/tensor.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cute/atom/copy_atom.hpp>
#include <cute/arch/mma_sm90_gmma_ext.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/atom/mma_traits_sm90_gmma_ext.hpp>
#include <cute/atom/copy_traits_sm75.hpp>
#include <cute/atom/copy_traits_sm80.hpp>
#include <cute/atom/copy_traits_sm90.hpp>

template <class L>
void emit(char const* label, L const& layout) {
  printf("%s|", label);
  cute::print(layout);
  printf("\n");
}
