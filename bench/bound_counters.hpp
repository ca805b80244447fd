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

/// Writes `bound_ms` (case_bound of bound_work(plan, world_size) at `ceilings`, ms per step) and
/// `bound_ratio` = the per-step mean step_ms / bound_ms, both plain, where a bound exists (and
/// bound_ms > 0 for the ratio); nothing when no ceiling was measured. Returns the bound's `by`
/// (the term's name, or "no ceilings"): the case's label carries it as "bound by <name>", Google
/// Benchmark counters being numbers.
std::string write_bound_counters(benchmark::UserCounters& c, const CaseTotals& t,
                                 const CasePlan& plan, const Ceilings& ceilings, int world_size);

}  // namespace shardaccum
