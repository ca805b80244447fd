// Results are never lost to another output or another run: --benchmark_out or --trace naming the
// --model file is refused; a second run writing the same --benchmark_out is refused while the first
// holds DEST.lock; a temporary file left by a killed run is removed only when its owner's lock is
// free; a SIGHUP ignored at start (nohup) stays ignored.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "bench/context_keys.hpp"
#include "output_cli_support.hpp"

namespace {

using namespace shardaccum::testing;
namespace fs = std::filesystem;

const std::string kCase =
    "--backend host --schedule nnnS --binding data --offload none --mode flag --warmup 0 ";
const std::string kSmall = kCase + "--model uniform:2x1000 --steps 1 ";
const std::string kLong = kCase + "--model uniform:2x256K --steps 40 ";  // a second or two

using OutputSafety = OutputDir;

/// Starts `args` in the background (after `prefix`, e.g. "trap '' HUP;") with stderr to ERR; the
/// bench's pid goes to PID, its exit status to RC when it ends.
void start_background(const std::string& dir, const std::string& prefix, const std::string& args) {
  ASSERT_EQ(run_shell("(" + prefix + " " + bench_command(args) + " >/dev/null 2>" + dir +
                      "/ERR & echo $! >" + dir + "/PID; wait $!; echo $? >" + dir +
                      "/RC) >/dev/null 2>&1 &"),
            0);
  ASSERT_TRUE(wait_for_text(dir + "/PID", "\n", 30));
}

TEST_F(OutputSafety, ResultsOrTraceOverTheModelFileAreRefused) {
  const std::string model = dir_ + "/m.json";
  const std::string layout =
      R"({"units": [{"name": "a", "numel": 1000}, {"name": "b", "numel": 1000}]})";
  write_file(model, layout);
  fs::create_symlink(model, dir_ + "/link.json");
  const std::string base = kCase + "--steps 1 --model " + model + " ";
  for (const std::string& out :
       {"--benchmark_out=" + model, "--benchmark_out=" + dir_ + "/link.json", "--trace " + model,
        "--trace " + dir_ + "/link.json"}) {
    const int rc = run_shell(bench_command(base + out) + " >/dev/null 2>" + dir_ + "/err");
    EXPECT_EQ(rc, 2) << out << ": " << slurp(dir_ + "/err");
    EXPECT_NE(slurp(dir_ + "/err").find("names the --model file"), std::string::npos)
        << slurp(dir_ + "/err");
    EXPECT_EQ(slurp(model), layout) << out;
  }
  // A shipped-style name found through --config-dir is the same file.
  const int rc = run_shell(bench_command(kCase + "--steps 1 --config-dir " + dir_ +
                                         " --model m --benchmark_out=" + model) +
                           " >/dev/null 2>" + dir_ + "/err");
  EXPECT_EQ(rc, 2) << slurp(dir_ + "/err");
  EXPECT_EQ(slurp(model), layout);
}

TEST_F(OutputSafety, TraceAndResultsNamingOneFileAreRefusedHoweverSpelled) {
  // weakly_canonical alone left "./t.json" against "t.json" apart (a file not yet written), and a
  // link to the results file let the trace overwrite them with exit 0.
  write_file(dir_ + "/r.json", "kept");
  fs::create_symlink("r.json", dir_ + "/link.json");
  fs::create_directory(dir_ + "/sub");
  const std::string cd = "cd '" + dir_ + "' && ";
  for (const auto& [trace, out] :
       std::vector<std::pair<std::string, std::string>>{{"./t.json", "t.json"},
                                                        {"sub/../t.json", "t.json"},
                                                        {dir_ + "/t.json", "t.json"},
                                                        {"link.json", "r.json"},
                                                        {"r.json", "link.json"}}) {
    const int rc =
        run_shell(cd + bench_command(kSmall + "--trace " + trace + " --benchmark_out=" + out) +
                  " >/dev/null 2>err");
    EXPECT_EQ(rc, 2) << trace << " / " << out << ": " << slurp(dir_ + "/err");
    EXPECT_NE(slurp(dir_ + "/err").find("--trace and --benchmark_out name the same file"),
              std::string::npos)
        << slurp(dir_ + "/err");
    EXPECT_EQ(slurp(dir_ + "/r.json"), "kept");
    EXPECT_FALSE(fs::exists(dir_ + "/t.json")) << trace;
  }
}

TEST_F(OutputSafety, EveryContextKeyAHostRunWritesIsReserved) {
  // bench/context_keys.cpp is a list: a key added to the context without it there could be set by
  // --benchmark_context and win over the run's own value.
  const std::string out = dir_ + "/r.json";
  ASSERT_EQ(run_shell(bench_command(kSmall + "--benchmark_out=" + out) + " >/dev/null 2>&1"), 0);
  const auto ctx = nlohmann::json::parse(slurp(out)).at("context");
  ASSERT_GT(ctx.size(), 30u);
  for (const auto& [key, value] : ctx.items())
    EXPECT_TRUE(shardaccum::reserved_context_key(key)) << key;
}

TEST_F(OutputSafety, ASighupIgnoredAtStartStaysIgnored) {
  const std::string f = dir_ + "/run.json";
  start_background(dir_, "trap '' HUP;", kLong + "--benchmark_out=" + f);
  ASSERT_TRUE(wait_for_text(dir_ + "/ERR", "backend: host", 60)) << slurp(dir_ + "/ERR");
  const pid_t pid = std::stoi(slurp(dir_ + "/PID"));
  ASSERT_EQ(kill(pid, SIGHUP), 0);
  ASSERT_TRUE(wait_for_text(dir_ + "/RC", "\n", 120));
  EXPECT_EQ(slurp(dir_ + "/RC"), "0\n") << slurp(dir_ + "/ERR");
  EXPECT_NE(slurp(dir_ + "/ERR").find("wrote " + f), std::string::npos) << slurp(dir_ + "/ERR");
  EXPECT_TRUE(nlohmann::json::accept(slurp(f)));
}

TEST_F(OutputSafety, AStaleTemporaryIsRemovedButALiveRunsIsNot) {
  const std::string f = dir_ + "/run.json";
  const std::string live = f + ".tmp." + std::to_string(getpid());
  write_file(live, "partial");
  write_file(dir_ + "/other.json.tmp.1", "another destination's");
  {
    // This test is the live owner: it holds run.json.lock as a running shardaccum_bench does.
    const int fd = open((f + ".lock").c_str(), O_RDWR | O_CREAT, 0666);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
    const std::string pid = std::to_string(getpid()) + "\n";
    ASSERT_EQ(write(fd, pid.data(), pid.size()), static_cast<ssize_t>(pid.size()));
    const int rc = run_shell(bench_command(kSmall + "--benchmark_out=" + f) + " >/dev/null 2>" +
                             dir_ + "/err");
    close(fd);
    EXPECT_EQ(rc, 2) << slurp(dir_ + "/err");
    EXPECT_NE(
        slurp(dir_ + "/err")
            .find("another shardaccum_bench (pid " + std::to_string(getpid()) + ") is writing"),
        std::string::npos)
        << slurp(dir_ + "/err");
    EXPECT_EQ(slurp(live), "partial") << "a live run's temporary file was removed";
    EXPECT_FALSE(fs::exists(f));
  }
  // The lock is free now: the same file is a dead run's, and goes.
  const std::string dead = f + ".tmp.4194000";
  write_file(dead, "partial");
  const int rc =
      run_shell(bench_command(kSmall + "--benchmark_out=" + f) + " >/dev/null 2>" + dir_ + "/err");
  EXPECT_EQ(rc, 0) << slurp(dir_ + "/err");
  EXPECT_FALSE(fs::exists(live));
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_NE(slurp(dir_ + "/err").find("removed " + dead), std::string::npos)
      << slurp(dir_ + "/err");
  EXPECT_EQ(slurp(dir_ + "/other.json.tmp.1"), "another destination's");
  EXPECT_TRUE(nlohmann::json::accept(slurp(f)));
  EXPECT_FALSE(fs::exists(f + ".lock")) << "the lock file is removed when the run ends";
}

/// Starts a long run writing `dir`/`file` through `flag` (e.g. "--benchmark_out=", "--trace "),
/// then a short one on the same file: the second is refused (exit 2, the first's pid named), the
/// first ends well and its output is the one kept; returns that output's text.
std::string second_writer_is_refused(const std::string& dir, const std::string& flag,
                                     const std::string& file) {
  const std::string f = dir + "/" + file;
  start_background(dir, "", kLong + flag + f);
  EXPECT_TRUE(wait_for_text(dir + "/ERR", "backend: host", 60)) << slurp(dir + "/ERR");
  const std::string first = std::to_string(std::stoi(slurp(dir + "/PID")));
  const int rc = run_shell(bench_command(kSmall + flag + f) + " >/dev/null 2>" + dir + "/err");
  EXPECT_EQ(rc, 2) << slurp(dir + "/err");
  EXPECT_NE(slurp(dir + "/err")
                .find(flag + f + ": another shardaccum_bench (pid " + first + ") is writing " + f),
            std::string::npos)
      << slurp(dir + "/err");
  EXPECT_TRUE(wait_for_text(dir + "/RC", "\n", 120));
  EXPECT_EQ(slurp(dir + "/RC"), "0\n") << slurp(dir + "/ERR");
  EXPECT_FALSE(fs::exists(f + ".lock")) << "the lock file is removed when the run ends";
  return slurp(f);
}

TEST_F(OutputSafety, ASecondRunWritingTheSameFileIsRefused) {
  const auto j =
      nlohmann::json::parse(second_writer_is_refused(dir_, "--benchmark_out=", "run.json"));
  EXPECT_NE(j.at("context").at("command").get<std::string>().find("--steps 40"), std::string::npos)
      << "the first run's result is the one kept";
}

TEST_F(OutputSafety, ASecondRunTracingIntoTheSameFileIsRefused) {
  // The trace takes the same lock as --benchmark_out: before, both runs said "wrote trace" and the
  // faster one's trace was gone.
  const auto j = nlohmann::json::parse(second_writer_is_refused(dir_, "--trace ", "trace.json"));
  EXPECT_NE(j.dump().find("--steps 40"), std::string::npos)
      << "the first run's trace is the one kept";
}

}  // namespace
