#pragma once
// The oracle's judgement (docs/DESIGN.md §5): the error bound of a case from its roundings, whether
// the bound can tell a lost micro-batch from rounding, and the verdict over a rank's shards and
// over the checked steps of a case. The generator and the per-element comparison it judges are
// common/gradient_gen.hpp and common/shard_check.hpp; the step driver collects the sums.
#include <cstdint>
#include <vector>

#include "common/dtype.hpp"
#include "common/gradient_gen.hpp"
#include "common/shard_check.hpp"
#include "strategies/division/division_steps.hpp"

namespace shardaccum {

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
/// K*N values stays exact: r*K*N <= 256. 1 when even that cannot hold. A bf16 grad dtype holds
/// sums only when it is the reduce dtype too (bf16-fp32-fp32 sums in fp32: the range stays 4).
uint8_t dyadic_range(const DTypeTriple& t, int k, int world_size);

/// Whether every sum of the case is exact (dyadic values within dyadic_range's limit).
bool sums_exact(const DTypeTriple& t, GenMode gen, int k, int world_size);

/// Error bound for the relative error, from the number of roundings (docs/DESIGN.md §5). Exact sums
/// with the division `end` (the default `d`) leave one rounding: the division by N in the accum
/// dtype. Otherwise each of the K*N-1 additions in the reduce dtype and the K-1 additions in the
/// accum dtype may round (Higham's gamma_n bound): (K*N)*u_r + K*u_a + u_a. Both with a factor 2
/// of headroom. The other divisions add, per sync (counted K times), each pass by a factor that
/// is not a power of two: pre u_r + u_32 (1/factor is an fp32; the reduce-scatter's input, in the
/// reduce dtype, is divided) and the N-1 adds of the quotients (N-1)*u_r; avg N*u_r + u_32 (NCCL
/// premultiplies by 1/N, then sums); post u_r + u_32; and, once a quotient is inexact, the K adds
/// of the saved shard K*u_a. With exact sums and only power-of-two factors (world 1, 2, 4, 8)
/// nothing rounds: the bound stays `end`'s.
double error_bound(const DTypeTriple& t, GenMode gen, int k, int world_size,
                   const DivisionSteps& d = kDivideAtEnd);

/// Whether the oracle can tell a lost micro-batch from rounding. With random data one lost of K
/// gives about sqrt(1/K); at a witness element (gradient_gen.hpp) of a tiny unit exactly 1/K in
/// dyadic mode. So a case resolves when bound < 0.5 * sqrt(1/K), and with exact sums also
/// bound < 0.25 / K (fp32 accumulation always; a bf16 accumulator, bound 2^-7, for K < 32).
bool oracle_resolves(const DTypeTriple& t, GenMode gen, int k, int world_size,
                     const DivisionSteps& d = kDivideAtEnd);

/// The value error_bound must stay below for oracle_resolves: 0.25 / K with exact sums (the
/// smaller of the two there), else 0.5 * sqrt(1/K).
double oracle_threshold(const DTypeTriple& t, GenMode gen, int k, int world_size);

/// `correct`: the error within the bound (the whole and every unit), nothing NaN or Inf, padding
/// exactly zero.
bool is_correct(const OracleResult& r, double bound);

/// The judgement of a case (docs/DESIGN.md §5), the one place it is made: built from the case's
/// dtypes, generator, K and world size (which fix the bound), fed every checked step's per-rank
/// results. Correct only when at least one step was checked and every rank of every checked step
/// is correct (is_correct); max_rel_err is the max over them (infinity for a NaN or Inf error).
class CaseVerdict {
 public:
  CaseVerdict(const DTypeTriple& dtypes, GenMode gen, int k, int world_size,
              const DivisionSteps& d = kDivideAtEnd)
      : bound_(error_bound(dtypes, gen, k, world_size, d)) {}
  /// One checked step: the OracleResult of every rank (an empty vector is ignored).
  void add(const std::vector<OracleResult>& per_rank);
  bool correct() const { return checked_steps_ > 0 && all_correct_; }
  double max_rel_err() const { return max_rel_err_; }
  double bound() const { return bound_; }
  int checked_steps() const { return checked_steps_; }

 private:
  double bound_;
  int checked_steps_ = 0;
  bool all_correct_ = true;
  double max_rel_err_ = 0;
};

}  // namespace shardaccum
