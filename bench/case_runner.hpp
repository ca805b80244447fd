#pragma once
// Runs one case on a backend, one step at a time, every rank at once.
#include <memory>
#include <string>
#include <vector>

#include "profiling/trace.hpp"
#include "strategies/model.hpp"
#include "strategies/oracle.hpp"
#include "strategies/step_driver.hpp"

namespace shardaccum {

/// One step as the case reports it: times are the max over ranks (a step ends when its slowest
/// rank does), bytes and peaks the max over ranks (ranks move the same bytes by construction).
struct StepReport {
  StepMetrics max;
  std::vector<StepMetrics> per_rank;
  std::vector<OracleResult> oracle;  // per rank; filled only for a checked step
};

/// --check: which measured steps the oracle checks. `every` (default) catches a strategy wrong on
/// one step only; `last` checks only the last measured step (cheaper for long runs).
enum class CheckMode { every, last };

/// Parses "every" / "last"; throws std::invalid_argument naming --check otherwise.
CheckMode parse_check_mode(const std::string& s);
const char* check_mode_name(CheckMode m);

/// Whether measured step `index` (0-based, of `steps`) is checked under `mode`.
bool checks_step(CheckMode mode, int index, int steps);

class CaseRunner {
 public:
  /// Builds one StepDriver per rank on `backend` (which must have plan.world_size ranks).
  /// `recorder` (--trace, owned by the caller; nullptr: none) records every rank thread's steps
  /// that it records_step().
  CaseRunner(Backend& backend, CasePlan plan, trace::TraceRecorder* recorder = nullptr);
  ~CaseRunner();
  CaseRunner(const CaseRunner&) = delete;  // its drivers refer to its plan
  CaseRunner& operator=(const CaseRunner&) = delete;
  /// Runs optimizer step `step` on every rank; checks the result against the oracle when `check`.
  /// Throws the failing rank's error (AccumulationError, BackendError) when a rank fails. Under a
  /// multi-process launch this process runs its own ranks and gathers the others' figures, so
  /// every process returns the same report.
  StepReport step(uint32_t step, bool check);
  const CasePlan& plan() const { return plan_; }

 private:
  /// Under a multi-process launch, fills the other processes' ranks into rep (Backend::allgather).
  void gather_other_processes(StepReport& rep);

  Backend& backend_;
  CasePlan plan_;
  trace::TraceRecorder* recorder_;
  std::vector<std::unique_ptr<StepDriver>> drivers_;
};

}  // namespace shardaccum
