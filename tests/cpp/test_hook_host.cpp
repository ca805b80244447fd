// --hook-host-us (CasePlan::hook_host_us, PresetInfo::hook_host_us, docs/PRESETS.md H1): auto gives
// the fsdp1 preset's combination its measured host time per unit and every other strategy 0; a
// named value overrides it and names the case; a bad value is refused with the flag's name; and the
// step driver spends it on the issuing thread once before each unit's backward is issued, on
// every rank, in every micro-batch, and never where it is 0.
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

TEST(HookHost, AutoIsMeasuredForFsdp1AndZeroForEveryOtherStrategy) {
  const PresetInfo* fsdp1 = PresetRegistry::get().find("fsdp1");
  ASSERT_NE(fsdp1, nullptr);
  EXPECT_GT(fsdp1->hook_host_us, 0U) << "fsdp1's host time per unit is measured (H1)";
  for (const PresetInfo& p : PresetRegistry::get().entries()) {
    if (p.name != "fsdp1") {
      EXPECT_EQ(p.hook_host_us, 0U) << p.name << ": not measured, so 0";
    }
    const auto cases = cases_of({"--preset", p.name});
    ASSERT_FALSE(cases.empty()) << p.name;
    for (const CaseSpec& c : cases) {
      EXPECT_EQ(c.plan().hook_host_us, p.hook_host_us) << c.name();
      EXPECT_EQ(c.name().find("hook-host-us"), std::string::npos) << c.name();
    }
  }
  // FSDP1's combination with another copy-in is still FSDP1 (PresetRegistry::of); without its
  // offload it is no preset.
  for (const CaseSpec& c : cases_of({"--binding", "data-free", "--offload", "copy-fsdp1", "--mode",
                                     "shape", "--division", "pre-post", "--copy-in", "none"}))
    EXPECT_EQ(c.plan().hook_host_us, fsdp1->hook_host_us) << c.name();
  for (const CaseSpec& c : cases_of({"--binding", "data-free", "--offload", "none", "--mode",
                                     "shape", "--division", "pre-post", "--copy-in", "no-shard"}))
    EXPECT_EQ(c.plan().hook_host_us, 0U) << c.name();
}

TEST(HookHost, ANamedValueOverridesAutoAndNamesTheCase) {
  for (const auto& [given, want] : std::map<std::string, uint32_t>{{"0", 0}, {"100000", 100000}}) {
    const auto cases = cases_of({"--preset", "fsdp1,ideal", "--hook-host-us", given});
    ASSERT_FALSE(cases.empty());
    for (const CaseSpec& c : cases) {
      EXPECT_EQ(c.plan().hook_host_us, want) << c.name();
      EXPECT_TRUE(c.name().ends_with("/hook-host-us:" + given)) << c.name();
    }
  }
  // After the other named segments, in the order CaseSpec::name documents.
  for (const CaseSpec& c :
       cases_of({"--preset", "fsdp1", "--comm-priority", "greatest", "--hook-host-us", "7"}))
    EXPECT_TRUE(c.name().ends_with("/comm-priority:greatest/hook-host-us:7")) << c.name();
  for (const CaseSpec& c : cases_of({"--preset", "fsdp1", "--hook-host-us", "auto"}))
    EXPECT_EQ(c.name().find("hook-host-us"), std::string::npos) << c.name();
}

TEST(HookHost, ABadValueIsRefusedNamingTheFlag) {
  for (const char* bad : {"-1", "100001", "1e3", "0x10", "+5", "290us", "auto,1"}) {
    std::string m;
    try {
      cases_of({"--hook-host-us", bad});
    } catch (const CliError& e) {
      m = e.what();
    }
    EXPECT_NE(m.find("--hook-host-us"), std::string::npos) << "'" << bad << "': " << m;
    EXPECT_NE(m.find("0..100000"), std::string::npos) << "'" << bad << "': " << m;
  }
}

/// What one rank's issuing thread did, in order: 'h' for host_busy (with its µs), 'g' for a
/// backward's generator (one per unit's backward).
struct Calls {
  std::mutex mu;
  std::map<int, std::string> order;  // by rank
  std::vector<uint32_t> busy_us;
};

class HookRecordingRank final : public testing::ForwardingRank {
 public:
  HookRecordingRank(RankBackend& inner, Calls& calls) : ForwardingRank(inner), calls_(calls) {}
  void host_busy(uint32_t us) override {
    {
      const std::lock_guard<std::mutex> l(calls_.mu);
      calls_.order[rank()] += 'h';
      calls_.busy_us.push_back(us);
    }
    in_.host_busy(us);
  }
  void generate(Buffer& g, const GradKey& k, bool acc, Stream s) override {
    {
      const std::lock_guard<std::mutex> l(calls_.mu);
      calls_.order[rank()] += 'g';
    }
    in_.generate(g, k, acc, s);
  }

 private:
  Calls& calls_;
};

TEST(HookHost, SpentOnceBeforeEveryUnitsBackwardOnEveryRank) {
  const Layout layout = make_layout({40, 1009, 7});
  for (const int world : {1, 2, 3}) {
    for (const char* st : {"fsdp1", "fsdp2", "zero3"}) {
      double err_without = -1;  // the host time changes when work is issued, never its result
      for (const uint32_t us : {0U, 5U}) {
        SCOPED_TRACE(std::string(st) + " world " + std::to_string(world) + " us " +
                     std::to_string(us));
        Calls calls;
        testing::WrappedBackend be(
            world, [&](RankBackend& r) { return std::make_unique<HookRecordingRank>(r, calls); });
        CasePlan plan{layout,
                      parse_schedule("SSSS", 4),
                      preset(st),
                      parse_dtype_triple("fp32-fp32-fp32"),
                      GenMode::dyadic,
                      5,
                      "t"};
        plan.hook_host_us = us;
        const double err = run_two_steps(be, plan).max_rel_err;
        if (us == 0) {
          err_without = err;
        } else {
          EXPECT_EQ(err, err_without);
        }
        // 2 steps x 4 micro-batches x 3 units on every rank, each 'h' right before its 'g'.
        const size_t backwards = size_t{2 * 4} * layout.units.size();
        ASSERT_EQ(calls.order.size(), static_cast<size_t>(world));
        for (const auto& [rank, order] : calls.order) {
          std::string want;
          for (size_t i = 0; i < backwards; ++i) want += us > 0 ? "hg" : "g";
          EXPECT_EQ(order, want) << "rank " << rank;
        }
        EXPECT_EQ(calls.busy_us.size(), us > 0 ? backwards * world : 0U);
        for (const uint32_t seen : calls.busy_us) EXPECT_EQ(seen, us);
      }
    }
  }
}

}  // namespace
}  // namespace shardaccum
