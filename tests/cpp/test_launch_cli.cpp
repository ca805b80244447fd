// shardaccum_bench under a launcher's environment, on a machine without GPUs: one process per GPU
// needs the cuda backend, so the suite must say so (naming --launcher) before any work, and must
// keep running threaded when asked to or when the launch is a world of one.
#include <gtest/gtest.h>

#include "bench_cli_support.hpp"
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using Result = shardaccum::testing::CliResult;
const auto run = shardaccum::testing::run_bench_cli;

const char* kTorch2 = "RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999";
const char* kSmall =
    "--model uniform:2x1000 --schedule SSSS --offload none --mode flag --binding data "
    "--steps 1 --warmup 0";

TEST(LaunchCli, TwoProcessLaunchOnTheHostBackendIsAnInputError) {
  for (const char* launcher : {"auto", "env"}) {
    const Result r =
        run(kTorch2, std::string("--backend host --launcher ") + launcher + " " + kSmall);
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("--launcher " + std::string(launcher)), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("cuda backend"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--launcher threads"), std::string::npos) << r.err;  // the fix
  }
}

TEST(LaunchCli, EnvWithoutALauncherNamesTheVariablesItLookedFor) {
  const Result r = run("", std::string("--backend host --launcher env ") + kSmall);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--launcher env"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SLURM_PROCID"), std::string::npos) << r.err;
}

TEST(LaunchCli, BadLauncherTimeoutAndEnvironmentValuesAreInputErrors) {
  Result r = run("", std::string("--backend host --launcher mpi ") + kSmall);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--launcher 'mpi'"), std::string::npos) << r.err;
  r = run("", std::string("--backend host --timeout 0 ") + kSmall);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--timeout"), std::string::npos) << r.err;
  r = run("RANK=2 WORLD_SIZE=2 LOCAL_RANK=0", std::string("--backend host ") + kSmall);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("RANK"), std::string::npos) << r.err;
}

TEST(LaunchCli, ThreadsIgnoresTheEnvironmentAndAWorldOfOneStaysThreaded) {
  Result r =
      run(kTorch2, std::string("--backend host --launcher threads --world-size 2 ") + kSmall);
  EXPECT_EQ(r.rc, 0) << r.err;
  r = run("SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_LOCALID=0",
          std::string("--backend host --world-size 2 ") + kSmall);
  EXPECT_EQ(r.rc, 0) << r.err;
}

}  // namespace
