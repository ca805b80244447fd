#pragma once
// The progress line of a run: "[case 3/8, rep 2/5] done|FAILED CASE (elapsed, about N s left)" on
// stderr as each repetition of a case ends, and the tally main reads for its exit status. Owned by
// main, passed to the cases.
#include <chrono>
#include <cstddef>
#include <map>
#include <string>

namespace shardaccum {

/// Case runs (repetitions) finished so far, and how many of them ended with an error.
struct RunTally {
  size_t done = 0, failed = 0;
};

class Progress {
 public:
  /// Under a multi-process launch only rank 0 prints progress; the other ranks print their
  /// failures, prefixed with their rank (where they are caught).
  explicit Progress(int rank = 0) : rank_(rank) {}

  /// The cases that will run (after the filter) and the repetitions of each
  /// (--benchmark_repetitions, at least 1): the line counts both down.
  void set_total(size_t cases, size_t repetitions = 1);
  /// One repetition of case `name` ended (`ok`: without an error); prints the line on rank 0. A
  /// case is numbered when its first repetition ends, its repetitions counted by name (random
  /// interleaving may alternate cases). Not thread-safe: called by Google Benchmark's thread.
  void case_done(const std::string& name, bool ok);
  /// The line case_done prints, without its timing: "[case 3/8, rep 2/5] done NAME" (no ", rep"
  /// part with one repetition).
  std::string line(const std::string& name, bool ok) const;

  RunTally tally() const { return {done_, failed_}; }
  int rank() const { return rank_; }

 private:
  size_t cases_ = 0, reps_ = 1, done_ = 0, failed_ = 0;
  std::map<std::string, std::pair<size_t, size_t>> seen_;  // name -> (case number, repetitions)
  int rank_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace shardaccum
