// `shardaccum_bench --describe-layout --model M`: the layout document on stdout with no backend,
// and exit 2 naming the flag for a missing, listed or bad --model and for any other run flag.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/layout_json.hpp"
#include "bench/model_layouts.hpp"
#include "bench_cli_support.hpp"

namespace shardaccum {
namespace {

using Captured = testing::StdoutResult;
Captured run_stdout(const std::string& args) { return testing::run_bench_stdout(args); }

TEST(DescribeLayoutCli, PrintsTheLayoutDocumentOfTheModel) {
  for (const char* spec : {"gpt2", "llama3.1-8b", "uniform:4x1M"}) {
    const auto r = run_stdout(std::string("--describe-layout --model ") + spec);
    ASSERT_EQ(r.rc, 0) << spec;
    const Layout l = load_layout(spec, {SHARDACCUM_CONFIG_DIR});
    EXPECT_EQ(nlohmann::ordered_json::parse(r.out), layout_json(l, spec)) << spec;
  }
  // The order of the flags and --model=VALUE do not matter; --config-dir is where names are found.
  const auto r = run_stdout(std::string("--model=gpt2 --config-dir ") + SHARDACCUM_CONFIG_DIR +
                            " --describe-layout");
  ASSERT_EQ(r.rc, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out).at("spec"), "gpt2");
}

TEST(DescribeLayoutCli, RefusesAMissingOrListedModelAndOtherFlags) {
  struct Bad {
    const char* args;
    const char* needle;
  };
  for (const Bad& b :
       {Bad{"", "needs --model"}, Bad{"--model gpt2,gpt2-xl", "exactly one value"},
        Bad{"--model gpt2 --model gpt2-xl", "exactly one value"}, Bad{"--model gpt2, ", "--model"},
        Bad{"--model no-such-model", "unknown model name"},
        Bad{"--model uniform:0x5", "COUNT must be at least 1"},
        Bad{"--model gpt2 --k 4", "--k would be ignored"},
        Bad{"--model gpt2 --backend host", "--backend would be ignored"},
        Bad{"--model gpt2 --list", "--list would be ignored"},
        Bad{"--model gpt2 --benchmark_out=/tmp/x.json", "leave out"}}) {
    const auto r = testing::run_bench_cli("", std::string("--describe-layout ") + b.args);
    EXPECT_EQ(r.rc, 2) << b.args << ": " << r.err;
    EXPECT_NE(r.err.find(b.needle), std::string::npos) << b.args << ": " << r.err;
  }
  const auto both = testing::run_bench_cli("", "--describe-layout --describe-registry");
  EXPECT_EQ(both.rc, 2) << both.err;
  const auto help = run_stdout("--help");
  EXPECT_NE(help.out.find("--describe-layout"), std::string::npos);
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  EXPECT_EQ(run_stdout("--describe-layout --model gpt2 >/dev/full").rc, 1);
}

}  // namespace
}  // namespace shardaccum
