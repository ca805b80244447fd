#pragma once
// The progress line of a run: "[done/total] done|FAILED CASE (elapsed, about N s left)" on stderr
// as each case ends, and the tally main reads for its exit status. Owned by main, passed to the
// cases.
#include <chrono>
#include <cstddef>
#include <string>

namespace shardaccum {

/// Case runs finished so far, and how many of them ended with an error.
struct RunTally {
  size_t done = 0, failed = 0;
};

class Progress {
 public:
  /// Under a multi-process launch only rank 0 prints progress; the other ranks print their
  /// failures, prefixed with their rank (where they are caught).
  explicit Progress(int rank = 0) : rank_(rank) {}

  /// The number of case runs the line counts down (cases x repetitions after the filter).
  void set_total(size_t total) { total_ = total; }
  /// One case run ended (`ok`: without an error); prints the line on rank 0. Not thread-safe:
  /// called by Google Benchmark's thread, one case at a time.
  void case_done(const std::string& name, bool ok);

  RunTally tally() const { return {done_, failed_}; }
  int rank() const { return rank_; }

 private:
  size_t total_ = 0, done_ = 0, failed_ = 0;
  int rank_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace shardaccum
