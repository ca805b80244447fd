#pragma once
// One optimizer step on one rank (docs/DESIGN.md §2): for each micro-batch, backward over the units
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

/// The oracle's verdict over a rank's shards of every unit (docs/DESIGN.md §5).
struct OracleResult {
  double err_norm2 = 0, ref_norm2 = 0;
  uint64_t nonfinite = 0, bad_padding = 0;
  /// The largest relative error of one unit's shard: a loss in one unit of many is not diluted
  /// by the others' norms (each unit must be within the bound on its own).
  double max_unit_rel_err = 0;
  /// Norm-wise relative error ||out - ref|| / ||ref|| (or ||out|| when ref is 0).
  double rel_err() const;
  void merge(const ShardCheck& c);
  void merge(const OracleResult& o);
};

/// The dyadic generator's largest |k| (values k/8) for a case: 4, or less when a bf16 holds a sum
/// (8 significand bits: a multiple of 1/8 is exact up to 256/8), so that every partial sum of the
/// K*N values stays exact: r*K*N <= 256. 1 when even that cannot hold.
uint8_t dyadic_range(const DTypeTriple& t, int k, int world_size);

/// Whether every sum of the case is exact (dyadic values within dyadic_range's limit).
bool sums_exact(const DTypeTriple& t, GenMode gen, int k, int world_size);

/// Error bound for the relative error, from the number of roundings (docs/DESIGN.md §5). Exact sums
/// leave one rounding: the division by N in the accum dtype. Otherwise each of the K*N-1
/// additions in the reduce dtype and the K-1 additions in the accum dtype may round (Higham's
/// gamma_n bound): (K*N)*u_r + K*u_a + u_a. Both with a factor 2 of headroom.
double error_bound(const DTypeTriple& t, GenMode gen, int k, int world_size);

/// Whether the oracle can tell a lost micro-batch from rounding. With random data one lost of K
/// gives about sqrt(1/K); at a witness element (gradient_gen.hpp) of a tiny unit exactly 1/K in
/// dyadic mode. So a case resolves when bound < 0.5 * sqrt(1/K), and with exact sums also
/// bound < 0.25 / K (fp32 accumulation always; a bf16 accumulator, bound 2^-7, for K < 32).
bool oracle_resolves(const DTypeTriple& t, GenMode gen, int k, int world_size);

/// `correct`: the error within the bound (the whole and every unit), nothing NaN or Inf, padding
/// exactly zero.
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
  uint8_t dyadic_max_;         // the generator's value range for this case (dyadic_range)
};

}  // namespace shardaccum
