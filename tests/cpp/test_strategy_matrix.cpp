// The correctness matrix (every strategy x canonical schedule x world size x dtype) and random
// schedules, asserted against docs/DESIGN.md §3; and accounted bytes equal to the model's, case by
// case.
#include <gtest/gtest.h>

#include <random>

#include "strategies/default_matrix.hpp"
#include "strategies/preset/preset.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

using testing::design_says_correct;
using testing::expect_bytes_and_peaks_of_the_model;
using testing::make_layout;
using testing::run_two_steps;

struct MatrixParam {
  int world;
  const char* dtype;
  friend std::ostream& operator<<(std::ostream& os, const MatrixParam& p) {
    return os << "world " << p.world << ", " << p.dtype;  // gtest prints this, not raw bytes
  }
};

class StrategyMatrix : public ::testing::TestWithParam<MatrixParam> {};

TEST_P(StrategyMatrix, OutcomeAndBytesFollowTheDesign) {
  const auto [world, dtype] = GetParam();
  auto be = make_host_backend({world, 1});
  // Odd sizes on purpose: 1 element, a prime, fewer elements than ranks, a multiple of N*8.
  const Layout layout = make_layout({1, 1009, 3, 64});
  int cases = 0;
  for (const StrategySpec& s : default_strategies())
    for (const CanonicalSchedule& c : kCanonicalSchedules) {
      const Schedule sched = canonical_schedule(c.name, 4);
      const CasePlan plan{layout, sched, s, parse_dtype_triple(dtype), GenMode::dyadic, 7, "t"};
      const auto o = run_two_steps(*be, plan);
      SCOPED_TRACE(s.name() + " schedule " + sched.modes + " world " + std::to_string(world) + " " +
                   dtype);
      EXPECT_EQ(o.correct, design_says_correct(s, sched)) << "max_rel_err " << o.max_rel_err;
      // Dyadic sums are exact; only the division by N rounds, and not at all for N a power of 2.
      const bool pow2 = (world & (world - 1)) == 0;
      if (design_says_correct(s, sched) && pow2) {
        EXPECT_EQ(o.max_rel_err, 0.0);
      }
      if (!design_says_correct(s, sched)) {
        EXPECT_GT(o.max_rel_err, 0.1);
      }
      expect_bytes_and_peaks_of_the_model(o);
      ++cases;
    }
  EXPECT_EQ(cases, static_cast<int>(default_strategies().size() * std::size(kCanonicalSchedules)));
}

INSTANTIATE_TEST_SUITE_P(
    WorldsAndDtypes, StrategyMatrix,
    ::testing::Values(MatrixParam{1, "fp32-fp32-fp32"}, MatrixParam{2, "fp32-fp32-fp32"},
                      MatrixParam{3, "fp32-fp32-fp32"}, MatrixParam{4, "fp32-fp32-fp32"},
                      MatrixParam{1, "bf16-bf16-fp32"}, MatrixParam{2, "bf16-bf16-fp32"},
                      MatrixParam{3, "bf16-bf16-fp32"}, MatrixParam{4, "bf16-bf16-fp32"}),
    [](const auto& info) {
      return "world" + std::to_string(info.param.world) + "_" +
             (std::string(info.param.dtype) == "fp32-fp32-fp32" ? "fp32" : "bf16_fp32accum");
    });

