// The run's identity (issue 11, item 10): shardaccum_bench writes one UUID, run_id, into both the
// JSON context of --benchmark_out and the trace's otherData, and every run gets a new one, so that
// report.py can tell a trace.json of another run from the run's own.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/run_id.hpp"
#include "bench_cli_support.hpp"

namespace {

struct Ids {
  std::string context, trace;
};

Ids run_once(const std::string& tag) {
  const std::string base =
      ::testing::TempDir() + "/shardaccum_run_id_" + std::to_string(getpid()) + "_" + tag;
  const std::string bench = base + ".bench.json", trace = base + ".trace.json";
  const auto r = shardaccum::testing::run_bench_cli(
      "",
      "--backend host --world-size 2 --model uniform:2x1000 --schedule SS --preset fsdp2 --steps 1 "
      "--warmup 1 --trace '" +
          trace + "' --benchmark_out='" + bench + "' --benchmark_out_format=json");
  EXPECT_EQ(r.rc, 0) << r.err;
  Ids ids;
  std::ifstream b(bench), t(trace);
  if (!b || !t) {
    ADD_FAILURE() << "no output files: " << r.err;
    return ids;
  }
  const auto doc = nlohmann::json::parse(b), tr = nlohmann::json::parse(t);
  ids.context = doc.at("context").value("run_id", std::string());
  ids.trace = tr.at("otherData").value("run_id", std::string());
  std::filesystem::remove(bench);
  std::filesystem::remove(trace);
  return ids;
}

TEST(RunIdCli, ContextAndTraceCarryTheSameUuidAndEveryRunANewOne) {
  const Ids first = run_once("a"), second = run_once("b");
  EXPECT_TRUE(shardaccum::is_uuid(first.context)) << "context run_id: '" << first.context << "'";
  EXPECT_EQ(first.context, first.trace);
  EXPECT_TRUE(shardaccum::is_uuid(second.context)) << "context run_id: '" << second.context << "'";
  EXPECT_EQ(second.context, second.trace);
  EXPECT_NE(first.context, second.context);
}

TEST(RunId, IsAVersion4UuidAndTheFormCheckRejectsOthers) {
  const std::string id = shardaccum::make_run_id();
  ASSERT_TRUE(shardaccum::is_uuid(id)) << id;
  EXPECT_EQ(id[14], '4');  // both sources (the kernel's and the fallback) make version 4
  EXPECT_NE(id, shardaccum::make_run_id());
  EXPECT_FALSE(shardaccum::is_uuid(""));
  EXPECT_FALSE(shardaccum::is_uuid("0123456789abcdef0123456789abcdef0123"));
  EXPECT_FALSE(shardaccum::is_uuid("01234567-89AB-4DEF-8123-456789ABCDEF"));
}

}  // namespace
