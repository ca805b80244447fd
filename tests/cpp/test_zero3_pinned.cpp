// DeepSpeed ZeRO-3's pinned buffers (strategies/offload/zero3_pinned.hpp): one for the gradient
// partition and one fp32 buffer per optimizer sub-group, each rounded up to a power of two by
// PyTorch's caching host allocator. The totals are what DeepSpeed 0.19.8 pinned on one H100
// (reports/h100-zero3-validation-1206/real-zero3-*.json, peak_pinned_bytes), less the 12 bytes of
// small tensors it pins besides.
#include <gtest/gtest.h>

#include <numeric>

#include "bench/model_layouts.hpp"
#include "strategies/offload/zero3_pinned.hpp"
#include "strategies/unit_grad.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

std::vector<std::vector<uint64_t>> pieces_of(const char* model) {
  const Layout l = load_layout(model, {SHARDACCUM_CONFIG_DIR});
  std::vector<std::vector<uint64_t>> out;
  for (const auto& u : l.units) out.push_back(param_pieces(u, 1));
  return out;
}

uint64_t sum(const std::vector<uint64_t>& v) {
  return std::accumulate(v.begin(), v.end(), uint64_t{0});
}

}  // namespace

// 16 parameters of 64 Mi elements: the gradient partition is 4 GiB exactly; the sub-groups close
// at the 15th parameter (1,006,632,960 >= 1e9 elements), 3.75 GiB rounded to 4 GiB, then the 16th,
// 256 MiB: 8.25 GiB, DeepSpeed's 8,858,370,060 bytes but 12.
TEST(Zero3Pinned, Uniform16x64MIsDeepSpeedsEightAndAQuarterGiB) {
  const Zero3PinnedShares s = zero3_pinned_shares(pieces_of("uniform:16x64M"), DType::fp32);
  EXPECT_EQ(sum(s.saved), 4ull << 30);
  EXPECT_EQ(sum(s.master), (4ull << 30) + (256ull << 20));
  EXPECT_EQ(sum(s.saved) + sum(s.master), 8'858'370'060ull - 12);
  // The last unit is the second sub-group alone: counted at its own bytes.
  EXPECT_EQ(s.master.back(), 256ull << 20);
}

// gpt2-xl (6.23 GB of fp32 gradients): 8 GiB for the partition and two sub-groups of up to 4 GiB
// each: DeepSpeed's 17,179,869,196 bytes but 12.
TEST(Zero3Pinned, Gpt2XlIsDeepSpeedsSixteenGiB) {
  const Zero3PinnedShares s = zero3_pinned_shares(pieces_of("gpt2-xl"), DType::fp32);
  EXPECT_EQ(sum(s.saved), 8ull << 30);
  EXPECT_EQ(sum(s.master), 8ull << 30);
  EXPECT_EQ(sum(s.saved) + sum(s.master), 17'179'869'196ull - 12);
}

// Each share is at least the unit's own bytes (the buffer only grows by rounding), the shares sum
// to the rounded buffer exactly, and a total that is a power of two already is shared out exactly.
TEST(Zero3Pinned, SharesAreAtLeastTheBytesAndSumToThePowerOfTwo) {
  const std::vector<std::vector<uint64_t>> pieces = {{3}, {5, 7}, {1}, {11}};
  const Zero3PinnedShares s = zero3_pinned_shares(pieces, DType::fp32, 10);
  const std::vector<uint64_t> bytes = {12, 48, 4, 44};
  for (size_t i = 0; i < bytes.size(); ++i) EXPECT_GE(s.saved[i], bytes[i]) << i;
  EXPECT_EQ(sum(s.saved), 128u);  // 108 B rounded
  // Sub-groups {3, 5, 7} (15 >= 10), then {1, 11} (the last parameter closes it): 60 B -> 64 and
  // 48 B -> 64.
  EXPECT_EQ(sum(s.master), 128u);
  const Zero3PinnedShares exact = zero3_pinned_shares({{4}, {4}}, DType::fp32);
  EXPECT_EQ(exact.saved, (std::vector<uint64_t>{16, 16}));
  EXPECT_EQ(exact.master, (std::vector<uint64_t>{16, 16}));
}

}  // namespace shardaccum
