// copy-in `no-shard` (FSDP1's NO_SHARD at world size 1, docs/PRESETS.md G5) on the host backend:
// at world 1 no reduce-scatter and no output shard, the gradient kept as the accumulator without
// offload (the peak the same on every schedule, as FSDP1's measured one) and itself the D2H's
// source with offload (a blocking copy, kept until the micro-batch's end); every byte and peak
// equal to the model's; at world 2 and 4 the same as copy-in `none`.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "strategies/preset/preset.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

using testing::design_says_correct;
using testing::expect_bytes_and_peaks_of_the_model;
using testing::make_layout;
using testing::run_two_steps;

constexpr const char* kSchedules[] = {"SSSS", "nnnS", "nSnS", "SnSS"};

CasePlan plan_of(const Layout& l, const char* sched, const char* offload, const char* copy_in,
                 const char* dtype) {
  CasePlan p{l,
             parse_schedule(sched, 4),
             {"data-free", offload, "shape", "pre-post", Lookahead::unbounded, copy_in},
             parse_dtype_triple(dtype),
             GenMode::dyadic,
             17,
             "t"};
  return p;
}

TEST(NoShard, AtWorldOneNoReduceScatterAndTheModelsBytesAndPeaks) {
  auto be = make_host_backend({1, 1});
  const Layout layout = make_layout({1, 1009, 3, 96});
  for (const char* offload : {"none", "copy-fsdp1", "copy", "gpu-add", "cpu-add"})
    for (const char* sched : kSchedules)
      for (const char* dtype : {"fp32-fp32-fp32", "bf16-bf16-fp32"})
        for (const char* division : {"pre-post", "end", "pre"}) {
          CasePlan plan = plan_of(layout, sched, offload, "no-shard", dtype);
          plan.strategy.division = division;
          SCOPED_TRACE(plan.strategy.name() + " " + sched + " " + dtype);
          const auto o = run_two_steps(*be, plan);
          EXPECT_EQ(o.correct, design_says_correct(plan.strategy, plan.schedule))
              << "max_rel_err " << o.max_rel_err;
          expect_bytes_and_peaks_of_the_model(o);
          EXPECT_EQ(o.measured.reduce_scatter_calls, 0u);
          EXPECT_EQ(o.measured.nccl_input_bytes, 0u);
        }
}

// Without offload NO_SHARD's gradient is the accumulator: one unsharded gradient per unit, alive
// from its first backward, on every schedule (FSDP1 at world 1 measured its peak equal on the four
// schedules, docs/PRESETS.md "Again with the GEMM backward"); copy-in `none` keeps a saved shard
// beside the gradients of the units after it, so its peaks differ by schedule.
TEST(NoShard, WithoutOffloadThePeakIsTheSameOnEverySchedule) {
  auto be = make_host_backend({1, 1});
  const Layout layout = make_layout({4096, 1009, 777});
  uint64_t grads = 0;
  for (const auto& u : layout.units) grads += padded_numel(u.numel, 1) * 4;
  for (const char* sched : kSchedules) {
    SCOPED_TRACE(sched);
    const auto o = run_two_steps(*be, plan_of(layout, sched, "none", "no-shard", "fp32-fp32-fp32"));
    EXPECT_TRUE(o.correct);
    EXPECT_EQ(o.measured.peak_device_bytes, grads);
    EXPECT_EQ(o.measured.d2h_bytes + o.measured.h2d_bytes, 0u);
    const auto rs = run_two_steps(*be, plan_of(layout, sched, "none", "none", "fp32-fp32-fp32"));
    EXPECT_GT(rs.measured.peak_device_bytes, grads);  // the reduce-scatter's output beside them
  }
}

