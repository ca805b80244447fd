// --comm-priority (CasePlan::comm_priority, strategies/backend/comm_priority.hpp): auto gives
// FSDP1's, FairScale's and ZeRO-3's presets priority 0 (their systems create the stream with
// torch.cuda.Stream()) and FSDP2's, `ideal`'s and every other strategy's the device's greatest; a
// named value overrides it and names the case; a bad value is refused with the flag's name; and
// every reduce-scatter of a case is issued under that case's priority, set by the step driver
// before its first step, whatever the case before it set.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bench/cli.hpp"
#include "cli_options_support.hpp"
#include "faulty_backend.hpp"
#include "forwarding_rank.hpp"
#include "strategies/preset/preset.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

using testing::cases_of;
using testing::make_layout;
using testing::run_two_steps;

TEST(CommPriority, AutoIsDefaultForFsdp1FairscaleAndZero3Only) {
  const std::map<std::string, CommPriority> want = {{"fsdp1", CommPriority::normal},
                                                    {"fairscale", CommPriority::normal},
                                                    {"zero3", CommPriority::normal},
                                                    {"fsdp2", CommPriority::greatest},
                                                    {"ideal", CommPriority::greatest}};
  for (const PresetInfo& p : PresetRegistry::get().entries()) {
    ASSERT_TRUE(want.contains(p.name)) << "a new preset: say its system's stream priority here";
    const auto cases = cases_of({"--preset", p.name});
    ASSERT_FALSE(cases.empty()) << p.name;
    for (const CaseSpec& c : cases) {
      EXPECT_EQ(c.plan().comm_priority, want.at(p.name)) << c.name();
      EXPECT_EQ(c.name().find("comm-priority"), std::string::npos) << c.name();
    }
  }
  // ZeRO-3's combination with another copy-in is still ZeRO-3 (PresetRegistry::of); with no
  // offload it is no preset: the suite's greatest.
  for (const CaseSpec& c : cases_of({"--binding", "data-free", "--offload", "gpu-add-zero3",
                                     "--mode", "flag", "--division", "pre", "--copy-in", "none"}))
    EXPECT_EQ(c.plan().comm_priority, CommPriority::normal) << c.name();
  for (const CaseSpec& c : cases_of(
           {"--binding", "data-free", "--offload", "none", "--mode", "flag", "--division", "pre"}))
    EXPECT_EQ(c.plan().comm_priority, CommPriority::greatest) << c.name();
}

TEST(CommPriority, ANamedValueOverridesAutoAndNamesTheCase) {
  const auto none_default = cases_of({"--offload", "none", "--comm-priority", "default"});
  ASSERT_FALSE(none_default.empty());
  for (const CaseSpec& c : none_default) {
    EXPECT_EQ(c.plan().comm_priority, CommPriority::normal) << c.name();
    EXPECT_TRUE(c.name().ends_with("/comm-priority:default")) << c.name();
  }
  const auto zero3_greatest = cases_of({"--preset", "zero3", "--comm-priority", "greatest"});
  ASSERT_FALSE(zero3_greatest.empty());
  for (const CaseSpec& c : zero3_greatest) {
    EXPECT_EQ(c.plan().comm_priority, CommPriority::greatest) << c.name();
    EXPECT_TRUE(c.name().ends_with("/comm-priority:greatest")) << c.name();
  }
  // Both named segments, in the order CaseSpec::name documents.
  for (const CaseSpec& c :
       cases_of({"--preset", "fsdp1", "--device-add-grid", "torch", "--comm-priority", "greatest"}))
    EXPECT_TRUE(c.name().ends_with("/device-add-grid:torch/comm-priority:greatest")) << c.name();
  for (const CaseSpec& c : cases_of({"--preset", "zero3", "--comm-priority", "auto"}))
    EXPECT_EQ(c.name().find("comm-priority"), std::string::npos) << c.name();
}

TEST(CommPriority, ABadValueIsRefusedNamingTheFlag) {
  for (const char* bad : {"high", "", "-1", "0", "greatest,default"}) {
    std::string m;
    try {
      cases_of({"--comm-priority", bad});
    } catch (const CliError& e) {
      m = e.what();
    }
    EXPECT_NE(m.find("--comm-priority"), std::string::npos) << "'" << bad << "': " << m;
    if (*bad) {
      EXPECT_NE(m.find("greatest or default"), std::string::npos) << "'" << bad << "': " << m;
    }
  }
}

/// The priorities in force at the reduce-scatters of every rank (rank threads append under the
/// lock), and whether one was changed inside a step.
struct Seen {
  std::mutex mu;
  std::vector<CommPriority> collectives;
  bool set_in_step = false;
};

/// Records the priority in force at every reduce-scatter.
class PriorityRecordingRank final : public testing::ForwardingRank {
 public:
  PriorityRecordingRank(RankBackend& inner, Seen& seen) : ForwardingRank(inner), seen_(seen) {}
  void set_comm_priority(CommPriority p) override {
    if (in_step_) {
      const std::lock_guard<std::mutex> l(seen_.mu);
      seen_.set_in_step = true;
    }
    priority_ = p;
    set_ = true;
    in_.set_comm_priority(p);
  }
  void begin_step() override {
    EXPECT_TRUE(set_) << "a step before the case set its comm priority";
    in_step_ = true;
    in_.begin_step();
  }
  StepMetrics end_step() override {
    in_step_ = false;
    return in_.end_step();
  }
  void reduce_scatter(Buffer& out, const Buffer& in, ReduceOp op = ReduceOp::sum) override {
    {
      const std::lock_guard<std::mutex> l(seen_.mu);
      seen_.collectives.push_back(priority_);
    }
    in_.reduce_scatter(out, in, op);
  }

 private:
  Seen& seen_;
  // What a case before left: the opposite of the first case's, so a driver that did not set it
  // would be seen.
  CommPriority priority_ = CommPriority::normal;
  bool set_ = false, in_step_ = false;
};

TEST(CommPriority, EveryReduceScatterOfACaseRunsUnderItsPriority) {
  for (const int world : {1, 2, 3}) {
    Seen seen;
    testing::WrappedBackend be(
        world, [&](RankBackend& r) { return std::make_unique<PriorityRecordingRank>(r, seen); });
    CasePlan plan{make_layout({40, 1009}),
                  parse_schedule("SnSS", 4),
                  {"data-free", "gpu-add", "flag", "pre"},
                  parse_dtype_triple("fp32-fp32-fp32"),
                  GenMode::dyadic,
                  5,
                  "t"};
    for (const CommPriority p :
         {CommPriority::greatest, CommPriority::normal, CommPriority::greatest}) {
      SCOPED_TRACE(std::string(comm_priority_name(p)) + " world " + std::to_string(world));
      seen.collectives.clear();
      plan.comm_priority = p;
      EXPECT_TRUE(run_two_steps(be, plan).correct);
      ASSERT_FALSE(seen.collectives.empty());
      for (const CommPriority s : seen.collectives) EXPECT_EQ(s, p);
    }
    EXPECT_FALSE(seen.set_in_step);
  }
}

}  // namespace
}  // namespace shardaccum
