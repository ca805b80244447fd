// The step driver's overlap (docs/DESIGN.md §2): the lookahead's memory against the model, errors
// agreed once per micro-batch with syncs, a failed rank joining the collectives it still owes.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "faulty_backend.hpp"
#include "forwarding_rank.hpp"
#include "strategies/preset/preset.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

using testing::WrappedBackend;

/// Counts any_rank calls.
class CountingRank final : public testing::ForwardingRank {
 public:
  CountingRank(RankBackend& in, std::atomic<int>& calls) : ForwardingRank(in), calls_(calls) {}
  bool any_rank(bool mine) override {
    ++calls_;
    return in_.any_rank(mine);
  }

 private:
  std::atomic<int>& calls_;
};

/// Device allocations number `fail_from` and later (0-based, this rank's) throw, up to `failures`
/// of them; `armed` turns the injection on.
class FailingAllocRank final : public testing::ForwardingRank {
 public:
  FailingAllocRank(RankBackend& in, int fail_from, int failures, const bool& armed)
      : ForwardingRank(in), fail_from_(fail_from), failures_(failures), armed_(armed) {}
  Buffer allocate(MemSpace sp, DType t, uint64_t n, Stream s) override {
    if (armed_ && sp == MemSpace::device && count_++ >= fail_from_ && failures_ > 0) {
      --failures_;
      throw AccumulationError("planted out of memory on rank " + std::to_string(rank()));
    }
    return in_.allocate(sp, t, n, s);
  }

 private:
  int fail_from_, failures_, count_ = 0;
  const bool& armed_;
};

CasePlan plan_of(const char* schedule, StrategySpec s, const char* offload = "none") {
  s.offload = offload;
  return CasePlan{testing::make_layout({100, 50, 30}),
                  parse_schedule(schedule, 4),
                  s,
                  parse_dtype_triple("fp32-fp32-fp32"),
                  GenMode::dyadic,
                  1,
                  "t"};
}

// The host backend's peaks are exact (no pending host task): measured = model for every
// lookahead, canonical schedule and offload at world 1 and 2, and the result stays correct.
TEST(Overlap, MeasuredPeaksEqualTheModelForEveryLookahead) {
  for (int world : {1, 2}) {
    auto be = make_host_backend({world, 1});
    for (const CanonicalSchedule& c : kCanonicalSchedules)
      for (const char* offload : {"none", "gpu-add", "cpu-add"})
        for (Lookahead ahead : kLookaheads) {
          StrategySpec s{"data-free", offload, "flag", "end", ahead};
          const CasePlan plan{testing::make_layout({100, 50, 30}),
                              canonical_schedule(c.name, 4),
                              s,
                              parse_dtype_triple("fp32-fp32-fp32"),
                              GenMode::dyadic,
                              1,
                              "t"};
          SCOPED_TRACE(std::string(c.name) + " " + offload + " lookahead " + lookahead_name(ahead) +
                       " world " + std::to_string(world));
          const testing::Outcome o = testing::run_two_steps(*be, plan);
          testing::expect_bytes_and_peaks_of_the_model(o);
          EXPECT_TRUE(o.correct);
        }
  }
}

// The lookahead changes the device peak where a later unit's gradient can overlap an earlier
// one's reduce-scatter (so the test above compares different figures, not one).
TEST(Overlap, TheLookaheadOrdersTheDevicePeaks) {
  const auto peak = [](Lookahead a) {
    return predict(plan_of("SSSS", {"data-free", "none", "flag", "end", a}), 2).peak_device_bytes;
  };
  EXPECT_LT(peak(Lookahead::zero), peak(Lookahead::one));
  EXPECT_LT(peak(Lookahead::one), peak(Lookahead::unbounded));
}

// Errors are agreed once per micro-batch with syncs and once at the step's end, not per unit:
// nSnS with three units calls any_rank 2 + 1 times a step on each rank (per unit it would be 7).
TEST(Overlap, AnyRankIsCalledOncePerSyncMicroBatchAndAtTheEnd) {
  std::atomic<int> calls{0};
  WrappedBackend be(2, [&](RankBackend& r) { return std::make_unique<CountingRank>(r, calls); });
  EXPECT_TRUE(testing::run_two_steps(be, plan_of("nSnS", {})).correct);
  EXPECT_EQ(calls.load(), 2 /*ranks*/ * 2 /*steps*/ * (2 + 1));
}

