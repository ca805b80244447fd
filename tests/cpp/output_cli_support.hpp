#pragma once
// Helpers for the --benchmark_out tests (tests/cpp/test_output_*_cli.cpp): a shell line around
// shardaccum_bench (for `ulimit -f`, `trap '' HUP`, a background run), file reading, and a flock
// held by the test itself.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace shardaccum::testing {

/// The bench command line, with the launcher variables of the machine running the tests unset.
inline std::string bench_command(const std::string& args) {
  return "env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u SLURM_PROCID -u SLURM_NTASKS -u SLURM_LOCALID "
         "-u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_LOCAL_RANK '" +
         std::string(SHARDACCUM_BENCH_EXE) + "' " + args;
}

/// Runs `script` with /bin/sh; returns its exit status, -1 when it was killed by a signal.
inline int run_shell(const std::string& script) {
  const int rc = std::system(("/bin/sh -c '" +
                              [&] {
                                std::string q;
                                for (char c : script)
                                  q += c == '\'' ? std::string("'\\''") : std::string(1, c);
                                return q;
                              }() +
                              "'")
                                 .c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/// Runs `command` (stdout to /dev/null) with writes past `blocks` × 512 bytes failing (`ulimit
/// -f`), SIGXFSZ ignored as on a full disk when `ignore_xfsz`. Its stderr reaches `err` through a
/// pipe to a `cat` outside the limit, so that a long context banner is never cut short with the
/// results. Returns the command's exit status, -1 when none was written (the shell itself failed).
inline int run_with_file_limit(const std::string& command, int blocks, const std::string& err,
                               bool ignore_xfsz = true) {
  const std::string rc_file = err + ".rc";
  std::filesystem::remove(rc_file);
  run_shell("( " + std::string(ignore_xfsz ? "trap '' XFSZ; " : "") + "ulimit -f " +
            std::to_string(blocks) + "; " + command + " >/dev/null; echo $? >" + rc_file +
            " ) 2>&1 | cat >" + err);
  std::ifstream in(rc_file);
  int rc = -1;
  in >> rc;
  return in ? rc : -1;
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// Waits (up to `seconds`) until `path` contains `needle`; true when it did.
inline bool wait_for_text(const std::string& path, const std::string& needle, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (slurp(path).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

/// A test's own temporary directory, removed afterwards.
class OutputDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/shardaccum_out_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

}  // namespace shardaccum::testing
