// Output paths given to shardaccum_bench that cannot work are input errors (exit 2, the flag named,
// before any case runs), never a crash or a lost result: a link loop, the trace and the results on
// one file, --benchmark_out twice, an empty `--flag=` (which CLI11 would read as "take the next
// argument").
#include <gtest/gtest.h>

#include "bench_cli_support.hpp"
#include "output_cli_support.hpp"
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using Result = shardaccum::testing::CliResult;
using shardaccum::testing::bench_command;
using shardaccum::testing::run_with_file_limit;
Result run(const std::string& args) { return shardaccum::testing::run_bench_cli("", args); }

const std::string kSmall =
    "--backend host --model uniform:2x1000 --schedule nnnS --binding data --offload none "
    "--mode flag --steps 1 --warmup 0 ";

class OutputPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/shardaccum_paths_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(OutputPaths, ALinkLoopIsAnInputErrorNotACrash) {
  std::filesystem::create_symlink("loop", dir_ + "/loop");
  const Result r = run(kSmall + "--benchmark_out=" + dir_ + "/loop");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--benchmark_out"), std::string::npos) << r.err;
}

TEST_F(OutputPaths, ATraceWhoseLockCannotBeCreatedNamesTraceNotBenchmarkOut) {
  // /proc takes no new file, for root too: the lock beside the trace cannot be created.
  const Result r = run(kSmall + "--trace /proc/shardaccum_no_such_trace.json");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--trace /proc/shardaccum_no_such_trace.json: creating the lock file"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("--benchmark_out"), std::string::npos) << r.err;
}

TEST_F(OutputPaths, TheRunningExecutableIsNeverAnOutput) {
  // A copy of the bench, so that a regression destroys the copy and not the suite's binary.
  const std::string exe = dir_ + "/shardaccum_bench_copy";
  std::filesystem::copy_file(SHARDACCUM_BENCH_EXE, exe);
  const auto before = std::filesystem::file_size(exe);
  for (const std::string flag : {"--benchmark_out=", "--trace "}) {
    const std::string err = dir_ + "/err";
    const int rc = shardaccum::testing::run_shell("'" + exe + "' " + kSmall + flag + exe +
                                                  " >/dev/null 2>" + err);
    EXPECT_EQ(rc, 2) << shardaccum::testing::slurp(err);
    EXPECT_NE(shardaccum::testing::slurp(err).find("is this shardaccum_bench executable"),
              std::string::npos)
        << shardaccum::testing::slurp(err);
    EXPECT_EQ(std::filesystem::file_size(exe), before);
  }
}

TEST_F(OutputPaths, TraceAndResultsOnOneFileAreRefusedAndTheOldFileKept) {
  const std::string f = dir_ + "/same.json";
  std::ofstream(f) << "{\"old\": 1}";
  const Result r = run(kSmall + "--trace " + f + " --benchmark_out=" + f);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("same file"), std::string::npos) << r.err;
  std::ifstream in(f);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "{\"old\": 1}");
}

TEST_F(OutputPaths, BenchmarkOutTwiceAndEmptyValuesAreRefused) {
  Result r = run(kSmall + "--benchmark_out=" + dir_ + "/a.json --benchmark_out=/dev/null");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("more than once"), std::string::npos) << r.err;
  r = run(kSmall + "--trace= --list");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--trace= has an empty value"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists("--list"))
      << "the next argument was taken as the trace file";
  r = run(kSmall + "--trace '' --list");  // the space form: it ran and wrote no trace
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--trace has an empty value"), std::string::npos) << r.err;
  r = run(kSmall + "--timeout 0.5");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--timeout 0.5"), std::string::npos) << r.err;
}

}  // namespace

namespace {

std::string slurp_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// --trace through a link writes where the link points, as --benchmark_out does: the link stays
// (renaming over it replaced /dev/stdout itself with a regular file when run as root).
TEST_F(OutputPaths, ATraceThroughALinkKeepsTheLinkAndWritesItsTarget) {
  namespace fs = std::filesystem;
  fs::create_symlink(dir_ + "/target.json", dir_ + "/file-link.json");
  std::ofstream(dir_ + "/target.json") << "old";
  Result r = run(kSmall + "--trace " + dir_ + "/file-link.json");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir_ + "/file-link.json"));
  EXPECT_NE(slurp_file(dir_ + "/target.json").find("\"traceEvents\""), std::string::npos);
  // A link to the process's stdout (what /dev/stdout is) gets the trace on stdout.
  fs::create_symlink("/proc/self/fd/1", dir_ + "/stdout-link.json");
  const int rc = std::system(("'" + std::string(SHARDACCUM_BENCH_EXE) + "' " + kSmall + "--trace " +
                              dir_ + "/stdout-link.json >" + dir_ + "/stdout.txt 2>/dev/null")
                                 .c_str());
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(fs::is_symlink(dir_ + "/stdout-link.json"));
  EXPECT_NE(slurp_file(dir_ + "/stdout.txt").find("\"traceEvents\""), std::string::npos);
}

// `ulimit -f` past which the trace does not fit: an error (exit 1) that leaves no temporary file,
// not a kill by SIGXFSZ (the results' file ignores it; a run with --trace alone did not).
TEST_F(OutputPaths, ATraceCutShortByUlimitIsAnErrorNotAKill) {
  const int rc = run_with_file_limit(bench_command(kSmall + "--trace " + dir_ + "/t.json"), 8,
                                     dir_ + "/err", false);
  EXPECT_EQ(rc, 1) << slurp_file(dir_ + "/err");
  EXPECT_NE(slurp_file(dir_ + "/err").find("File too large"), std::string::npos)
      << slurp_file(dir_ + "/err");
  for (const auto& e : std::filesystem::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "left " << e.path();
}

// Every link of a chain is followed: the file at its end gets the result and the links stay. A link
// to /dev/stdout (itself a link) stops there and is written in place; renaming over it replaced
// /dev/stdout with a regular file when run as root with stdout redirected to a file.
TEST_F(OutputPaths, ResultsThroughAChainOfLinksReachItsEndAndKeepTheLinks) {
  namespace fs = std::filesystem;
  std::ofstream(dir_ + "/final.json") << "old";
  fs::create_symlink(dir_ + "/final.json", dir_ + "/l2.json");
  fs::create_symlink("l2.json", dir_ + "/l1.json");
  Result r = run(kSmall + "--benchmark_out=" + dir_ + "/l1.json");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir_ + "/l1.json"));
  EXPECT_TRUE(fs::is_symlink(dir_ + "/l2.json"));
  EXPECT_NE(slurp_file(dir_ + "/final.json").find("\"benchmarks\""), std::string::npos);
  // A chain ending in the process's stdout, redirected to a file: the result lands in that file.
  fs::create_symlink("/proc/self/fd/1", dir_ + "/stdout");
  fs::create_symlink(dir_ + "/stdout", dir_ + "/to-stdout.json");
  const int rc = std::system(("'" + std::string(SHARDACCUM_BENCH_EXE) + "' " + kSmall +
                              "--benchmark_out=" + dir_ + "/to-stdout.json >" + dir_ +
                              "/stdout.txt 2>/dev/null")
                                 .c_str());
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(fs::is_symlink(dir_ + "/stdout"));
  EXPECT_NE(slurp_file(dir_ + "/stdout.txt").find("\"benchmarks\""), std::string::npos);
}

}  // namespace
