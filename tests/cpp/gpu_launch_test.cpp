// One process per GPU (--launcher env) against the threaded mode, on the GPUs of this machine
// (label gpu): shardaccum_bench started twice with a launcher's variables (as torchrun sets them)
// and a file rendezvous gives the same correctness, bytes and peaks as one process with a thread
// per GPU; a rank that never arrives or dies mid-run ends the others with a clear error within
// --timeout, never a hang. Times are not compared here (they belong to the benchmark runs).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "strategies/backend/cuda_backend.hpp"

namespace {

using Clock = std::chrono::steady_clock;

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "/shardaccum_launch_" + std::to_string(getpid()) + "_" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Starts shardaccum_bench with `env` added to the environment and stderr to `err`; returns its
/// pid.
pid_t spawn(const std::vector<std::string>& env, const std::vector<std::string>& args,
            const std::string& err) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
  const int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 2);
  const int null = open("/dev/null", O_WRONLY);
  dup2(null, 1);
  std::vector<char*> argv{const_cast<char*>(SHARDACCUM_BENCH_EXE)};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(SHARDACCUM_BENCH_EXE, argv.data());
  _exit(127);
}

/// Waits for `pid` up to `seconds` (then kills it and fails the test); returns the exit code.
int wait_for(pid_t pid, double seconds) {
  const auto t0 = Clock::now();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::duration<double>(Clock::now() - t0).count() > seconds) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "pid " << pid << " still running after " << seconds << " s: a hang";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<std::string> rank_env(int rank, int world) {
  return {"RANK=" + std::to_string(rank), "WORLD_SIZE=" + std::to_string(world),
          "LOCAL_RANK=" + std::to_string(rank), "NCCL_NVLS_ENABLE=0"};
}

std::map<std::string, nlohmann::json> cases_of(const std::string& path) {
  std::map<std::string, nlohmann::json> out;
  const auto doc = nlohmann::json::parse(slurp(path));
  for (const auto& b : doc.at("benchmarks")) out[b.at("name").get<std::string>()] = b;
  return out;
}

const std::vector<std::string> kMatrix = {"--model",
                                          "uniform:4x1M",
                                          "--schedule",
                                          "SSSS,nSnS,nnnS",
                                          "--mode",
                                          "flag,shape",
                                          "--binding",
                                          "data-free",
                                          "--offload",
                                          "all",
                                          "--steps",
                                          "2",
                                          "--ceilings",
                                          "off",
                                          "--benchmark_out_format=json"};

TEST(LaunchGpu, TwoProcessesMatchTheThreadedModeCaseByCase) {
  if (shardaccum::cuda_device_count() < 2) GTEST_SKIP() << "needs 2 GPUs (one process each)";
  const std::string threaded = temp("threaded.json"), procs = temp("procs.json"), rdv = temp("rdv");
  std::vector<std::string> args = kMatrix;
  args.push_back("--world-size=2");
  args.push_back("--launcher=threads");
  args.push_back("--benchmark_out=" + threaded);
  ASSERT_EQ(wait_for(spawn({"NCCL_NVLS_ENABLE=0"}, args, temp("threaded.err")), 240), 0)
      << slurp(temp("threaded.err"));

  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> a = kMatrix;
    a.insert(a.end(), {"--launcher=env", "--rendezvous=file:" + rdv, "--timeout=60",
                       "--benchmark_out=" + procs});
    pids.push_back(spawn(rank_env(r, 2), a, temp("rank" + std::to_string(r) + ".err")));
  }
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(wait_for(pids[r], 240), 0)
        << "rank " << r << ": " << slurp(temp("rank" + std::to_string(r) + ".err"));
  ASSERT_TRUE(std::filesystem::exists(procs)) << slurp(temp("rank0.err"));

  const auto a = cases_of(threaded), b = cases_of(procs);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.size(), 3u * 2 * 4);
  int wrong = 0;
  for (const auto& [name, x] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    const auto& y = b.at(name);
    ASSERT_FALSE(x.contains("error_occurred") && x["error_occurred"].get<bool>()) << name;
    ASSERT_FALSE(y.contains("error_occurred") && y["error_occurred"].get<bool>())
        << name << ": " << y.dump();
    for (const char* k : {"correct", "max_rel_err", "h2d_bytes", "d2h_bytes", "nccl_input_bytes",
                          "reduce_scatter_calls", "peak_device_bytes", "bytes_from_cupti"})
      EXPECT_EQ(x.at(k), y.at(k)) << name << " " << k;
    // The pinned peak depends on how many CPU adds are pending at once (timing): both within the
    // model's bound, which counts host_task_depth of them.
    for (const auto* run : {&x, &y})
      EXPECT_LE(run->at("peak_pinned_bytes").get<double>(),
                run->at("model_peak_pinned_bytes").get<double>())
          << name;
    wrong += x.at("correct").get<double>() == 0;
  }
  EXPECT_GT(wrong, 0)
      << "the positive controls (copy, shape with offload) must be caught in both modes";
  const auto ctx = nlohmann::json::parse(slurp(procs)).at("context");
  EXPECT_EQ(ctx.at("processes"), "2");
  EXPECT_NE(ctx.at("launcher").get<std::string>().find("torchrun"), std::string::npos);
}

