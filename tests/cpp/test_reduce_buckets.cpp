// Lookahead::buckets (strategies/reduce_buckets.hpp, docs/PRESETS.md Z2): DeepSpeed ZeRO-3's
// reduce buckets. A unit's reduce-scatter waits until its bucket is flushed; a unit that would
// overflow a non-empty bucket flushes it first (stage3.py 1583); the host waits for the oldest
// flush when more than 2 are pending (1664-1667) and for the reduction stream at the end of every
// backward (1413-1414). The bytes, peaks and verdict stay those of the model.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "faulty_backend.hpp"
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

}  // namespace shardaccum