// With offload the D2H reads the gradient itself, which stays on the device until the micro-batch
// ends: the same D2H bytes as through a reduce-scatter, one output shard less at the peak.
TEST(NoShard, WithOffloadTheGradientIsTheCopysSource) {
  auto be = make_host_backend({1, 1});
  const Layout layout = make_layout({4096, 1009, 777});
  for (const char* offload : {"copy-fsdp1", "copy-fairscale"})
    for (const char* sched : kSchedules) {
      SCOPED_TRACE(std::string(offload) + " " + sched);
      const auto o =
          run_two_steps(*be, plan_of(layout, sched, offload, "no-shard", "fp32-fp32-fp32"));
      const auto rs = run_two_steps(*be, plan_of(layout, sched, offload, "none", "fp32-fp32-fp32"));
      EXPECT_EQ(o.measured.d2h_bytes, rs.measured.d2h_bytes);
      EXPECT_EQ(o.correct, rs.correct);
      EXPECT_LT(o.measured.peak_device_bytes, rs.measured.peak_device_bytes);
    }
}

// --param-traffic on: under NO_SHARD one device copy of every unit's parameters stays (the last
// unshard's tensor, held by the module's views; NO_SHARD frees no storage at reshard), each
// replaced by the next copy; through a reduce-scatter (FULL_SHARD) at most the backward's copy and
// the prefetched one are alive.
TEST(NoShard, OneCopyOfEveryUnitsParametersStaysOnTheDevice) {
  auto be = make_host_backend({1, 1});
  const Layout layout = make_layout({4096, 1009, 777, 64});
  uint64_t params = 0;
  for (const auto& u : layout.units) params += padded_numel(u.numel, 1) * 4;
  for (const char* copy_in : {"no-shard", "none"}) {
    SCOPED_TRACE(copy_in);
    CasePlan on = plan_of(layout, "nnnS", "copy-fsdp1", copy_in, "fp32-fp32-fp32");
    on.param_traffic = true;
    const auto with = run_two_steps(*be, on);
    const auto without =
        run_two_steps(*be, plan_of(layout, "nnnS", "copy-fsdp1", copy_in, "fp32-fp32-fp32"));
    expect_bytes_and_peaks_of_the_model(with);
    const uint64_t extra = with.measured.peak_device_bytes - without.measured.peak_device_bytes;
    if (std::string(copy_in) == "no-shard")
      EXPECT_GE(extra, params);
    else
      EXPECT_LT(extra, params);
  }
}

TEST(NoShard, AtWorldsTwoAndFourTheSameAsNone) {
  for (const int world : {2, 4}) {
    auto be = make_host_backend({world, 1});
    const Layout layout = make_layout({1, 1009, 3, 96});
    for (const char* offload : {"none", "copy-fsdp1"})
      for (const char* sched : kSchedules) {
        SCOPED_TRACE(std::string(offload) + " " + sched + " world " + std::to_string(world));
        const auto o =
            run_two_steps(*be, plan_of(layout, sched, offload, "no-shard", "fp32-fp32-fp32"));
        const auto n =
            run_two_steps(*be, plan_of(layout, sched, offload, "none", "fp32-fp32-fp32"));
        EXPECT_EQ(o.correct, n.correct);
        EXPECT_EQ(o.measured.reduce_scatter_calls, n.measured.reduce_scatter_calls);
        EXPECT_EQ(o.measured.nccl_input_bytes, n.measured.nccl_input_bytes);
        EXPECT_EQ(o.measured.d2h_bytes, n.measured.d2h_bytes);
        EXPECT_EQ(o.measured.peak_device_bytes, n.measured.peak_device_bytes);
        EXPECT_EQ(o.measured.peak_pinned_bytes, n.measured.peak_pinned_bytes);
      }
  }
}

TEST(NoShard, PresetFsdp1UsesIt) {
  EXPECT_EQ(preset("fsdp1").copy_in, "no-shard");
  EXPECT_TRUE(copy_in_in_place("no-shard", 1));
  EXPECT_FALSE(copy_in_in_place("no-shard", 2));
  EXPECT_FALSE(copy_in_in_place("none", 1));
  EXPECT_FALSE(copy_in_separate("no-shard"));
}

}  // namespace
}  // namespace shardaccum
