// Tiled MMAs shared by both tiled harness translation units (ids match tests/test_atoms_cute_cpp.py).
#pragma once
#include "atoms_common.hpp"
using namespace cute;
#define TILED_MMAS \
 \
  using L221 = Layout<Shape<_2, _2, _1>>; \
  auto t1 = make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN{}, L221{}, Tile<_32, _32, _16>{}); \
  auto t2 = make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN{}, L221{}); \
  auto t3 = make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN{}, Layout<Shape<_2, _4, _1>>{}, Tile<_32, _64, _16>{}); \
  auto t4 = make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN{}, L221{}, \
                           Tile<_32, Layout<Shape<_8, _2, _2>, Stride<_1, _16, _8>>, _16>{}); \
  auto t5 = make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN{}, Layout<Shape<_2, _2, _1>, Stride<_2, _1, _0>>{}); \
  auto t6 = make_tiled_mma(SM80_16x8x8_F16F16F16F16_TN{}, Layout<Shape<_4, _1, _1>>{}); \
  auto t7 = make_tiled_mma(SM80_16x8x8_F32BF16BF16F32_TN{}, Layout<Shape<_1, _4, _1>>{}, Tile<_16, _64, _16>{}); \
  auto t8 = make_tiled_mma(SM80_16x8x8_F32TF32TF32F32_TN{}, L221{}, Tile<_32, _32, _8>{}); \
  auto t9 = make_tiled_mma(SM80_16x8x32_S32S8S8S32_TN{}, L221{}); \
  auto t10 = make_tiled_mma(SM80_8x8x4_F64F64F64F64_TN{}, L221{}, Tile<_16, _32, _4>{}); \
  auto t11 = make_tiled_mma(SM70_8x8x4_F32F16F16F32_TN{}, L221{}); \
  auto t12 = make_tiled_mma(SM70_8x8x4_F16F16F16F16_NT{}, Layout<Shape<_4, _2, _1>>{}, Tile<_32, _32, _4>{}); \
  auto t13 = make_tiled_mma(SM75_16x8x8_F32F16F16F32_TN{}, Layout<Shape<_2, _1, _1>>{}); \
  auto t14 = make_tiled_mma(SM89_16x8x32_F32E4M3E4M3F32_TN{}, L221{}); \
  auto t15 = make_tiled_mma(SM90_64x128x16_F32F16F16_SS<GMMA::Major::K, GMMA::Major::K>{}, Layout<Shape<_2, _1, _1>>{}); \
  auto t16 = make_tiled_mma(SM90_64x64x16_F16F16F16_RS<GMMA::Major::K, GMMA::Major::K>{}); \
  auto t17 = make_tiled_mma(UniversalFMA<float>{}, Layout<Shape<_16, _16, _1>>{}); \
  auto t18 = make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN{}, Layout<Shape<_2, _2, _2>>{}); \
  auto t19 = make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN{}, Layout<Shape<_1, _1, _1>>{}, Tile<_32, _16, _16>{}); \
  auto t20 = make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN{}, L221{}, \
                            Tile<Layout<Shape<_16, _2>, Stride<_2, _1>>, _32, _16>{});
