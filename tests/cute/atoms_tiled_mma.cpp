// Differential harness, part 2: tiled MMAs, printed by CuTe C++ itself.
// The ids match TILED_MMAS / TILED_COPIES in tests/test_atoms_cute_cpp.py.
#include "atoms_tiled_mmas.hpp"

template <class TM>
void tmma(char const* id, TM const& m) {
  char buf[256];
  snprintf(buf, sizeof buf, "tmma|%s|vmnk", id); emit(buf, m.get_thr_layout_vmnk());
  snprintf(buf, sizeof buf, "tmma|%s|A", id); emit(buf, m.get_layoutA_TV());
  snprintf(buf, sizeof buf, "tmma|%s|B", id); emit(buf, m.get_layoutB_TV());
  snprintf(buf, sizeof buf, "tmma|%s|C", id); emit(buf, m.get_layoutC_TV());
  snprintf(buf, sizeof buf, "tmma|%s|tile", id);
  emit(buf, make_layout(make_shape(tile_size<0>(m), tile_size<1>(m), tile_size<2>(m))));
  // one thread's partitions of a row-major (2*TileM, 2*TileN/K) tile
  auto M = tile_size<0>(m) * _2{}; auto N = tile_size<1>(m) * _2{}; auto K = tile_size<2>(m) * _2{};
  int t = int(size(m)) / 2 + 1;
  auto thr = m.get_slice(t);
  auto gC = make_tensor(make_gmem_ptr((float*)nullptr), make_layout(make_shape(M, N), LayoutRight{}));
  auto gA = make_tensor(make_gmem_ptr((float*)nullptr), make_layout(make_shape(M, K), LayoutRight{}));
  auto gB = make_tensor(make_gmem_ptr((float*)nullptr), make_layout(make_shape(N, K), LayoutRight{}));
  snprintf(buf, sizeof buf, "tmma|%s|partition_C", id); emit(buf, thr.partition_C(gC).layout());
  snprintf(buf, sizeof buf, "tmma|%s|partition_A", id); emit(buf, thr.partition_A(gA).layout());
  snprintf(buf, sizeof buf, "tmma|%s|partition_B", id); emit(buf, thr.partition_B(gB).layout());
}

int main() {
  TILED_MMAS
  tmma("t1", t1); tmma("t2", t2); tmma("t3", t3); tmma("t4", t4); tmma("t5", t5); tmma("t6", t6); tmma("t7", t7);
  tmma("t8", t8); tmma("t9", t9); tmma("t10", t10); tmma("t11", t11); tmma("t12", t12); tmma("t13", t13);
  tmma("t14", t14); tmma("t15", t15); tmma("t16", t16); tmma("t17", t17); tmma("t18", t18); tmma("t19", t19);
  tmma("t20", t20);

  return 0;
}
