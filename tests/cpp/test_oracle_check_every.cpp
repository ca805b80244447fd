// Issue 11 item 15: --check every (the default) checks each measured step, so a strategy wrong
// on one step only is caught; --check last checks the last step only and misses it. The steps
// run as bench_cases.cpp runs them: checks_step decides, CaseVerdict folds the checked steps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/bench_cases.hpp"
#include "bench/case_runner.hpp"
#include "bench_cli_support.hpp"
#include "faulty_backend.hpp"
#include "strategies/preset/preset.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

constexpr int kWarmup = 1, kSteps = 5;  // step 0 warms up, steps 1..5 are measured

CaseVerdict run_measured(Backend& be, CheckMode mode) {
  // zero3 on nSnS is correct by design: any WRONG comes from the injected fault.
  const CasePlan plan{testing::make_layout({1009, 64}),
                      canonical_schedule("interleaved-sync-last", 4),
                      preset("zero3"),
                      parse_dtype_triple("fp32-fp32-fp32"),
                      GenMode::dyadic,
                      7,
                      "t"};
  CaseRunner runner(be, plan);
  uint32_t step = 0;
  for (int w = 0; w < kWarmup; ++w) runner.step(step++, false);
  CaseVerdict v(plan.dtypes, plan.gen, plan.schedule.k(), be.world_size());
  for (int i = 0; i < kSteps; ++i) {
    const bool check = checks_step(mode, i, kSteps);
    StepReport rep = runner.step(step++, check);
    if (check) v.add(rep.oracle);
  }
  return v;
}

CaseVerdict run_with_fault(testing::StepFault fault, CheckMode mode) {
  const auto be = testing::faulty_backend(2, std::move(fault));
  return run_measured(*be, mode);
}

TEST(OracleCheckEvery, DefaultIsEvery) { EXPECT_EQ(SuiteSettings{}.check, CheckMode::every); }

TEST(OracleCheckEvery, WithoutAFaultBothModesAreCorrect) {
  const CaseVerdict every = run_with_fault([](int) { return false; }, CheckMode::every);
  EXPECT_TRUE(every.correct());
  EXPECT_EQ(every.checked_steps(), kSteps);
  EXPECT_EQ(every.max_rel_err(), 0.0);  // dyadic sums, N = 2: exact
  const CaseVerdict last = run_with_fault([](int) { return false; }, CheckMode::last);
  EXPECT_TRUE(last.correct());
  EXPECT_EQ(last.checked_steps(), 1);
}

TEST(OracleCheckEvery, WrongOnlyOnTheFirstMeasuredStepIsCaughtByEveryMissedByLast) {
  const auto first = [](int s) { return s == kWarmup; };
  const CaseVerdict every = run_with_fault(first, CheckMode::every);
  EXPECT_FALSE(every.correct());
  EXPECT_EQ(every.max_rel_err(), 1.0);  // the shard doubled: ||2e - e|| / ||e|| = 1
  EXPECT_TRUE(run_with_fault(first, CheckMode::last).correct());
}

TEST(OracleCheckEvery, WrongOnlyOnAMiddleStepIsCaughtByEveryMissedByLast) {
  const auto third = [](int s) { return s == 3; };
  EXPECT_FALSE(run_with_fault(third, CheckMode::every).correct());
  EXPECT_TRUE(run_with_fault(third, CheckMode::last).correct());
}

TEST(OracleCheckEvery, WrongFromStepThreeOnIsCaughtByBoth) {
  const auto late = [](int s) { return s >= 3; };
  EXPECT_FALSE(run_with_fault(late, CheckMode::every).correct());
  EXPECT_FALSE(run_with_fault(late, CheckMode::last).correct());
}

TEST(OracleCheckEvery, VerdictWithoutACheckedStepIsNotCorrect) {
  CaseVerdict v(parse_dtype_triple("fp32-fp32-fp32"), GenMode::dyadic, 4, 2);
  v.add({});  // an unchecked step carries no oracle result
  EXPECT_EQ(v.checked_steps(), 0);
  EXPECT_FALSE(v.correct());
}

TEST(OracleCheckEvery, CliRejectsAnUnknownModeNamingTheFlag) {
  const auto r = testing::run_bench_cli("", "--backend host --check some");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--check 'some'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("every"), std::string::npos) << r.err;
}

TEST(OracleCheckEvery, JsonContextRecordsTheCheckMode) {
  const std::string out = ::testing::TempDir() + "/check_ctx_" + std::to_string(getpid()) + ".json";
  for (const char* mode : {"every", "last"}) {
    const auto r = testing::run_bench_cli(
        "", std::string(
                "--backend host --model uniform:1x64 --world-size 1 --preset zero3 --schedule sync "
                "--steps 2 --check ") +
                mode + " --benchmark_out=" + out + " --benchmark_out_format=json");
    ASSERT_EQ(r.rc, 0) << r.err;
    std::ifstream in(out);
    const nlohmann::json j = nlohmann::json::parse(in);
    EXPECT_EQ(j["context"]["check"], mode);
    EXPECT_EQ(j["benchmarks"][0]["correct"], 1);
  }
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace shardaccum
