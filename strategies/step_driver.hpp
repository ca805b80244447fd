#pragma once
// One optimizer step on one rank (DESIGN.md §2): for each micro-batch, backward over the units
// last to first; at a sync micro-batch reduce-scatter, free the unsharded gradient, and let the
// strategy accumulate; then finalize every unit, check it against the oracle, release it.
#include <cstdint>
#include <string>
#include <vector>

#include "strategies/dtype.hpp"
#include "strategies/gradient_gen.hpp"
#include "strategies/layout.hpp"
#include "strategies/schedule.hpp"
#include "strategies/strategy.hpp"

namespace shardaccum {

/// Everything that defines a case except the backend.
struct CasePlan {
  Layout layout;
  Schedule schedule;
  StrategySpec strategy;
  DTypeTriple dtypes;
  GenMode gen = GenMode::dyadic;
  uint64_t seed = 0x5a5a;
  std::string name;  // the benchmark case name, put on the step's NVTX range
};

/// The oracle's verdict over a rank's shards of every unit (DESIGN.md §5).
struct OracleResult {
  double err_norm2 = 0, ref_norm2 = 0;
  uint64_t nonfinite = 0, bad_padding = 0;
  /// Norm-wise relative error ||out - ref|| / ||ref|| (or ||out|| when ref is 0).
  double rel_err() const;
  void merge(const ShardCheck& c);
  void merge(const OracleResult& o);
};

/// Error bound for the relative error, from the number of roundings (DESIGN.md §5). Dyadic values
/// sum exactly in fp32, and in bf16 when K*N <= 63, leaving one rounding: the division by N in the
/// accum dtype. Otherwise each of the K*N-1 additions in the reduce dtype and the K-1 additions in
/// the accum dtype may round (Higham's gamma_n bound): (K*N)*u_r + K*u_a + u_a.
double error_bound(const DTypeTriple& t, GenMode gen, int k, int world_size);

/// `correct`: the error within the bound, nothing NaN or Inf, padding exactly zero.
bool is_correct(const OracleResult& r, double bound);

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
};

}  // namespace shardaccum
