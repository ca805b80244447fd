#pragma once
// The counters a case writes into Google Benchmark's JSON (docs/DESIGN.md §7), from one table:
// each measured figure with its unit, its model counterpart and the ceiling it is compared with.
// scripts/shardaccum_report/counters.py reads the same names.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "common/ceilings.hpp"
#include "common/step_metrics.hpp"
#include "strategies/model.hpp"
#include "strategies/oracle.hpp"

namespace shardaccum {

/// What the measured steps of a case added up: `sum` over steps of the max over ranks (a step
/// ends when its slowest rank does), `rank_sum[r]` over steps of rank r's own figures. Peaks are
/// the max over steps (StepMetrics::fold).
struct CaseTotals {
  StepMetrics sum;
  std::vector<StepMetrics> rank_sum;
  int steps = 0;  // measured steps added so far
  // The fastest and slowest step (max over ranks), ms: the spread the report draws (0 before any).
  double step_min_ms = 0;
  double step_max_ms = 0;

  explicit CaseTotals(int world_size) : rank_sum(world_size) {}
  /// Adds one step: `max` over ranks and each rank's figures (per_rank, at most world_size).
  void add(const StepMetrics& max, const std::vector<StepMetrics>& per_rank);
  /// The per-step mean of a sum, 0 before any step.
  double per_step(double v) const { return steps ? v / steps : 0; }
};

/// One measured counter: a sum over steps that Google Benchmark divides by the iterations (one per
/// measured step) into the per-step mean (kAvgIterations), or a peak written as it is.
struct CounterDef {
  enum Kind { per_step, peak };
  const char* name;  // the JSON key
  const char* unit;  // "ms", "bytes", "calls"
  Kind kind;
  double (*of)(const StepMetrics& m);
  bool cupti_only = false;      // written only when the bytes came from CUPTI
  const char* model = nullptr;  // the model's counterpart, written beside it
  uint64_t Prediction::*model_of = nullptr;
};

/// A phase's rate against its ceiling measured in this run: NAME_frac_ceiling = rate / ceiling,
/// written only where the ceiling is > 0 (the cuda backend) and the rate is known.
struct CeilingDef {
  const char* name;         // e.g. "h2d_frac_ceiling"
  const char* ceiling_key;  // the same figure's key in the JSON context, e.g. "ceiling_h2d_gbps"
  double Ceilings::*ceiling;
  /// The phase's GB/s per step; false where it is not known (the phase did not run).
  bool (*gbps)(const CaseTotals& t, int world_size, double& out);
};

/// The tables, in the order the design lists the counters (the JSON sorts them by name).
const std::vector<CounterDef>& counter_table();
const std::vector<CeilingDef>& ceiling_table();

/// nccl-tests' bus bandwidth of a reduce-scatter (doc/PERFORMANCE.md): algbw = input bytes per
/// rank / time, busbw = algbw * (N-1)/N. `bytes` per rank, `ms` milliseconds; returns GB/s (1e9).
double reduce_scatter_busbw_gbps(double bytes, double ms, int n);

/// The CPU add against the host memory it shared (issue 17's "CPU add >= 80%"): its bytes over the
/// bytes the two host add ceilings allow in its time, the host add ceiling (GB/s) for the time it
/// ran alone and the host add during D2H ceiling for cpu_add_beside_d2h_ms: cpu_add_bytes /
/// ((add_ms - beside_ms) * host_add_gbps + beside_ms * host_add_during_d2h_gbps) (x 1e6, GB/s x
/// ms in bytes). `m` a sum over steps or one step; 0 where a ceiling, the add's time or its bytes
/// are 0 (the host backend measures no ceiling). Both ceilings: bench's
/// CudaWorld::measure_ceilings.
double cpu_add_frac_shared_ceiling(const StepMetrics& m, const Ceilings& ceilings);

/// Writes every counter of a case: the tables' counters and model counterparts, nccl_busbw_gbps,
/// step_ms_min/step_ms_max (the fastest and slowest measured step, plain: the spread over steps),
/// the per-rank step times (and peaks where ranks differ), the oracle's verdict and the ceiling
/// fractions against `ceilings` (all 0 on the host backend: no fraction is written), among them
/// cpu_add_frac_shared_ceiling.
void write_counters(benchmark::UserCounters& c, const CaseTotals& t, const Prediction& model,
                    const Ceilings& ceilings, const CaseVerdict& verdict, int world_size);

}  // namespace shardaccum
