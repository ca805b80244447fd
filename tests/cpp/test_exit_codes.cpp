// The one map from what ended a run to shardaccum_bench's exit status (bench/exit_codes.hpp), and
// how main prints it: the same statuses and lines the CLI tests see end to end.
#include <gtest/gtest.h>

#include <stdexcept>

#include "bench/cli.hpp"
#include "bench/exit_codes.hpp"

namespace shardaccum {
namespace {

TEST(ExitCodes, BadInputIsTwoAndAFailedRunIsOne) {
  EXPECT_EQ(exit_code(CliError("--steps: bad")), 2);
  EXPECT_EQ(exit_code(UsageError("no case ran")), 2);
  EXPECT_EQ(exit_code(RunFailure("--benchmark_out: disk full")), 1);
  EXPECT_EQ(exit_code(std::runtime_error("anything else")), 1);
}

TEST(ExitCodes, ReportNamesTheRankAndTheHint) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(report_error(RunFailure("rendezvous: 1 of 2 ranks arrived",
                                    "rank 0: ", "start the ranks with srun")),
            1);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "shardaccum_bench: rank 0: error: rendezvous: 1 of 2 ranks arrived\n"
            "shardaccum_bench: hint: start the ranks with srun\n");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(report_error(CliError("--trace and --benchmark_out name the same file")), 2);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "shardaccum_bench: error: --trace and --benchmark_out name the same file\n");
}

TEST(ExitCodes, AFlagErrorPrintsTheUsersControlCharactersEscaped) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(report_error(CliError("--trace /tmp/a\nb\x1b[2J: cannot use that path")), 2);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "shardaccum_bench: error: --trace /tmp/a\\x0ab\\x1b[2J: cannot use that path\n");
}

TEST(ExitCodes, OnlyAnErrorThatMayHaveLostAPeerAbandonsTheWorld) {
  EXPECT_TRUE(abandons(RunFailure("cuda backend: x", "rank 1: ", {}, true)));
  EXPECT_FALSE(abandons(RunFailure("cuda backend: x")));
  EXPECT_FALSE(abandons(CliError("x")));
}

}  // namespace
}  // namespace shardaccum
