#pragma once
// Runs shardaccum_bench (SHARDACCUM_BENCH_EXE) as a child process for the command-line tests:
// `env` (VAR=value ... for env(1), may be empty) and `args` are pasted into a shell command;
// stdout is discarded, stderr and the exit code are returned.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace shardaccum::testing {

struct CliResult {
  int rc = -1;      // the exit code; -1 when killed by a signal (a crash)
  std::string err;  // everything written to stderr
};

inline CliResult run_bench_cli(const std::string& env, const std::string& args) {
  const std::string err = ::testing::TempDir() + "/shardaccum_cli_err_" + std::to_string(getpid());
  // env -u: a launcher variable of the machine running the tests must not leak in.
  const std::string clean =
      "env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u SLURM_PROCID -u SLURM_NTASKS -u SLURM_LOCALID "
      "-u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_LOCAL_RANK ";
  const std::string cmd =
      clean + env + " '" + SHARDACCUM_BENCH_EXE + "' " + args + " >/dev/null 2>'" + err + "'";
  const int rc = std::system(cmd.c_str());
  CliResult r;
  std::ifstream in(err);
  r.err.assign(std::istreambuf_iterator<char>(in), {});
  std::filesystem::remove(err);
  r.rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return r;
}

/// shardaccum_bench's stdout and exit code (stderr discarded), for commands that print a document.
struct StdoutResult {
  int rc = -1;      // the exit code; -1 when killed by a signal or not started
  std::string out;  // everything written to stdout
};

inline StdoutResult run_bench_stdout(const std::string& args) {
  const std::string cmd = std::string("'") + SHARDACCUM_BENCH_EXE + "' " + args + " 2>/dev/null";
  StdoutResult c;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return c;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) c.out.append(buf, n);
  const int st = pclose(p);
  c.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return c;
}

}  // namespace shardaccum::testing
