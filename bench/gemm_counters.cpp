#include "bench/gemm_counters.hpp"

#include "common/gemm_shape.hpp"

namespace shardaccum {

double backward_step_flops(const CasePlan& plan) {
  if (plan.backward != Backward::gemm) return 0;
  double flops = 0;
  for (const FlatParam& u : plan.layout.units) flops += gemm_flops(u, plan.tokens);
  return flops * plan.schedule.k();
}

void write_gemm_counters(benchmark::UserCounters& c, const CaseTotals& t, const CasePlan& plan) {
  if (plan.backward != Backward::gemm || t.steps == 0) return;
  const double backward_ms = t.per_step(t.sum.phase_ms[static_cast<int>(Phase::backward)]);
  const double step_ms = t.per_step(t.sum.step_ms);
  if (backward_ms > 0)
    c["backward_tflops"] = backward_step_flops(plan) / (backward_ms * 1e-3) / 1e12;
  if (step_ms > 0)
    c["tokens_per_s"] = static_cast<double>(plan.tokens) * plan.schedule.k() / (step_ms * 1e-3);
}

}  // namespace shardaccum
