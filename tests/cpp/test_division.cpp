// The division axis (docs/DESIGN.md §3): FSDP1's factors, what each value does, and every value
// run against the oracle and the analytical model over worlds, schedules and offloads; a division
// done twice is caught.
#include <gtest/gtest.h>

#include <utility>

#include "common/errors.hpp"
#include "faulty_backend.hpp"
#include "strategies/default_matrix.hpp"
#include "strategies/step_driver.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

using testing::design_says_correct;
using testing::expect_bytes_and_peaks_of_the_model;
using testing::make_layout;
using testing::run_two_steps;

// Worked by hand from torch/distributed/fsdp/_init_utils.py _get_gradient_predivide_factor's
// loop (factor = 1; while N % factor == 0 and N / factor > factor: factor *= 2), e.g. N = 6:
// 1 -> 2 (6 > 1), 2 -> 4 (3 > 2), stop at 6 % 4 != 0: (4, 1.5).
TEST(Division, PrePostFactorsAreFsdp1s) {
  const std::pair<double, double> expected[] = {
      {1, 1},   {2, 1},   {2, 1.5}, {2, 2}, {2, 2.5}, {4, 1.5}, {2, 3.5}, {4, 2},
      {2, 4.5}, {4, 2.5}, {2, 5.5}, {4, 3}, {2, 6.5}, {4, 3.5}, {2, 7.5}, {4, 4}};
  for (int n = 1; n <= 16; ++n) {
    SCOPED_TRACE("world " + std::to_string(n));
    EXPECT_EQ(gradient_divide_factors(n), expected[n - 1]);
    const DivisionSteps d = division_steps("pre-post", n);
    EXPECT_EQ(d.pre, expected[n - 1].first);
    EXPECT_EQ(d.post, expected[n - 1].second);
    // FSDP1's _div_if_needed divides only by a factor above 1.
    EXPECT_EQ(d.pre_pass, expected[n - 1].first > 1);
    EXPECT_EQ(d.post_pass, expected[n - 1].second > 1);
    EXPECT_EQ(d.op, ReduceOp::sum);
    EXPECT_FALSE(d.at_end);
  }
}

TEST(Division, EachValueDividesWhereItsSystemDoes) {
  for (int n : {1, 2, 3}) {
    SCOPED_TRACE("world " + std::to_string(n));
    const DivisionSteps c = division_steps("collective", n);
    // FSDP2 asks for SUM at world 1 (_get_gradient_divide_factors), AVG above.
    EXPECT_EQ(c.op, n == 1 ? ReduceOp::sum : ReduceOp::avg);
    EXPECT_FALSE(c.pre_pass || c.post_pass || c.at_end);
    const DivisionSteps p = division_steps("pre", n);
    EXPECT_TRUE(p.pre_pass);  // DeepSpeed's div_(world_sz) is unconditional
    EXPECT_EQ(p.pre, n);
    EXPECT_FALSE(p.post_pass || p.at_end);
    EXPECT_EQ(p.op, ReduceOp::sum);
    const DivisionSteps e = division_steps("end", n);
    EXPECT_TRUE(e.at_end);
    EXPECT_FALSE(e.pre_pass || e.post_pass);
    EXPECT_EQ(e.op, ReduceOp::sum);
  }
  EXPECT_THROW(division_steps("twice", 2), std::invalid_argument);
}

constexpr const char* kNewDivisions[] = {"collective", "pre-post", "pre"};

struct DivisionParam {
  int world;
  const char* dtype;
  friend std::ostream& operator<<(std::ostream& os, const DivisionParam& p) {
    return os << "world " << p.world << ", " << p.dtype;
  }
};

class DivisionMatrix : public ::testing::TestWithParam<DivisionParam> {};

// Every new value with every binding, offload and mode on SSSS, nnnS and nSnS: the verdict of
// the design's rule (the division changes where the mean is made, not what is kept), exact at
// power-of-two worlds, every counted byte the model's, and no host pass.
TEST_P(DivisionMatrix, VerdictAndBytesOfTheModel) {
  const auto [world, dtype] = GetParam();
  auto be = make_host_backend({world, 1});
  const Layout layout = make_layout({1, 1009, 3, 64});
  const bool pow2 = (world & (world - 1)) == 0;
  int cases = 0;
  for (const char* division : kNewDivisions)
    for (StrategySpec s : default_strategies())
      for (const char* modes : {"SSSS", "nnnS", "nSnS"}) {
        s.division = division;
        const Schedule sched = parse_schedule(modes, 4);
        const CasePlan plan{layout, sched, s, parse_dtype_triple(dtype), GenMode::dyadic, 7, "t"};
        SCOPED_TRACE(s.name() + " schedule " + modes + " world " + std::to_string(world) + " " +
                     dtype);
        const auto o = run_two_steps(*be, plan);
        EXPECT_EQ(o.correct, design_says_correct(s, sched)) << "max_rel_err " << o.max_rel_err;
        if (design_says_correct(s, sched) && pow2) {
          EXPECT_EQ(o.max_rel_err, 0.0);
        }
        if (!design_says_correct(s, sched)) {
          EXPECT_GT(o.max_rel_err, 0.1);
        }
        expect_bytes_and_peaks_of_the_model(o);
        EXPECT_EQ(o.measured.division_host_bytes, 0u) << "only `end` divides on the host";
        ++cases;
      }
  EXPECT_EQ(cases, static_cast<int>(std::size(kNewDivisions) * default_strategies().size() * 3));
}

