#include "bench/bound_counters.hpp"

namespace shardaccum {

std::string write_bound_counters(benchmark::UserCounters& c, const CaseTotals& t,
                                 const CasePlan& plan, const Ceilings& ceilings, int world_size) {
  const Bound b = case_bound(bound_work(plan, world_size), ceilings, world_size, plan.dtypes.grad);
  if (!b.ms) return b.by;  // absent, not 0: no ceiling to bound by
  c["bound_ms"] = *b.ms;
  const double step_ms = t.per_step(t.sum.step_ms);
  if (*b.ms > 0 && t.steps > 0) c["bound_ratio"] = step_ms / *b.ms;
  return b.by;
}

}  // namespace shardaccum
