#include "bench/bound_counters.hpp"

#include <algorithm>

namespace shardaccum {

double host_add_seen_gbps(const CaseTotals& t) {
  double best = 0;
  const auto rate = [&](uint64_t bytes, double ms) {
    if (ms > 0 && bytes > 0) best = std::max(best, static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  };
  for (const StepMetrics& r : t.rank_sum) {
    rate(r.cpu_add_bytes, r.phase_ms[static_cast<int>(Phase::cpu_add)]);
    // The host division's pass (`end` on an offloaded shard) is the finalize phase's work.
    rate(r.division_host_bytes, r.phase_ms[static_cast<int>(Phase::finalize)]);
  }
  return best;
}

double host_memory_seen_gbps(const CaseTotals& t, uint64_t head_d2h_bytes, double head_ms) {
  double best = 0;
  // rank_sum holds `steps` steps: the head and its bytes come once per step.
  const double steps = std::max(1, t.steps);
  const auto rate = [&](double bytes, double ms) {
    if (ms > 0 && bytes > 0) best = std::max(best, bytes / (ms * 1e-3) / 1e9);
  };
  for (const StepMetrics& r : t.rank_sum) {
    if (r.cpu_add_bytes == 0) continue;
    const double all =
        static_cast<double>(r.cpu_add_bytes + r.h2d_bytes + r.param_h2d_bytes + r.d2h_bytes);
    rate(all, r.step_ms);  // every byte within the step: the host memory term stays <= the step
    rate(all - steps * static_cast<double>(head_d2h_bytes), r.step_ms - steps * head_ms);
  }
  return best;
}

double host_add_during_d2h_seen_gbps(const CaseTotals& t, const BoundWork& w, const Ceilings& c,
                                     double head_ms) {
  if (w.host == 0 || w.d2h <= w.head_d2h || c.d2h_gbps <= 0 || c.host_add_gbps <= 0) return 0;
  const double d2h_ms = static_cast<double>(w.d2h - w.head_d2h) / (c.d2h_gbps * 1e9) * 1e3,
               adds_ms = static_cast<double>(w.host) / (c.host_add_gbps * 1e9) * 1e3;
  const double steps = std::max(1, t.steps);
  double best = 0;
  for (const StepMetrics& r : t.rank_sum) {
    if (r.cpu_add_bytes == 0) continue;
    // adds_ms + d2h_ms * (1 - rate / host_add) = the step after the head, solved for rate.
    const double after = r.step_ms / steps - head_ms;
    best = std::max(best, c.host_add_gbps * (1.0 - (after - adds_ms) / d2h_ms));
  }
  return best;
}

std::string write_bound_counters(benchmark::UserCounters& c, const CaseTotals& t,
                                 const CasePlan& plan, const Ceilings& ceilings, int world_size) {
  const BoundWork w = bound_work(plan, world_size);
  const Ceilings raised = at_own_shapes(bound_ceilings(ceilings, host_add_seen_gbps(t)), plan);
  const double head_ms = host_head_ms(w, raised, plan.dtypes.grad);
  const Ceilings shared = bound_ceilings(raised, 0, host_memory_seen_gbps(t, w.head_d2h, head_ms));
  const Ceilings at =
      bound_ceilings(shared, 0, 0, host_add_during_d2h_seen_gbps(t, w, shared, head_ms));
  const Bound b = case_bound(w, at, world_size, plan.dtypes.grad);
  if (!b.ms) return b.by;  // absent, not 0: no ceiling to bound by
  c["bound_ms"] = *b.ms;
  const double step_ms = t.per_step(t.sum.step_ms);
  if (*b.ms > 0 && t.steps > 0) c["bound_ratio"] = step_ms / *b.ms;
  // The host add rate the bound used, where it is not the run's ceiling (bound_ceilings).
  if (at.host_add_gbps > ceilings.host_add_gbps) c["bound_host_add_gbps"] = at.host_add_gbps;
  if (at.host_memory_gbps > ceilings.host_memory_gbps)
    c["bound_host_memory_gbps"] = at.host_memory_gbps;
  if (at.host_add_during_d2h_gbps > ceilings.host_add_during_d2h_gbps)
    c["bound_host_add_during_d2h_gbps"] = at.host_add_during_d2h_gbps;
  // The GEMM rate the bound used, where it is the layout's own (at_own_shapes), not the dense one.
  const bool bf16 = plan.dtypes.grad == DType::bf16;
  const double own = bf16 ? at.gemm_tflops_bf16 : at.gemm_tflops_fp32,
               dense = bf16 ? ceilings.gemm_tflops_bf16 : ceilings.gemm_tflops_fp32;
  if (plan.backward == Backward::gemm && own != dense) c["bound_gemm_tflops"] = own;
  // Likewise the generator's rate, where it is the layout's own synthetic backward's.
  if (plan.backward == Backward::synthetic && at.generate_gelems != ceilings.generate_gelems)
    c["bound_generate_gelems"] = at.generate_gelems;
  return b.by;
}

}  // namespace shardaccum