TEST(StrategyMatrix, RandomSchedulesFollowTheDesign) {
  std::mt19937 rng(20221);
  const Layout layout = make_layout({97, 16});
  for (int trial = 0; trial < 60; ++trial) {
    const int k = 1 + static_cast<int>(rng() % 8);
    std::string modes;
    for (int i = 0; i + 1 < k; ++i) modes += (rng() % 2) ? 'S' : 'n';
    modes += 'S';
    const int world = 1 + static_cast<int>(rng() % 3);
    auto be = make_host_backend({world, 1});
    const auto strategies = default_strategies();
    const StrategySpec& s = strategies[rng() % strategies.size()];
    const Schedule sched = parse_schedule(modes, k);
    const CasePlan plan{layout,
                        sched,
                        s,
                        parse_dtype_triple(trial % 2 ? "bf16-bf16-fp32" : "fp32-fp32-fp32"),
                        GenMode::dyadic,
                        static_cast<uint64_t>(trial),
                        "t"};
    const auto o = run_two_steps(*be, plan);
    SCOPED_TRACE(s.name() + " schedule " + modes + " world " + std::to_string(world));
    EXPECT_EQ(o.correct, design_says_correct(s, sched)) << "max_rel_err " << o.max_rel_err;
    EXPECT_EQ(o.measured.h2d_bytes, o.model.h2d_bytes);
    EXPECT_EQ(o.measured.d2h_bytes, o.model.d2h_bytes);
    EXPECT_EQ(o.measured.peak_device_bytes, o.model.peak_device_bytes);
    EXPECT_EQ(o.measured.peak_pinned_bytes, o.model.peak_pinned_bytes);
  }
}

// The pipelined offloads (idealised, docs/DESIGN.md §3) at a 64-element chunk: shards smaller than,
// equal to, three times and not a multiple of the chunk. Verdicts as gpu-add's and cpu-add's, and
// bytes and peaks (the two-chunk device ring, the one-chunk pinned staging) equal to the model's.
TEST(StrategyMatrix, PipelinedOffloadsAtEveryChunkShape) {
  constexpr uint64_t kChunk = 64;  // elements of the fp32 accum dtype
  for (const int world : {1, 2, 4}) {
    auto be = make_host_backend({world, 1});
    const uint64_t w = static_cast<uint64_t>(world);
    const Layout all = make_layout({1, kChunk * w, 3 * kChunk * w, (2 * kChunk + 8) * w, 1009});
    const uint64_t shards[] = {8, kChunk, 3 * kChunk, 2 * kChunk + 8};
    for (size_t i = 0; i < std::size(shards); ++i)
      ASSERT_EQ(shard_numel(all.units[i].numel, world), shards[i]);
    // Each shape alone too: the peak is then at its own add, so the staging's size shows in it.
    std::vector<Layout> layouts{all};
    for (size_t i = 0; i < std::size(shards); ++i)
      layouts.push_back(make_layout({all.units[i].numel}));
    for (const Layout& layout : layouts)
      for (const char* offload : {"gpu-add-pipelined", "cpu-add-pipelined"})
        for (const char* mode : {"flag", "shape"})
          for (const char* binding : {"data", "data-free"})
            for (const char* sched : {"SSSS", "nnnS", "nSnS", "SnSS"})
              for (const char* dtype : {"fp32-fp32-fp32", "bf16-bf16-fp32"}) {
                CasePlan plan{layout,
                              parse_schedule(sched, 4),
                              {binding, offload, mode},
                              parse_dtype_triple(dtype),
                              GenMode::dyadic,
                              9,
                              "t"};
                plan.chunk_bytes = kChunk * 4;
                const auto o = run_two_steps(*be, plan);
                SCOPED_TRACE(plan.strategy.name() + " schedule " + sched + " world " +
                             std::to_string(world) + " " + dtype + " units " +
                             std::to_string(layout.units.size()) + " first of " +
                             std::to_string(layout.units[0].numel));
                EXPECT_EQ(o.correct, design_says_correct(plan.strategy, plan.schedule))
                    << "max_rel_err " << o.max_rel_err;
                if (o.correct && (world & (world - 1)) == 0) {
                  EXPECT_EQ(o.max_rel_err, 0.0);
                }
                expect_bytes_and_peaks_of_the_model(o);
                // Pipelining changes times, not bytes: the same copies as the unpipelined value.
                CasePlan plain = plan;
                plain.strategy.offload = std::string(offload).substr(0, 7);  // gpu-add, cpu-add
                const Prediction m = predict(plain, world);
                EXPECT_EQ(o.measured.h2d_bytes, m.h2d_bytes);
                EXPECT_EQ(o.measured.d2h_bytes, m.d2h_bytes);
              }
  }
}