/// One step of `plan` on both ranks of `be`, whose rank 1 has a planted allocation failure: rank 1
/// ends it with the planted message, rank 0 with PeerFailure; then, disarmed, two steps are
/// correct.
void expect_rank_1_fails_the_step(WrappedBackend& be, const CasePlan& plan, bool& armed) {
  std::vector<std::string> outcome(2);
  be.run([&](RankBackend& r) {
    StepDriver driver(r, plan);
    try {
      driver.run_step(0, false, nullptr);
      outcome[r.rank()] = "ok";
    } catch (const PeerFailure&) {
      outcome[r.rank()] = "peer";
    } catch (const AccumulationError& e) {
      outcome[r.rank()] = e.what();
    }
  });
  EXPECT_EQ(outcome[0], "peer");
  EXPECT_NE(outcome[1].find("planted out of memory on rank 1"), std::string::npos) << outcome[1];
  armed = false;
  EXPECT_TRUE(testing::run_two_steps(be, plan).correct);
}

// Rank 1's backward allocation fails in the middle of micro-batch 0 (SSSS, three units: device
// allocations 0 and 1 are unit 2's gradient and out, 2 is unit 1's gradient): it still joins the
// micro-batch's reduce-scatters with scratch, then the agreement at micro-batch 1 ends the step
// with its message there and PeerFailure on rank 0. No hang; the next case runs.
TEST(Overlap, AFailedAllocationMidMicroBatchEndsTheStepOnEveryRank) {
  bool armed = true;
  WrappedBackend be(2, [&](RankBackend& r) -> std::unique_ptr<RankBackend> {
    if (r.rank() == 1) return std::make_unique<FailingAllocRank>(r, 2, 1, armed);
    return std::make_unique<testing::ForwardingRank>(r);
  });
  expect_rank_1_fails_the_step(be, plan_of("SSSS", {}), armed);
}

// ZeRO-3's buffers (lookahead buckets, copy-in none, no offload): rank 1's bucket buffer
// (device allocation 0) or a unit's gradient partition (1) fails at the step's start. The rank
// goes on joining the collectives, the agreement at micro-batch 0 ends the step on both ranks,
// no hang, and the next run is correct.
TEST(Overlap, AFailedBucketOrPartitionAllocationEndsTheStepOnEveryRank) {
  for (const int fail_from : {0, 1}) {
    SCOPED_TRACE("failing device allocation " + std::to_string(fail_from));
    bool armed = true;
    WrappedBackend be(2, [&](RankBackend& r) -> std::unique_ptr<RankBackend> {
      if (r.rank() == 1) return std::make_unique<FailingAllocRank>(r, fail_from, 1, armed);
      return std::make_unique<testing::ForwardingRank>(r);
    });
    expect_rank_1_fails_the_step(
        be, plan_of("SSSS", {"data-free", "none", "flag", "pre", Lookahead::buckets}), armed);
  }
}

// When even the scratch to join a reduce-scatter cannot be allocated, the rank throws at once:
// the peers waiting in that collective are released with PeerFailure, nothing hangs.
TEST(Overlap, ARankWithoutScratchThrowsAtOnceAndReleasesThePeers) {
  bool armed = true;
  WrappedBackend be(3, [&](RankBackend& r) -> std::unique_ptr<RankBackend> {
    if (r.rank() == 1) return std::make_unique<FailingAllocRank>(r, 2, 1000, armed);
    return std::make_unique<testing::ForwardingRank>(r);
  });
  const CasePlan plan = plan_of("SSSS", {});
  std::atomic<int> peers{0};
  try {
    be.run([&](RankBackend& r) {
      StepDriver driver(r, plan);
      try {
        driver.run_step(0, false, nullptr);
      } catch (const PeerFailure&) {
        ++peers;
        if (r.rank() == 1) throw;
      }
    });
    FAIL() << "expected rank 1's error";
  } catch (const AccumulationError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("planted out of memory on rank 1"), std::string::npos) << m;
    EXPECT_NE(m.find("no scratch to join the reduce-scatter"), std::string::npos) << m;
  }
  EXPECT_EQ(peers.load(), 2);
  armed = false;
  EXPECT_TRUE(testing::run_two_steps(be, plan).correct);
}

}  // namespace
}  // namespace shardaccum
