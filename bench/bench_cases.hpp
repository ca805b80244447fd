#pragma once
// Registers the case matrix as Google Benchmark cases (manual time, one iteration per measured
// step) and writes their counters: measured per step beside the model's prediction (docs/DESIGN.md
// §7).
#include <map>
#include <string>
#include <vector>

#include "bench/backend_select.hpp"
#include "bench/case_matrix.hpp"
#include "bench/case_predictions.hpp"
#include "bench/case_runner.hpp"
#include "bench/counters.hpp"
#include "bench/memory_fit.hpp"
#include "bench/progress.hpp"
#include "profiling/trace.hpp"
#include "strategies/model.hpp"

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
  /// The model's prediction of every case (predict_cases): computed once, compared with the
  /// measured counters and the device side of the fit.
  CasePredictions models;
  /// --trace: the run's recorder (owned by main), or nullptr.
  trace::TraceRecorder* recorder = nullptr;
};

/// Registers every case; the cases run when benchmark::RunSpecifiedBenchmarks is called. Progress
/// and an estimate of the time left go to stderr through `progress` (owned by the caller, which
/// must outlive the run) as each case ends. Throws std::out_of_range for a case without a
/// prediction in settings.models.
void register_cases(const std::vector<CaseSpec>& cases, const SuiteSettings& settings,
                    Progress& progress);

}  // namespace shardaccum
