// CUTLASS's own CuTe unit-test inputs with dynamic (run-time int) extents and strides (test/unit/cute/core:
// coalesce.cpp, complement.cpp, composition.cpp, logical_divide.cpp, inverse_right.cpp), printed by CuTe C++ (the
// nvidia-cutlass wheel's headers) as "name|result".  tests/test_algebra_cute_cpp.py builds each with the workbench
// (a plain int here is a wb.Dyn there, a _N an int) and compares.
#include <cute/tensor.hpp>
#include <cute/layout.hpp>
#include <iostream>
using namespace cute;
#define P(name, expr) do { std::cout << name << "|"; print(expr); std::cout << "\n"; } while (0)
int main() {
  // coalesce
  P("coalesce (2,_4,_6):colmajor", coalesce(make_layout(make_shape(2, Int<4>{}, Int<6>{}))));
  P("coalesce (_2,4,_6):colmajor", coalesce(make_layout(make_shape(Int<2>{}, 4, Int<6>{}))));
  P("coalesce (_2,_4,6):colmajor", coalesce(make_layout(make_shape(Int<2>{}, Int<4>{}, 6))));
  P("coalesce (2,_4,_6):rowmajor", coalesce(make_layout(make_shape(2, Int<4>{}, Int<6>{}), GenRowMajor{})));
  P("coalesce (_2,4,_6):rowmajor", coalesce(make_layout(make_shape(Int<2>{}, 4, Int<6>{}), GenRowMajor{})));
  P("coalesce (_2,_4,6):rowmajor", coalesce(make_layout(make_shape(Int<2>{}, Int<4>{}, 6), GenRowMajor{})));
  P("coalesce (_2,1,_3):rowmajor", coalesce(make_layout(make_shape(Int<2>{}, 1, Int<3>{}), GenRowMajor{})));
  P("coalesce (_2,1,_3):(_2,4,_4)", coalesce(make_layout(make_shape(Int<2>{}, 1, Int<3>{}), make_stride(Int<2>{}, 4, Int<4>{}))));
  P("coalesce (_2,_1,_6):(_1,7,_2)", coalesce(make_layout(make_shape(Int<2>{}, Int<1>{}, Int<6>{}), make_stride(Int<1>{}, 7, Int<2>{}))));
  P("coalesce (_2,_1,_6):(_4,7,_8)", coalesce(make_layout(make_shape(Int<2>{}, Int<1>{}, Int<6>{}), make_stride(Int<4>{}, 7, Int<8>{}))));
  // composition
  P("composition 12:1 o _4:_1", composition(make_layout(12, 1), make_layout(_4{}, _1{})));
  P("composition 12:1 o _4:1", composition(make_layout(12, 1), make_layout(_4{}, 1)));
  P("composition 12:_1 o _4:1", composition(make_layout(12, _1{}), make_layout(_4{}, 1)));
  P("composition 12:_1 o _4:_1", composition(make_layout(12, _1{}), make_layout(_4{}, _1{})));
  P("composition (12,3):(1,24) o _4:_1", composition(make_layout(make_shape(12,3), make_stride(1,24)), make_layout(Shape<_4>{}, Stride<_1>{})));
  P("composition 16:2 o 4:2", composition(make_layout(16, 2), make_layout(4, 2)));
  P("composition (128,24,5):(1,128,3072) o 64:2", composition(make_layout(make_shape(128,24,5), make_stride(1,128,3072)), make_layout(64, 2)));
  P("composition (128,24,5):(1,128,3072) o 480:_32", composition(make_layout(make_shape(128,24,5), make_stride(1,128,3072)), make_layout(480, Int<32>{})));
  P("composition 3:_1 o _4:_1", composition(make_layout(3, _1{}), make_layout(_4{}, _1{})));
  P("composition (48,24,5):(_1,128,3072) o 32:_1", composition(make_layout(make_shape(48,24,5), make_stride(_1{},128,3072)), make_layout(32, Int<1>{})));
  // logical_divide
  P("logical_divide 2:_1 / _32:_1", logical_divide(make_layout(2), Layout<_32>{}));
  P("logical_divide 48:_1 / _32:_1", logical_divide(make_layout(48), Layout<_32>{}));
  P("logical_divide 96:_1 / _32:_2", logical_divide(make_layout(96), Layout<_32,_2>{}));
  P("logical_divide 32:_1 / _48:_1", logical_divide(make_layout(32), Layout<_48>{}));
  P("logical_divide (_32,_4,4) / _64:_1", logical_divide(make_layout(make_shape(Int<32>{}, Int<4>{}, 4)), Layout<_64>{}));
  // complement
  P("complement 12:_1 1", complement(make_layout(12), 1));
  P("complement 12:_1", complement(make_layout(12)));
  P("complement 12:_1 53", complement(make_layout(12), 53));
  P("complement 12:_1 128", complement(make_layout(12), 128));
  P("complement 12:1 1", complement(make_layout(12, 1), 1));
  P("complement 12:1", complement(make_layout(12, 1)));
  P("complement 12:1 53", complement(make_layout(12, 1), 53));
  P("complement 12:1 128", complement(make_layout(12, 1), 128));
  P("complement 12:_2 1", complement(make_layout(12, Int<2>{}), 1));
  P("complement 12:_2", complement(make_layout(12, Int<2>{})));
  P("complement 12:_2 53", complement(make_layout(12, Int<2>{}), 53));
  P("complement 12:_2 128", complement(make_layout(12, Int<2>{}), 128));
  P("complement 12:2 1", complement(make_layout(12, 2), 1));
  P("complement 12:2", complement(make_layout(12, 2)));
  P("complement 12:2 53", complement(make_layout(12, 2), 53));
  P("complement 12:2 128", complement(make_layout(12, 2), 128));
  P("complement (3,6):(_1,_3)", complement(make_layout(make_shape(3,6),make_stride(_1{}, _3{}))));
  P("complement (3,6):(_1,_9)", complement(make_layout(make_shape(3,6),make_stride(_1{}, _9{}))));
  P("complement (3,6):(_1,_10)", complement(make_layout(make_shape(3,6),make_stride(_1{}, _10{}))));
  P("complement ((2,2),(2,2)):((_1,_4),(_8,_32))", complement(make_layout(make_shape(make_shape(2,2), make_shape(2,2)), Stride<Stride<_1,_4>,Stride<_8,_32>>{})));
  P("complement _64 (_32,_4,4)", complement(make_layout(Int<64>{}), make_shape(Int<32>{}, Int<4>{}, 4)));
  P("complement _1:_2 (_2,2)", complement(Layout<_1,_2>{}, make_shape(Int<2>{}, 2)));
  P("complement _4:_2 (_2,2)", complement(Layout<_4,_2>{}, make_shape(Int<2>{}, 2)));
  P("complement _4:_4 (_2,2)", complement(Layout<_4,_4>{}, make_shape(Int<2>{}, 2)));
  // right inverse
  P("right_inverse (_4,_2):(_1,4)", right_inverse(make_layout(Shape<_4, _2>{}, make_stride(Int<1>{}, 4))));
  P("right_inverse (_4,2):(_1,4)", right_inverse(make_layout(make_shape(_4{}, 2), make_stride(Int<1>{}, 4))));
  P("right_inverse (4,2):(_1,4)", right_inverse(make_layout(make_shape(4, 2), make_stride(Int<1>{}, 4))));
  P("right_inverse (_2,_4):(4,_1)", right_inverse(make_layout(Shape<_2, _4>{}, make_stride(4, Int<1>{}))));
  P("right_inverse (2,_4):(4,_1)", right_inverse(make_layout(make_shape(2, Int<4>{}), make_stride(4, Int<1>{}))));
  P("right_inverse (2,4):(4,_1)", right_inverse(make_layout(make_shape(2, 4), make_stride(4, Int<1>{}))));
  // beside CUTLASS's inputs: a dynamic extent after static modes, where CuTe C++ 4.2 and CuTe DSL 4.8.1 differ
  P("composition (_8,3):(_1,_8) o _64:_1", composition(make_layout(make_shape(_8{}, 3)), Layout<_64>{}));
  P("logical_divide (_8,3):(_1,_8) / _64:_1", logical_divide(make_layout(make_shape(_8{}, 3)), Layout<_64>{}));
  P("logical_divide (_4,_4,3):(_1,_8,_64) / _64:_1",
    logical_divide(make_layout(make_shape(_4{}, _4{}, 3), make_stride(_1{}, _8{}, _64{})), Layout<_64>{}));
  P("composition (_32,3,_3):(_1,_32,96) o _64:_1",
    composition(make_layout(make_shape(_32{}, 3, _3{}), make_stride(_1{}, _32{}, 96)), Layout<_64>{}));
  P("coalesce (_8,3):(_1,_8)", coalesce(make_layout(make_shape(_8{}, 3))));
  return 0;
}
