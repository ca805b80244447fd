#pragma once
// One optimizer step on one rank (docs/DESIGN.md §2): for each micro-batch, backward over the units
// last to first; at a sync micro-batch reduce-scatter, free the unsharded gradient, and let the
// strategy accumulate; then finalize every unit, check it against the oracle, release it.
#include <cstdint>
#include <string>
#include <vector>

#include "strategies/case_plan.hpp"
#include "strategies/oracle.hpp"
#include "strategies/strategy.hpp"

namespace shardaccum {

/// Runs steps of one case on one rank. Not thread-safe: one per rank thread.
class StepDriver {
 public:
  StepDriver(RankBackend& be, const CasePlan& plan);
  /// Runs step `step`; when `check` the finished shards are compared with the oracle before they
  /// are released. Throws AccumulationError (this rank failed) or PeerFailure (another did).
  StepMetrics run_step(uint32_t step, bool check, OracleResult* oracle);

 private:
  void backward(UnitGrad& u, uint32_t step, int mb, MicroBatchMode mode);
  void sync(UnitGrad& u, int mb);
  void agree_before_collective();

  RankBackend& be_;
  const CasePlan& plan_;
  AccumulationStrategy strategy_;
  std::vector<UnitGrad> units_;
  std::string pending_error_;  // this rank's error, held until the ranks agree before a collective
  uint8_t dyadic_max_;         // the generator's value range for this case (dyadic_range)
  Buffer workspace_;           // --backward gemm: X, dY, dX and cuBLAS's workspace, once per case
};

}  // namespace shardaccum