TEST(LaunchGpu, ARankThatNeverArrivesEndsRankZeroWithinTheTimeout) {
  if (shardaccum::cuda_device_count() < 1) GTEST_SKIP() << "no CUDA device visible";
  std::vector<std::string> a = kMatrix;
  a.insert(a.end(), {"--launcher=env", "--rendezvous=file:" + temp("never"), "--timeout=5"});
  const auto t0 = Clock::now();
  const int rc = wait_for(spawn(rank_env(0, 2), a, temp("alone.err")), 60);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::string err = slurp(temp("alone.err"));
  EXPECT_EQ(rc, 1) << err;
  EXPECT_LT(s, 30) << err;
  EXPECT_NE(err.find("missing ranks: 1"), std::string::npos) << err;
}

TEST(LaunchGpu, ARankKilledMidRunEndsTheOtherWithAClearErrorWithinTheTimeout) {
  if (shardaccum::cuda_device_count() < 2) GTEST_SKIP() << "needs 2 GPUs (one process each)";
  // Long enough that rank 1 dies inside the measured steps.
  const std::vector<std::string> a = {"--model",        "uniform:8x64M",
                                      "--schedule",     "SSSS",
                                      "--preset",       "fsdp2",
                                      "--steps",        "200",
                                      "--warmup",       "0",
                                      "--ceilings",     "off",
                                      "--launcher=env", "--rendezvous=file:" + temp("kill"),
                                      "--timeout=10"};
  const pid_t r0 = spawn(rank_env(0, 2), a, temp("k0.err"));
  const pid_t r1 = spawn(rank_env(1, 2), a, temp("k1.err"));
  // Wait until rank 0 is inside the case (the run has passed the rendezvous and NCCL init).
  std::this_thread::sleep_for(std::chrono::seconds(8));
  kill(r1, SIGKILL);
  const auto t0 = Clock::now();
  const int rc = wait_for(r0, 90);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  waitpid(r1, nullptr, 0);
  const std::string err = slurp(temp("k0.err"));
  EXPECT_NE(rc, 0) << err;
  // --timeout 10: a wait gives up after 10 s; the watchdog ends a call stuck elsewhere after 25 s.
  EXPECT_LT(s, 45) << "rank 0 took " << s << " s to give up; " << err;
  EXPECT_TRUE(err.find("timed out") != std::string::npos || err.find("NCCL") != std::string::npos ||
              err.find("nccl") != std::string::npos)
      << err;
  std::printf("rank 0 ended %.1f s after rank 1 was killed, exit %d; its error:\n%s\n", s, rc,
              err.substr(err.size() > 1500 ? err.size() - 1500 : 0).c_str());
}

}  // namespace
