// shardaccum_bench under a launcher's environment, on a machine without GPUs: one process per GPU
// needs the cuda backend, so the suite must say so (naming --launcher) before any work, and must
// keep running threaded when asked to or when the launch is a world of one.
#include <gtest/gtest.h>
#include <unistd.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct Result {
  int rc = -1;
  std::string err;
};

/// Runs the bench with `env` (VAR=value ...) prepended through env(1); returns exit code and stderr.
Result run(const std::string& env, const std::string& args) {
  const std::string err = ::testing::TempDir() + "/shardaccum_launch_cli_" + std::to_string(getpid());
  // env -u: a launcher variable of the machine running the tests must not leak in.
  const std::string clean =
      "env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u SLURM_PROCID -u SLURM_NTASKS -u SLURM_LOCALID "
      "-u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_LOCAL_RANK ";
  const std::string cmd = clean + env + " '" + SHARDACCUM_BENCH_EXE + "' " + args + " >/dev/null 2>'" + err + "'";
  const int rc = std::system(cmd.c_str());
  Result r;
  std::ifstream in(err);
  r.err.assign(std::istreambuf_iterator<char>(in), {});
  std::filesystem::remove(err);
  r.rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return r;
}

const char* kTorch2 = "RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999";
const char* kSmall = "--model uniform:2x1000 --schedule SSSS --offload none --mode flag --binding data "
                     "--steps 1 --warmup 0";

TEST(LaunchCli, TwoProcessLaunchOnTheHostBackendIsAnInputError) {
  for (const char* launcher : {"auto", "env"}) {
    const Result r = run(kTorch2, std::string("--backend host --launcher ") + launcher + " " + kSmall);
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
  Result r = run(kTorch2, std::string("--backend host --launcher threads --world-size 2 ") + kSmall);
  EXPECT_EQ(r.rc, 0) << r.err;
  r = run("SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_LOCALID=0", std::string("--backend host --world-size 2 ") + kSmall);
  EXPECT_EQ(r.rc, 0) << r.err;
}

}  // namespace
