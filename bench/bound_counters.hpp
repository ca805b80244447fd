#pragma once
// The bound counters (docs/DESIGN.md §6 "Bound", §7): how far a case's step is from the least time
// its own work can take at the ceilings of the same run.
#include <benchmark/benchmark.h>

#include <string>

#include "bench/counters.hpp"
#include "common/ceilings.hpp"
#include "strategies/bound.hpp"
#include "strategies/case_plan.hpp"

namespace shardaccum {

/// The fastest rate, GB/s, at which the case's host work ran on any rank: cpu_add_bytes over the
/// cpu_add phase's busy ms of that rank's sums, or the host division's bytes over the finalize
/// phase's (0 without either). On one H200 the host add ceiling read 87 GB/s in a run whose
/// division pass then ran at 111-121 GB/s (reports/h200-limit-1203).
double host_add_seen_gbps(const CaseTotals& t);

/// The fastest rate, GB/s, at which the case's CPU adds and copies went through host memory on any
/// rank, each a rate the case reached at least (0 without CPU adds): cpu_add + H2D (gradient and
/// parameters) + D2H bytes over the step's ms, or those bytes less the `head_d2h_bytes` that land
/// before the first CPU add over the step's ms less `head_ms` (host_head_ms: none of them moves
/// before it), whichever is higher. With the first alone, a ceiling read low was raised too little
/// for the critical path (the head, then those bytes at this rate), which came out above the step:
/// one H200, `uniform:16x64M` cpu-add `SSSS`, 577 ms against a 538 ms step, 78 ms of it the head.
double host_memory_seen_gbps(const CaseTotals& t, uint64_t head_d2h_bytes = 0, double head_ms = 0);

/// The fastest rate, GB/s, at which the case's CPU adds ran beside its D2Hs on any rank, as the
/// bound's time-shared add counts them (host_after_head_ms): the rate at which `w.host` at
/// `c.host_add_gbps` plus (1 - rate / host_add) ms per ms of the D2Hs after the head at
/// `c.d2h_gbps` take exactly that rank's step less `head_ms` (host_head_ms). A rate the case
/// reached at least, so that the critical path never comes out above its step on a
/// host_add_during_d2h read low; host_add or more where the adds alone fit in the step. 0 without
/// CPU adds, D2Hs after the head, or those two ceilings.
double host_add_during_d2h_seen_gbps(const CaseTotals& t, const BoundWork& w, const Ceilings& c,
                                     double head_ms);

/// Writes `bound_ms` (case_bound of bound_work(plan, world_size) at bound_ceilings(`ceilings`,
/// host_add_seen_gbps(t), host_memory_seen_gbps(t, head_d2h, host_head_ms),
/// host_add_during_d2h_seen_gbps) and at_own_shapes(plan), ms per step), `bound_host_add_gbps`,
/// `bound_host_memory_gbps` and `bound_host_add_during_d2h_gbps` where those raised their
/// ceilings, `bound_gemm_tflops` (TFLOP/s) where the GEMM ceiling is the
/// layout's own GEMM backward's rate, `bound_generate_gelems` (1e9 elements/s) where the
/// generator's is its layout's own generator's (synthetic), and `bound_ratio` = the per-step mean
/// step_ms / bound_ms, both plain, where a bound exists (and bound_ms > 0 for the ratio); nothing
/// when no ceiling was measured. Returns the bound's `by` (the term's name, or "no ceilings"): the
/// case's label carries it as "bound by <name>", Google Benchmark counters being numbers.
std::string write_bound_counters(benchmark::UserCounters& c, const CaseTotals& t,
                                 const CasePlan& plan, const Ceilings& ceilings, int world_size);

}  // namespace shardaccum
