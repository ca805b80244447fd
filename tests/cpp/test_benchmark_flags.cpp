// Google Benchmark's own flags pass through the suite's CLI untouched, but GB takes a bad value of
// several of them silently (a default, or its usage text and exit 0): the CLI refuses those values
// first, naming the flag and what it takes (bench/benchmark_args.hpp benchmark_flag_error).
#include <gtest/gtest.h>

#include "bench/benchmark_args.hpp"
#include "bench/cli.hpp"
#include "cli_options_support.hpp"

namespace shardaccum {
namespace {

std::string cli_error(const std::vector<std::string>& args) {
  try {
    testing::parsed(args);
  } catch (const CliError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(BenchmarkFlags, GoodValuesPass) {
  for (const char* a :
       {"--benchmark_time_unit=ms", "--benchmark_time_unit=s", "--benchmark_repetitions=1",
        "--benchmark_repetitions=1000", "--benchmark_color=auto", "--benchmark_color=false",
        "--benchmark_counters_tabular=true", "--benchmark_report_aggregates_only=Yes",
        "--benchmark_context=gpu=h200,run=a", "--benchmark_filter=anything",
        "--benchmark_out=x.json"})
    EXPECT_EQ(benchmark_flag_error(a), "") << a;
  EXPECT_EQ(cli_error({"--benchmark_time_unit=us", "--benchmark_repetitions=3"}), "<no error>");
}

TEST(BenchmarkFlags, ABadValueIsRefusedNamingTheFlagAndWhatItTakes) {
  const auto refused = [](const std::string& a, const std::string& says) {
    const std::string e = cli_error({a});
    EXPECT_NE(e.find(a), std::string::npos) << e;
    EXPECT_NE(e.find(says), std::string::npos) << e;
  };
  refused("--benchmark_time_unit=parsec", "expected ns, us, ms or s");
  refused("--benchmark_repetitions=0", "give 1 to 1000 repetitions");
  refused("--benchmark_repetitions=1000000", "give 1 to 1000 repetitions");
  refused("--benchmark_repetitions=2x", "give 1 to 1000 repetitions");
  refused("--benchmark_color=purple", "expected auto, true or false");
  refused("--benchmark_counters_tabular=maybe", "expected true or false");
  refused("--benchmark_context=a=b,c", "'c' has no KEY=");
  refused("--benchmark_context==b", "has no KEY=");
  refused("--benchmark_min_time=5", "give --steps N");
  refused("--benchmark_format=xml", "expected json, csv or console");
}

TEST(BenchmarkFlags, AContextKeyTheRunWritesItselfIsRefused) {
  // GB keeps the first value of a key and the user's comes first: "backend=cuda" would make a host
  // run's JSON claim GPU time; "date" would be written twice (not strict JSON).
  for (const char* key : {"backend", "time_domain", "run_id", "git_commit", "date", "host_name",
                          "machine", "bytes_source", "ceiling_h2d_gbps", "backend_world_size"}) {
    const std::string a = std::string("--benchmark_context=gpu=h200,") + key + "=x";
    const std::string e = cli_error({a});
    EXPECT_NE(e.find(std::string("'") + key + "' is a key the run writes itself"),
              std::string::npos)
        << e;
  }
  EXPECT_EQ(benchmark_flag_error("--benchmark_context=gpu=h200,backends=2,my_backend=x"), "");
}

}  // namespace
}  // namespace shardaccum
