// Lookahead::buckets (strategies/reduce_buckets.hpp, docs/PRESETS.md Z2): DeepSpeed ZeRO-3's
// reduce buckets. A unit's reduce-scatter waits until its bucket is flushed; a unit that would
// overflow a non-empty bucket flushes it first (stage3.py 1583); the host waits for the oldest
// flush when more than 2 are pending (1664-1667) and for the reduction stream at the end of every
// backward (1413-1414). The bytes, peaks and verdict stay those of the model.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "faulty_backend.hpp"
#include "strategies/offload/offload_policy.hpp"
#include "strategies/step_driver.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

/// Logs B (a backward's generator), R (a reduce-scatter) and W (a host wait) of rank 0, and
/// answers host_ready with `ready` (false: every flush stays pending, as on a busy GPU).
class OrderRank final : public testing::ForwardingRank {
 public:
  OrderRank(RankBackend& in, std::string& log, bool ready)
      : ForwardingRank(in), log_(log), ready_(ready) {}
  void generate(Buffer& g, const GradKey& k, bool acc, Stream s) override {
    log_ += 'B';
    in_.generate(g, k, acc, s);
  }
  void reduce_scatter(Buffer& o, const Buffer& i, ReduceOp op) override {
    log_ += 'R';
    in_.reduce_scatter(o, i, op);
  }
  void host_wait(Event e) override {
    log_ += 'W';
    in_.host_wait(e);
  }
  bool host_ready(Event e) override { return ready_ && in_.host_ready(e); }

 private:
  std::string& log_;
  bool ready_;
};

CasePlan plan_of(std::initializer_list<uint64_t> numels, const char* schedule,
                 uint64_t bucket_elements) {
  CasePlan p{testing::make_layout(numels),
             parse_schedule(schedule, 1),
             {"data-free", "gpu-add-zero3", "flag", "pre", Lookahead::buckets},
             parse_dtype_triple("fp32-fp32-fp32"),
             GenMode::dyadic,
             7,
             "buckets"};
  p.reduce_bucket_elements = bucket_elements;
  return p;
}

/// The log of run_two_steps (warm-up and measured step) on one rank, with its outcome checked
/// against the model.
std::string log_of(const CasePlan& plan, bool ready) {
  std::string log;
  testing::WrappedBackend be(1, [&](RankBackend& r) -> std::unique_ptr<RankBackend> {
    return std::make_unique<OrderRank>(r, log, ready);
  });
  const testing::Outcome o = testing::run_two_steps(be, plan);
  testing::expect_bytes_and_peaks_of_the_model(o);
  EXPECT_TRUE(o.correct);
  return log;
}

}  // namespace

// Units 0..3 of 20, 100, 30 and 50 elements, a bucket of 150: the backward (3, 2, 1, 0) fills the
// bucket with 3 and 2; unit 1 would overflow it, so 3 and 2 are reduced after unit 1's backward;
// 1 and 0 wait for the epilogue, which then waits for the reduction stream.
TEST(ReduceBuckets, AUnitThatWouldOverflowTheBucketFlushesItFirst) {
  const std::string step = "BBBRRBRRW";
  EXPECT_EQ(log_of(plan_of({20, 100, 30, 50}, "S", 150), false), step + step);
  // Every unit in one bucket (DeepSpeed's 5e8 elements): all reduced at the end.
  EXPECT_EQ(log_of(plan_of({20, 100, 30, 50}, "S", kZero3ReduceBucketElements), false),
            "BBBBRRRRW" + std::string("BBBBRRRRW"));
}

// Five units of 20, a bucket of 10: every unit flushes the one before it. With the flushes still
// pending (host_ready false) the fourth and fifth flush each find 3 pending and wait for the
// oldest first (max_param_reduce_events = 2); with them complete, only the epilogue waits.
TEST(ReduceBuckets, TheHostWaitsForTheOldestFlushWhenThreeArePending) {
  const CasePlan p = plan_of({20, 20, 20, 20, 20}, "S", 10);
  const std::string busy = "BBRBRBRBWRWRW", idle = "BBRBRBRBRRW";
  EXPECT_EQ(log_of(p, false), busy + busy);
  EXPECT_EQ(log_of(p, true), idle + idle);
}

// Micro-batches without a sync reduce nothing; each synced one flushes and waits on its own.
TEST(ReduceBuckets, OnlySyncMicroBatchesReduceAndEachEndsWithTheEpilogue) {
  const CasePlan p = plan_of({20, 100, 30, 50}, "nS", 150);
  const std::string step = "BBBB" + std::string("BBBRRBRRW");
  EXPECT_EQ(log_of(p, false), step + step);
}

// Z1, Z6 (docs/PRESETS.md): without offload, world 1, fp32, units of 20, 100, 30 and 50 elements
// (padded to 24, 104, 32, 56), a bucket of 150. Held from the start: the bucket buffer (150
// elements, 600 B) and the gradient partition (216 elements, 864 B). Each gradient moves into the
// bucket as it arrives; unit 1's (416 B) overflows it, so the flush of units 3 and 2 interleaves
// them (352 B) beside it, and their reduce-scatters write into that interleave: 600 + 864 + 416 +
// 352 = 2232 B, in every micro-batch (a later S adds its chunk of the interleave into the
// partition, allocating nothing).
TEST(ReduceBuckets, ThePeakIsTheBucketThePartitionOneGradientAndOneInterleave) {
  CasePlan p = plan_of({20, 100, 30, 50}, "SSSS", 150);
  p.strategy.offload = "none";
  auto be = make_host_backend({1, 1});
  const testing::Outcome o = testing::run_two_steps(*be, p);
  testing::expect_bytes_and_peaks_of_the_model(o);
  EXPECT_TRUE(o.correct);
  EXPECT_EQ(o.measured.peak_device_bytes, 2232u);
}

// With the bucket copy, the interleave, the in-place reduce-scatter and (without offload) the
// partition held from the step's start, every offload and mode keeps the verdict it has without
// buckets, and the bytes and peaks stay the model's, at world sizes 1-3.
TEST(ReduceBuckets, EveryOffloadAndModeKeepsItsVerdictAndTheModelsBytesAndPeaks) {
  for (const int world : {1, 2, 3}) {
    auto be = make_host_backend({world, 1});
    for (const std::string& offload : OffloadRegistry::get().names())
      for (const char* mode : {"flag", "presence", "shape"})
        for (const char* sched : {"SSSS", "nnnS", "nSnS", "SnSS"})
          for (const char* dtype : {"fp32-fp32-fp32", "bf16-bf16-fp32"}) {
            CasePlan p{testing::make_layout({20, 100, 30, 50, 7}),
                       parse_schedule(sched, 4),
                       {"data-free", offload, mode, "pre", Lookahead::buckets},
                       parse_dtype_triple(dtype),
                       GenMode::dyadic,
                       7,
                       "buckets"};
            p.reduce_bucket_elements = 150;
            SCOPED_TRACE(p.strategy.name() + " " + sched + " world " + std::to_string(world) + " " +
                         dtype);
            const testing::Outcome o = testing::run_two_steps(*be, p);
            testing::expect_bytes_and_peaks_of_the_model(o);
            CasePlan plain = p;
            plain.strategy.lookahead = Lookahead::zero;
            EXPECT_EQ(o.correct, testing::run_two_steps(*be, plain).correct)
                << "max_rel_err " << o.max_rel_err;
          }
  }
}

}  // namespace shardaccum
