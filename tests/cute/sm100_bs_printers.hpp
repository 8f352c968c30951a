// Printers for the block-scaled UMMA part of the SM100 differential harness (tests/test_atoms_sm100_cute_cpp.py):
// every line is "label|value" with CuTe's own print().
#pragma once
#include "sm100_printers.hpp"
#include <cutlass/detail/sm100_blockscaled_layout.hpp>

// One block-scaled UMMA atom's traits: ThrID, A/B/C layouts, Shape_MNK, the block-scaled instruction descriptor,
// SFVecSize, and MMA_ScaleFactor's Shape_MNK and descriptor.
template <class T>
void umma_bs(char const* label) {
  char buf[512];
  snprintf(buf, sizeof buf, "bs|%s|thr_id", label); emit(buf, typename T::ThrID{});
  snprintf(buf, sizeof buf, "bs|%s|A", label); emit(buf, typename T::ALayout{});
  snprintf(buf, sizeof buf, "bs|%s|B", label); emit(buf, typename T::BLayout{});
  snprintf(buf, sizeof buf, "bs|%s|C", label); emit(buf, typename T::CLayout{});
  snprintf(buf, sizeof buf, "bs|%s|mnk", label); emit(buf, make_layout(typename T::Shape_MNK{}));
  printf("bs|%s|idesc|%08x\n", label, unsigned(T{}.idesc_.desc_));
  printf("bs|%s|vs|%d\n", label, int(T::SFVecSize));
  using SF = MMA_Traits<typename T::MMA_ScaleFactor>;
  snprintf(buf, sizeof buf, "bs|%s|sf_mnk", label); emit(buf, make_layout(typename SF::Shape_MNK{}));
  printf("bs|%s|sf_idesc|%08x\n", label, unsigned(SF{}.idesc_.desc_));
}

// Each mode of a by-mode tiler (a tuple of layouts) on its own line: "sf|label|part|i|layout".
template <class Tiler>
void print_tiler(char const* label, char const* part, Tiler const& t) {
  for_each(make_int_sequence<rank_v<Tiler>>{}, [&](auto i) {
    printf("sf|%s|%s|%d|", label, part, int(decltype(i)::value)); print(get<decltype(i)::value>(t)); printf("\n");
  });
}

// The scale factors of a one-atom tiled MMA over a (TM, TN, TK) tile: CUTLASS's shared-memory SF layouts
// (Sm1xxBlockScaledConfig::deduce_smem_layoutSFA/SFB), the TMEM fragments CuTe makes of their shapes
// (make_tensor<FrgTypeSFA/SFB>) and the UTCCP tiled copies of the compacted fragments, as CUTLASS's block-scaled
// collective builds them (sm100_blockscaled_mma_warpspecialized.hpp).
template <class Op, class Utccp, int TM, int TN, int TK>
void sf_frg(char const* label) {
  auto tmma = make_tiled_mma(Op{});
  using TM_ = decltype(tmma);
  using Cfg = cutlass::detail::Sm1xxBlockScaledConfig<MMA_Traits<Op>::SFVecSize>;
  auto tile = Shape<Int<TM>, Int<TN>, Int<TK>>{};
  auto sA = Cfg::deduce_smem_layoutSFA(tmma, tile);
  auto sB = Cfg::deduce_smem_layoutSFB(tmma, tile);
  auto tA = make_tensor<typename TM_::FrgTypeSFA>(shape(sA));
  auto tB = make_tensor<typename TM_::FrgTypeSFB>(shape(sB));
  char buf[512];
  snprintf(buf, sizeof buf, "sf|%s|sA", label); emit(buf, sA);
  snprintf(buf, sizeof buf, "sf|%s|sB", label); emit(buf, sB);
  snprintf(buf, sizeof buf, "sf|%s|tA", label); emit(buf, tA.layout());
  snprintf(buf, sizeof buf, "sf|%s|tB", label); emit(buf, tB.layout());
  auto cA = make_tensor(tA.data(), filter_zeros(tA.layout()));
  auto cB = make_tensor(tB.data(), filter_zeros(tB.layout()));
  snprintf(buf, sizeof buf, "sf|%s|cA", label); emit(buf, cA.layout());
  snprintf(buf, sizeof buf, "sf|%s|cB", label); emit(buf, cB.layout());
  auto kA = make_utccp_copy(Utccp{}, cA);
  auto kB = make_utccp_copy(Utccp{}, cB);
  using KA = decltype(kA);
  using KB = decltype(kB);
  snprintf(buf, sizeof buf, "sf|%s|uA_S", label); emit(buf, kA.get_layoutS_TV());
  snprintf(buf, sizeof buf, "sf|%s|uA_D", label); emit(buf, kA.get_layoutD_TV());
  print_tiler(label, "uA_T", typename KA::Tiler_MN{});
  snprintf(buf, sizeof buf, "sf|%s|uB_S", label); emit(buf, kB.get_layoutS_TV());
  snprintf(buf, sizeof buf, "sf|%s|uB_D", label); emit(buf, kB.get_layoutD_TV());
  print_tiler(label, "uB_T", typename KB::Tiler_MN{});
}

// make_runtime_instr_desc_block_scaled(idesc_, tsfa, tsfb) for scale-factor TMEM addresses whose top two bits
// (the byte within a 32-bit column) run over 0..3: the 64-bit operand with a_sf_id / b_sf_id set.
template <class T>
void bs_runtime(char const* label) {
  for (uint32_t i = 0; i < 4; ++i)
    for (uint32_t j = 0; j < 4; ++j) {
      uint32_t sfa = (i << 30) | 0x00200010u, sfb = (j << 30) | 0x00400020u;
      printf("bsrt|%s|%08x|%08x|%016llx\n", label, sfa, sfb,
             (unsigned long long)UMMA::make_runtime_instr_desc_block_scaled<>(T{}.idesc_, sfa, sfb));
    }
}
