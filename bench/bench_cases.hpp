#pragma once
// Registers the case matrix as Google Benchmark cases (manual time, one iteration per measured
// step) and writes their counters: measured per step beside the model's prediction (docs/DESIGN.md §7).
#include <map>
#include <string>
#include <vector>

#include "bench/backend_select.hpp"
#include "bench/case_matrix.hpp"
#include "bench/memory_fit.hpp"
#include "bench/case_runner.hpp"

namespace shardaccum {

struct SuiteSettings {
  int warmup = 1;
  int steps = 3;
  BackendPool* pool = nullptr;
  /// Cases that do not fit the host by the model (name -> message): skipped before any GPU work.
  std::map<std::string, std::string> skip;
  /// The host side of the budget; each case's device side is read once its world has started.
  MemoryBudget budget;
  CheckMode check = CheckMode::every;  // --check
};

/// Registers every case; the cases run when benchmark::RunSpecifiedBenchmarks is called. Progress
/// and an estimate of the time left go to stderr as each case ends.
void register_cases(const std::vector<CaseSpec>& cases, const SuiteSettings& settings);

/// The number of case runs the progress line counts down (cases x repetitions after the filter).
void set_progress_total(size_t total);

/// Under a multi-process launch only rank 0 prints progress; the other ranks print their failures,
/// prefixed with their rank.
void set_progress_rank(int rank);

/// Case runs finished so far, and how many of them ended with an error.
struct RunTally {
  size_t done = 0, failed = 0;
};
RunTally run_tally();

/// nccl-tests' bus bandwidth of a reduce-scatter (doc/PERFORMANCE.md): algbw = input bytes per
/// rank / time, busbw = algbw * (N-1)/N. `bytes` per rank, `ms` milliseconds; returns GB/s (1e9).
double reduce_scatter_busbw_gbps(double bytes, double ms, int world_size);

}  // namespace shardaccum