INSTANTIATE_TEST_SUITE_P(
    Worlds, DivisionMatrix,
    ::testing::Values(DivisionParam{1, "fp32-fp32-fp32"}, DivisionParam{2, "fp32-fp32-fp32"},
                      DivisionParam{3, "fp32-fp32-fp32"}, DivisionParam{4, "fp32-fp32-fp32"},
                      DivisionParam{8, "fp32-fp32-fp32"}, DivisionParam{3, "bf16-bf16-fp32"},
                      DivisionParam{8, "bf16-bf16-fp32"}),
    [](const auto& info) {
      return "world" + std::to_string(info.param.world) + "_" +
             (std::string(info.param.dtype) == "fp32-fp32-fp32" ? "fp32" : "bf16");
    });

// The device passes in bytes, worked by hand: one unit of 1024 fp32 elements (padded: 1024 at
// N = 4), nSnS (2 syncs), no offload. pre: 2 syncs x (r + w) x 1024 x 4 B; pre-post at N = 4
// (factors 2, 2): that + 2 x 2 x 256 x 4 B on the shard; collective none; end one pass over the
// saved shard, 2 x 256 x 4 B, on the device (no offload) or the host (cpu-add).
TEST(Division, DevicePassBytesWorkedByHand) {
  auto be = make_host_backend({4, 1});
  const auto bytes = [&](const char* division, const char* offload) {
    StrategySpec s;
    s.division = division;
    s.offload = offload;
    const CasePlan plan{make_layout({1024}),
                        parse_schedule("nSnS", 4),
                        s,
                        parse_dtype_triple("fp32-fp32-fp32"),
                        GenMode::dyadic,
                        3,
                        "t"};
    const auto o = run_two_steps(*be, plan);
    EXPECT_TRUE(o.correct) << division;
    return std::pair{o.measured.division_device_bytes, o.measured.division_host_bytes};
  };
  EXPECT_EQ(bytes("pre", "none"), (std::pair<uint64_t, uint64_t>{16384, 0}));
  EXPECT_EQ(bytes("pre-post", "none"), (std::pair<uint64_t, uint64_t>{20480, 0}));
  EXPECT_EQ(bytes("collective", "none"), (std::pair<uint64_t, uint64_t>{0, 0}));
  EXPECT_EQ(bytes("end", "none"), (std::pair<uint64_t, uint64_t>{2048, 0}));
  EXPECT_EQ(bytes("end", "cpu-add"), (std::pair<uint64_t, uint64_t>{0, 2048}));
  EXPECT_EQ(bytes("pre", "cpu-add"), (std::pair<uint64_t, uint64_t>{16384, 0}));
}

// A rank that divides twice: every scale applied two times, and an averaging reduce-scatter
// followed by one more division by N.
class TwiceDividingRank final : public testing::ForwardingRank {
 public:
  using ForwardingRank::ForwardingRank;
  void scale(Buffer& d, double f, Stream s) override {
    in_.scale(d, f, s);
    in_.scale(d, f, s);
  }
  void reduce_scatter(Buffer& o, const Buffer& i, ReduceOp op = ReduceOp::sum) override {
    in_.reduce_scatter(o, i, op);
    if (op == ReduceOp::avg) in_.scale(o, 1.0 / world_size(), Stream::comm);
  }
};

TEST(Division, DividingTwiceIsWrong) {
  for (int world : {2, 3}) {
    testing::WrappedBackend be(world, [](RankBackend& rb) -> std::unique_ptr<RankBackend> {
      return std::make_unique<TwiceDividingRank>(rb);
    });
    for (const char* division : {"collective", "pre-post", "pre", "end"}) {
      StrategySpec s;
      s.division = division;
      const CasePlan plan{make_layout({1009, 64}),
                          parse_schedule("nSnS", 4),
                          s,
                          parse_dtype_triple("fp32-fp32-fp32"),
                          GenMode::dyadic,
                          5,
                          "t"};
      const auto o = run_two_steps(be, plan);
      // pre-post at N = 3 divides by 2 and 1.5: the second time leaves 1/3 of the mean.
      EXPECT_FALSE(o.correct) << division << " world " << world;
      EXPECT_GT(o.max_rel_err, 0.3) << division << " world " << world;
    }
  }
}

// A rank whose division pass on the comm stream fails once (a planted BackendError).
class FailingPassRank final : public testing::ForwardingRank {
 public:
  FailingPassRank(RankBackend& inner, bool& armed) : ForwardingRank(inner), armed_(armed) {}
  void scale(Buffer& d, double f, Stream s) override {
    if (armed_ && s == Stream::comm) throw BackendError("planted division failure");
    in_.scale(d, f, s);
  }

 private:
  bool& armed_;
};

// Rank 1's pre-division fails before the first reduce-scatter: it still joins the collectives,
// the agreement ends the step with its message there and PeerFailure on rank 0; no hang, and the
// next step is correct.
TEST(Division, AFailedPassIsAgreedAndTheRankStillJoinsTheCollective) {
  bool armed = true;
  testing::WrappedBackend be(2, [&](RankBackend& r) -> std::unique_ptr<RankBackend> {
    if (r.rank() == 1) return std::make_unique<FailingPassRank>(r, armed);
    return std::make_unique<testing::ForwardingRank>(r);
  });
  StrategySpec s;
  s.division = "pre";
  const CasePlan plan{make_layout({1009, 64}),
                      parse_schedule("SSSS", 4),
                      s,
                      parse_dtype_triple("fp32-fp32-fp32"),
                      GenMode::dyadic,
                      5,
                      "t"};
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
  EXPECT_NE(outcome[1].find("planted division failure"), std::string::npos) << outcome[1];
  armed = false;
  EXPECT_TRUE(run_two_steps(be, plan).correct);
}

}  // namespace
}  // namespace shardaccum
