// Bad input gets a clear error that names the flag: schedules, dtypes, world sizes, unknown flags.
#include <gtest/gtest.h>

#include <algorithm>

#include "bench/cli.hpp"
#include "cli_options_support.hpp"
#include "strategies/default_matrix.hpp"
#include "strategies/preset/preset.hpp"

namespace shardaccum {
namespace {

template <class E, class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(Schedules, CanonicalSchedulesAtK4) {
  EXPECT_EQ(canonical_schedule("no-sync", 4).modes, "nnnS");
  EXPECT_EQ(canonical_schedule("sync", 4).modes, "SSSS");
  EXPECT_EQ(canonical_schedule("interleaved-nosync-last", 4).modes, "nSnS");
  EXPECT_EQ(canonical_schedule("interleaved-sync-last", 4).modes, "SnSS");
  EXPECT_EQ(canonical_schedule("interleaved-nosync-last", 5).modes, "SnSnS");
  EXPECT_EQ(canonical_schedule("interleaved-sync-last", 3).modes, "nSS");
  EXPECT_EQ(canonical_schedule("no-sync", 3).modes, "nnS");
  EXPECT_EQ(parse_schedule("nSnS", 99).sync_count(), 2);
}

TEST(Schedules, BadSchedulesNameTheFlag) {
  for (const char* bad : {"", "nnn", "SxS", "s", "nnnn"}) {
    const std::string e = error_of<std::invalid_argument>([&] { parse_schedule(bad, 4); });
    EXPECT_NE(e.find("--schedule"), std::string::npos) << bad << ": " << e;
  }
  EXPECT_NE(error_of<std::invalid_argument>([] { parse_schedule("nnn", 4); }).find("must end in S"),
            std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([] { canonical_schedule("sync", 2); }).find("--k >= 3"),
            std::string::npos);
  // The literal it offers is one of K letters: 'nS' or 'SS' at K=2, 'S' at K=1.
  EXPECT_NE(error_of<std::invalid_argument>([] {
              canonical_schedule("sync", 2);
            }).find("such as 'nS' or 'SS'"),
            std::string::npos);
  EXPECT_NE(
      error_of<std::invalid_argument>([] { canonical_schedule("no-sync", 1); }).find("such as 'S'"),
      std::string::npos);
}

TEST(Dtypes, TriplesParseAndBadOnesNameTheFlag) {
  EXPECT_EQ(parse_dtype_triple("bf16-bf16-fp32").name(), "bf16-bf16-fp32");
  for (const char* bad :
       {"fp32", "fp16-fp16-fp32", "fp32-bf16-fp32", "bf16-bf16-bf16-fp32", "fp32-fp32-bf16"}) {
    const std::string e = error_of<std::invalid_argument>([&] { parse_dtype_triple(bad); });
    EXPECT_NE(e.find("dtype"), std::string::npos) << bad << ": " << e;
  }
}

/// Parses argv and resolves the axes on the host backend's defaults.
MatrixAxes cli(std::vector<std::string> args) {
  return resolve_axes(testing::parsed(std::move(args)), "uniform:8x1M", 2, 1024);
}

TEST(Cli, DefaultMatrixIsEveryStrategyAndSchedule) {
  const MatrixAxes a = cli({});
  // The main job's (docs/DESIGN.md §3): the 16 of the named list, then the presets not among them.
  EXPECT_EQ(a.strategies, main_strategies());
  ASSERT_GE(a.strategies.size(), 16u);
  const std::vector<StrategySpec> idealised = default_strategies();
  EXPECT_TRUE(std::equal(idealised.begin(), idealised.end(), a.strategies.begin()));
  for (const PresetInfo& p : PresetRegistry::get().entries())
    EXPECT_NE(std::find(a.strategies.begin(), a.strategies.end(), p.spec), a.strategies.end())
        << p.name;
  EXPECT_EQ(a.schedules.size(), 4u);
  EXPECT_EQ(a.world_sizes, std::vector<int>{2});
  EXPECT_EQ(build_matrix(a).size(), main_strategies().size() * std::size(kCanonicalSchedules));
  EXPECT_EQ(build_matrix(a)[0].name(), "accum/model:uniform:8x1M/world:2/schedule:nnnS/"
                                       "binding:data/offload:none/mode:flag/dtype:fp32-fp32-fp32");
  EXPECT_EQ(cli({"--preset", "fsdp2,zero3", "--schedule", "sync"}).strategies.size(), 2u);
  EXPECT_EQ(cli({"--offload", "gpu-add,cpu-add", "--mode", "flag"}).strategies.size(), 4u);
}

TEST(Cli, BadFlagsAndValuesNameTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--world-size", "0"}, "--world-size"},  {{"--world-size", "two"}, "--world-size"},
      {{"--schedule", "nnn"}, "--schedule"},    {{"--schedule", "SxS"}, "--schedule"},
      {{"--offload", "disk"}, "--offload"},     {{"--mode", "guess"}, "--mode"},
      {{"--binding", ""}, "--binding"},         {{"--preset", "fsdp3"}, "--preset"},
      {{"--dtype", "fp16-fp16-fp16"}, "dtype"}, {{"--model", "no-such-model"}, "--model"},
      {{"--backend", "tpu"}, "--backend"},      {{"--steps", "0"}, "--steps"},
      {{"--frobnicate"}, "--frobnicate"},
  };
  for (const auto& [args, flag] : bad) {
    // A plain reference for the lambda: clang 14 cannot capture a structured binding.
    const auto& a = args;
    const std::string e = error_of<CliError>([&] { cli(a); });
    EXPECT_NE(e.find(flag), std::string::npos) << args[0] << ": " << e;
  }
}

}  // namespace
}  // namespace shardaccum
