// Cases no configuration of their system runs (docs/PRESETS.md Z7: ZeRO-3 runs S^K and n^(K-1)S,
// never an interleaved schedule, as DeepSpeed's engine.no_sync asserts for stage 3) are left
// out when the matrix is built, with the reason on stderr and in the JSON context's
// `left_out_cases`: never error cases; a matrix of nothing else is bad input (exit 2).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/case_matrix.hpp"
#include "bench/model_layouts.hpp"
#include "bench_cli_support.hpp"
#include "strategies/preset/preset.hpp"

namespace shardaccum {
namespace {

CaseSpec case_of(const char* preset_name, const char* schedule) {
  CaseSpec c;
  c.layout = std::make_shared<const Layout>(load_layout("uniform:2x1000", {}));
  c.schedule = parse_schedule(schedule, 4);
  c.strategy = preset(preset_name);
  c.dtypes = parse_dtype_triple("fp32-fp32-fp32");
  return c;
}

TEST(LeftOut, Zero3RunsSyncAndNoSyncButNoInterleavedSchedule) {
  std::vector<CaseSpec> cases;
  for (const char* p : {"zero3", "fsdp2"})
    for (const char* s : {"nnnS", "SSSS", "nSnS", "SnSS"}) cases.push_back(case_of(p, s));
  const std::vector<LeftOutCase> out = leave_out_unrunnable(cases);
  ASSERT_EQ(out.size(), 2u);  // zero3 on nSnS and SnSS
  ASSERT_EQ(cases.size(), 6u);
  EXPECT_EQ(out[0].name, case_of("zero3", "nSnS").name());
  EXPECT_EQ(out[1].name, case_of("zero3", "SnSS").name());
  EXPECT_NE(out[0].reason.find("engine.no_sync"), std::string::npos) << out[0].reason;
  EXPECT_EQ(cases[0].name(), case_of("zero3", "nnnS").name());
  EXPECT_EQ(cases[1].name(), case_of("zero3", "SSSS").name());
  for (size_t i = 2; i < cases.size(); ++i) EXPECT_EQ(cases[i].strategy, preset("fsdp2"));
  // Its axes given one by one are the same case: left out too.
  std::vector<CaseSpec> axes{case_of("zero3", "SnSS")};
  axes[0].strategy = StrategySpec{"data-free", "gpu-add-zero3", "flag", "pre"};
  EXPECT_EQ(leave_out_unrunnable(axes).size(), 1u);
  // Only zero3 refuses no_sync among the registered presets.
  for (const PresetInfo& p : PresetRegistry::get().entries())
    EXPECT_EQ(p.refuses_interleaved.empty(), p.name != "zero3") << p.name;
}

TEST(LeftOutCli, ARunSaysWhatItLeftOutAndWhyInItsJson) {
  const std::string json =
      ::testing::TempDir() + "/shardaccum_left_out_" + std::to_string(getpid()) + ".json";
  const testing::CliResult r = testing::run_bench_cli(
      "", "--backend host --model uniform:2x1000 --schedule nSnS,SSSS --preset fsdp2,zero3 "
          "--warmup 0 --steps 1 --benchmark_out='" +
              json + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("schedule:nSnS/binding:data-free/offload:gpu-add-zero3"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("left out: zero3 runs S^K and n^(K-1)S only, not nSnS"), std::string::npos)
      << r.err;
  std::ifstream in(json);
  const nlohmann::json doc = nlohmann::json::parse(in);
  int cases = 0;
  for (const auto& b : doc["benchmarks"]) {
    EXPECT_FALSE(b.value("error_occurred", false)) << b["name"];
    ++cases;
  }
  EXPECT_EQ(cases, 3);  // fsdp2 on both schedules, zero3 on SSSS
  const nlohmann::json left =
      nlohmann::json::parse(doc["context"]["left_out_cases"].get<std::string>());
  ASSERT_EQ(left.size(), 1u);
  EXPECT_NE(left[0]["case"].get<std::string>().find("schedule:nSnS"), std::string::npos);
  EXPECT_NE(left[0]["reason"].get<std::string>().find("engine.py"), std::string::npos);
  std::filesystem::remove(json);
}

TEST(LeftOutCli, NothingLeftToRunIsBadInputThatNamesTheFix) {
  const testing::CliResult r =
      testing::run_bench_cli("", "--backend host --preset zero3 --schedule nSnS --list");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("no case left to run"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--schedule"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace shardaccum
