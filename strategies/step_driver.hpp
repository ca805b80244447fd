#pragma once
// One optimizer step on one rank (docs/DESIGN.md §2): for each micro-batch, backward over the units
// last to first; at a sync micro-batch reduce-scatter, hold the unsharded gradient until the
// compute stream waits for that reduce-scatter (the strategy's lookahead; with a copy-in the
// reduce-scatter's own input instead, the gradient freed after the copy), and let the strategy
// accumulate on the comm stream; then finalize every unit, check it against the oracle, release it.
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "strategies/case_plan.hpp"
#include "strategies/oracle.hpp"
#include "strategies/param_traffic.hpp"
#include "strategies/reduce_buckets.hpp"
#include "strategies/strategy.hpp"

namespace shardaccum {

/// Runs steps of one case on one rank. Not thread-safe: one per rank thread.
class StepDriver {
 public:
  StepDriver(RankBackend& be, const CasePlan& plan);
  /// Runs step `step`; when `check` the finished shards are compared with the oracle before they
  /// are released. Errors are agreed (RankBackend::any_rank) once at the start of each micro-batch
  /// with syncs and once at the end of the step; a rank with a pending error keeps joining the
  /// micro-batch's reduce-scatters meanwhile. Throws AccumulationError (this rank failed; at once
  /// when it cannot even allocate scratch to join a collective) or PeerFailure (another did).
  StepMetrics run_step(uint32_t step, bool check, OracleResult* oracle);

 private:
  /// A unit's unsharded gradient whose reduce-scatter the compute stream has not waited for yet.
  struct InFlight {
    Buffer grad;
    Event done;  // recorded on the comm stream right after the reduce-scatter
  };

  void backward(UnitGrad& u, uint32_t step, int mb, MicroBatchMode mode);
  /// The GEMMs (--backward gemm) and the generator into u.grad (grad dtype).
  void backward_pass(UnitGrad& u, uint32_t step, int mb, bool accumulate);
  /// u's reduce-scatter and accumulation; `bucket_input` (a flush's interleave, a view): what the
  /// reduce-scatter reads instead of u.grad or a copy-in.
  void sync(UnitGrad& u, int mb, Buffer* bucket_input = nullptr);
  /// Lookahead::buckets: u joins the open bucket (after flushing it when u would overflow it),
  /// its gradient copied into the bucket buffer when there is one and it fits (ReduceBuckets).
  void sync_in_bucket(UnitGrad& u, int mb);
  /// Lookahead::buckets: after the host's wait for an old flush, the open bucket's gradients
  /// interleaved into one buffer (with a bucket buffer) and their syncs issued.
  void flush_bucket(int mb);
  /// True when u's reduce-scatter from a flush's interleave writes in place into it (DeepSpeed's
  /// reduce_scatter_coalesced), false when the offload keeps the output past the flush.
  bool writes_into_interleave(const UnitGrad& u) const;
  /// A sync without a reduce-scatter (CopyIn::in_place: FSDP1's NO_SHARD at world size 1): the
  /// division's passes on the gradient itself, then, with offload, the gradient goes where a
  /// reduce-scatter's output would; without, it stays (cast to the accum dtype, as FSDP1's
  /// _cast_grad_to_param_dtype) for the next backward to add into.
  void sync_in_place(UnitGrad& u, int mb);
  /// `grad` replaced by its conversion to the accum dtype on the comm stream (FSDP1's
  /// _cast_grad_to_param_dtype), when it is in another dtype.
  void hold_in_accum(Buffer& grad);
  /// With a pending error: scratch for a missing input (`in` with a copy-in, else u.grad) or
  /// output so that this rank still joins the collective; throws AccumulationError at once when
  /// even that allocation fails.
  void join_anyway(UnitGrad& u, Buffer& in, Buffer& out);
  /// The compute stream waits for the oldest reduce-scatter in flight; its gradient is freed.
  void retire_oldest();
  /// The compute stream waits for all the comm stream's work; every held gradient is freed.
  void retire_all();
  void agree();

  RankBackend& be_;
  const CasePlan& plan_;
  AccumulationStrategy strategy_;
  std::vector<UnitGrad> units_;
  std::deque<InFlight> in_flight_;  // oldest first; lookahead 0: empty, 1: one, between syncs
  ReduceBuckets buckets_;           // Lookahead::buckets: the open bucket, earlier flushes' events
  std::string pending_error_;       // this rank's error, held until the ranks agree
  uint8_t dyadic_max_;              // the generator's value range for this case (dyadic_range)
  ParamTraffic params_;   // --param-traffic on: the parameters' H2D before forward and backward
  Buffer workspace_;      // --backward gemm: X, dY, dX and cuBLAS's workspace, once per case
  Buffer bucket_buffer_;  // copies_into_bucket: DeepSpeed's persistent bucket, once per case
};

}  // namespace shardaccum
