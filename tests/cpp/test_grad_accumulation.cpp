// --grad-accumulation autograd (CasePlan::autograd_accumulation) on the host backend: a backward
// after an `n` writes a fresh gradient and adds it into the unit's gradient, as autograd's
// AccumulateGrad does. Verdicts as in place; every byte and peak equal to the model's; the peak one
// fresh gradient higher where a no-sync gradient is accumulated and equal where none is (SSSS);
// the name segment and the flag's refusal.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench/cli.hpp"
#include "cli_options_support.hpp"
#include "strategies/preset/preset.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

using testing::cases_of;

using testing::expect_bytes_and_peaks_of_the_model;
using testing::make_layout;
using testing::run_two_steps;

CasePlan plan_of(const Layout& l, const char* sched, const StrategySpec& s, const char* dtype,
                 bool autograd) {
  CasePlan p{l, parse_schedule(sched, 4), s, parse_dtype_triple(dtype), GenMode::dyadic, 29, "t"};
  p.autograd_accumulation = autograd;
  return p;
}

TEST(GradAccumulation, AutogradHasTheInPlaceVerdictsAndTheModelsBytesAndPeaks) {
  const Layout layout = make_layout({1, 1009, 3, 96});
  std::vector<StrategySpec> specs;
  for (const char* p : {"fsdp1", "fsdp2", "zero3", "ideal"}) specs.push_back(preset(p));
  StrategySpec none = preset("fsdp1");
  none.offload = "none";
  specs.push_back(none);
  StrategySpec cat = preset("fsdp2");
  cat.offload = "none";
  specs.push_back(cat);
  for (const int world : {1, 2}) {
    auto be = make_host_backend({world, 1});
    for (const StrategySpec& s : specs)
      for (const char* sched : {"SSSS", "nnnS", "nSnS", "SnSS"})
        for (const char* dtype : {"fp32-fp32-fp32", "bf16-bf16-fp32"}) {
          SCOPED_TRACE(s.name() + " " + sched + " " + dtype + " world " + std::to_string(world));
          const auto a = run_two_steps(*be, plan_of(layout, sched, s, dtype, true));
          const auto i = run_two_steps(*be, plan_of(layout, sched, s, dtype, false));
          EXPECT_EQ(a.correct, i.correct);
          expect_bytes_and_peaks_of_the_model(a);
          EXPECT_EQ(a.measured.d2h_bytes, i.measured.d2h_bytes);
          EXPECT_EQ(a.measured.h2d_bytes, i.measured.h2d_bytes);
          EXPECT_GE(a.measured.peak_device_bytes, i.measured.peak_device_bytes);
        }
  }
}

// Without offload on nnnS the backwards of micro-batches 1-3 each hold a fresh gradient beside the
// accumulated one: the peak is higher by the largest unit's; on SSSS every backward starts without
// a gradient (freed by the sync), so nothing changes.
TEST(GradAccumulation, OneFreshGradientMoreAtThePeakOnlyWhereGradientsAccumulate) {
  auto be = make_host_backend({1, 1});
  const Layout layout = make_layout({4096, 1009, 777});
  StrategySpec s = preset("fsdp2");
  s.offload = "none";
  const uint64_t largest = padded_numel(4096, 1) * 4;
  const auto a = run_two_steps(*be, plan_of(layout, "nnnS", s, "fp32-fp32-fp32", true));
  const auto i = run_two_steps(*be, plan_of(layout, "nnnS", s, "fp32-fp32-fp32", false));
  EXPECT_GT(a.measured.peak_device_bytes, i.measured.peak_device_bytes);
  EXPECT_LE(a.measured.peak_device_bytes - i.measured.peak_device_bytes, largest);
  const auto a1 = run_two_steps(*be, plan_of(layout, "SSSS", s, "fp32-fp32-fp32", true));
  const auto i1 = run_two_steps(*be, plan_of(layout, "SSSS", s, "fp32-fp32-fp32", false));
  EXPECT_EQ(a1.measured.peak_device_bytes, i1.measured.peak_device_bytes);
  EXPECT_EQ(a1.measured.accumulate_bytes, i1.measured.accumulate_bytes);
}

TEST(GradAccumulation, NameSegmentAndRefusal) {
  for (const CaseSpec& c : cases_of({"--preset", "fsdp2"})) {
    EXPECT_EQ(c.name().find("grad-accumulation"), std::string::npos) << c.name();
    EXPECT_FALSE(c.plan().autograd_accumulation);
  }
  const auto on = cases_of({"--preset", "fsdp2", "--grad-accumulation", "autograd"});
  ASSERT_FALSE(on.empty());
  for (const CaseSpec& c : on) {
    const std::string n = c.name();
    const std::string seg = "/grad-accumulation:autograd";
    EXPECT_TRUE(n.size() > seg.size() && n.compare(n.size() - seg.size(), seg.size(), seg) == 0)
        << n;
    EXPECT_TRUE(c.plan().autograd_accumulation);
  }
  try {
    cases_of({"--grad-accumulation", "fresh"});
    ADD_FAILURE() << "--grad-accumulation fresh was accepted";
  } catch (const CliError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--grad-accumulation"), std::string::npos) << m;
    EXPECT_NE(m.find("autograd"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace shardaccum