// The positive control: FSDP1's offload (preset fsdp1: copy-fsdp1, pre-post) on SSSS keeps only
// the last of four micro-batches, as `copy` does.
// Independent dyadic gradients make the error sqrt(3/4) ~ 0.87 (PyTorch FSDP1 shows 0.867).
TEST(PositiveControl, CopyOnSyncLosesThreeOfFourMicroBatches) {
  auto be = make_host_backend({2, 1});
  const CasePlan plan{make_layout({1 << 16, 4099}),
                      canonical_schedule("sync", 4),
                      preset("fsdp1"),
                      parse_dtype_triple("fp32-fp32-fp32"),
                      GenMode::dyadic,
                      1,
                      "t"};
  const auto o = run_two_steps(*be, plan);
  EXPECT_FALSE(o.correct);
  EXPECT_NEAR(o.max_rel_err, 0.866, 0.02);
}

TEST(Presets, FairscaleAndFsdp1WrongFsdp2AndZero3RightOnInterleaved) {
  auto be = make_host_backend({2, 1});
  const Schedule sched = canonical_schedule("interleaved-sync-last", 4);
  for (const char* p : {"fairscale", "fsdp1", "fsdp2", "zero3"}) {
    const CasePlan plan{make_layout({1000}), sched, preset(p), parse_dtype_triple("fp32-fp32-fp32"),
                        GenMode::dyadic,     3,     "t"};
    const auto o = run_two_steps(*be, plan);
    const bool expect = std::string(p) == "fsdp2" || std::string(p) == "zero3";
    EXPECT_EQ(o.correct, expect) << p;
  }
}

// `ideal` (the limit strategy): correct on every schedule and world, with gpu-add's bytes (the
// pipelining and the in-collective mean change times, not what crosses PCIe) and no host pass.
TEST(Presets, IdealIsCorrectWithGpuAddsBytesAndNoHostPass) {
  for (int world : {1, 2, 3, 4}) {
    auto be = make_host_backend({world, 1});
    for (const char* s : {"SSSS", "nnnS", "nSnS", "SnSS"}) {
      const Schedule sched = parse_schedule(s, 4);
      const auto plan = [&](const StrategySpec& spec) {
        return CasePlan{make_layout({1000, 4096, 77}),
                        sched,
                        spec,
                        parse_dtype_triple("fp32-fp32-fp32"),
                        GenMode::dyadic,
                        3,
                        "t"};
      };
      const auto ideal = run_two_steps(*be, plan(preset("ideal")));
      const auto gpu_add = run_two_steps(*be, plan({"data-free", "gpu-add", "flag"}));
      EXPECT_TRUE(ideal.correct) << world << " " << s << " err " << ideal.max_rel_err;
      EXPECT_EQ(ideal.measured.h2d_bytes, gpu_add.measured.h2d_bytes) << world << " " << s;
      EXPECT_EQ(ideal.measured.d2h_bytes, gpu_add.measured.d2h_bytes) << world << " " << s;
      EXPECT_EQ(ideal.measured.h2d_bytes, ideal.model.h2d_bytes) << world << " " << s;
      EXPECT_EQ(ideal.measured.d2h_bytes, ideal.model.d2h_bytes) << world << " " << s;
      EXPECT_EQ(ideal.measured.division_host_bytes, 0u) << world << " " << s;
    }
  }
}

// Random full-mantissa values: not exact, but within the bound derived from the roundings.
TEST(Oracle, RandomValuesStayWithinTheDerivedBound) {
  auto be = make_host_backend({3, 1});
  for (const char* d : {"fp32-fp32-fp32", "bf16-bf16-fp32"}) {
    const CasePlan plan{make_layout({5000}),
                        canonical_schedule("interleaved-nosync-last", 6),
                        preset("fsdp2"),
                        parse_dtype_triple(d),
                        GenMode::random,
                        11,
                        "t"};
    const auto o = run_two_steps(*be, plan);
    EXPECT_TRUE(o.correct) << d << " err " << o.max_rel_err;
    EXPECT_GT(o.max_rel_err, 0.0) << d << ": random values must round somewhere";
  }
}

}  // namespace
}  // namespace shardaccum
