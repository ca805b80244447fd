#include "bench/counters.hpp"

#include <algorithm>
#include <string>

namespace shardaccum {

namespace {

template <Phase P>
double phase_of(const StepMetrics& m) {
  return m.phase_ms[static_cast<int>(P)];
}

/// GB/s of a phase per step: its bytes over its time; unknown when the phase took no time.
template <uint64_t StepMetrics::*Bytes, Phase P>
bool phase_gbps(const CaseTotals& t, int, double& out) {
  const double bytes = t.per_step(static_cast<double>(t.sum.*Bytes));
  const double ms = t.per_step(t.sum.phase_ms[static_cast<int>(P)]);
  if (!(ms > 0)) return false;
  out = bytes / (ms * 1e-3) / 1e9;
  return true;
}

// The h2d phase also times the parameters' copies (--param-traffic on): their bytes count too.
bool h2d_gbps(const CaseTotals& t, int, double& out) {
  const double bytes = t.per_step(static_cast<double>(t.sum.h2d_bytes + t.sum.param_h2d_bytes));
  const double ms = t.per_step(t.sum.phase_ms[static_cast<int>(Phase::h2d)]);
  if (!(ms > 0)) return false;
  out = bytes / (ms * 1e-3) / 1e9;
  return true;
}
// Over nccl_link_ms (end − latest rank's start): the time the data moved, not a peer's lateness.
double nccl_busbw(const CaseTotals& t, int world_size) {
  return reduce_scatter_busbw_gbps(t.per_step(static_cast<double>(t.sum.nccl_input_bytes)),
                                   t.per_step(t.sum.nccl_link_ms), world_size);
}

bool nccl_gbps(const CaseTotals& t, int world_size, double& out) {
  out = nccl_busbw(t, world_size);
  return out > 0;
}

template <auto F>
double field(const StepMetrics& m) {
  return static_cast<double>(m.*F);
}

}  // namespace

void CaseTotals::add(const StepMetrics& max, const std::vector<StepMetrics>& per_rank) {
  const auto plus = [](auto a, auto b) { return a + b; };
  sum.fold(max, plus);
  step_min_ms = steps == 0 ? max.step_ms : std::min(step_min_ms, max.step_ms);
  step_max_ms = steps == 0 ? max.step_ms : std::max(step_max_ms, max.step_ms);
  for (size_t r = 0; r < rank_sum.size() && r < per_rank.size(); ++r)
    rank_sum[r].fold(per_rank[r], plus);
  ++steps;
}

const std::vector<CounterDef>& counter_table() {
  using K = CounterDef;
  static const std::vector<CounterDef> table = {
      {"step_ms", "ms", K::per_step, field<&StepMetrics::step_ms>},
      {"backward_ms", "ms", K::per_step, phase_of<Phase::backward>},
      {"nccl_ms", "ms", K::per_step, field<&StepMetrics::nccl_ms>},
      {"nccl_wait_ms", "ms", K::per_step, field<&StepMetrics::nccl_wait_ms>},
      {"nccl_link_ms", "ms", K::per_step, field<&StepMetrics::nccl_link_ms>},
      {"exposed_comm_ms", "ms", K::per_step, field<&StepMetrics::exposed_comm_ms>},
      {"compute_ms", "ms", K::per_step, field<&StepMetrics::compute_ms>},
      {"accumulate_ms", "ms", K::per_step, phase_of<Phase::accumulate>},
      {"cpu_add_ms", "ms", K::per_step, phase_of<Phase::cpu_add>},
      {"h2d_ms", "ms", K::per_step, phase_of<Phase::h2d>},
      {"d2h_ms", "ms", K::per_step, phase_of<Phase::d2h>},
      {"finalize_ms", "ms", K::per_step, phase_of<Phase::finalize>},
      {"h2d_bytes", "bytes", K::per_step, field<&StepMetrics::h2d_bytes>, false, "model_h2d_bytes",
       &Prediction::h2d_bytes},
      {"d2h_bytes", "bytes", K::per_step, field<&StepMetrics::d2h_bytes>, false, "model_d2h_bytes",
       &Prediction::d2h_bytes},
      {"d2h_pageable_bytes", "bytes", K::per_step, field<&StepMetrics::d2h_pageable_bytes>, false,
       "model_d2h_pageable_bytes", &Prediction::d2h_pageable_bytes},
      // --param-traffic on: the parameters' H2D, apart from the gradient path's h2d_bytes, and
      // FSDP2's all-gather copy-out on the device.
      {"param_h2d_bytes", "bytes", K::per_step, field<&StepMetrics::param_h2d_bytes>, false,
       "model_param_h2d_bytes", &Prediction::param_h2d_bytes},
      {"param_d2d_bytes", "bytes", K::per_step, field<&StepMetrics::param_d2d_bytes>, false,
       "model_param_d2d_bytes", &Prediction::param_d2d_bytes},
      {"nccl_input_bytes", "bytes", K::per_step, field<&StepMetrics::nccl_input_bytes>, false,
       "model_nccl_input_bytes", &Prediction::nccl_input_bytes},
      {"reduce_scatter_calls", "calls", K::per_step, field<&StepMetrics::reduce_scatter_calls>},
      {"accumulate_bytes", "bytes", K::per_step, field<&StepMetrics::accumulate_bytes>},
      {"cpu_add_bytes", "bytes", K::per_step, field<&StepMetrics::cpu_add_bytes>},
      // The division axis's passes (read + write), on the device and on the host (`end` over an
      // offloaded shard): docs/DESIGN.md §3.
      {"division_device_bytes", "bytes", K::per_step, field<&StepMetrics::division_device_bytes>,
       false, "model_division_device_bytes", &Prediction::division_device_bytes},
      {"division_host_bytes", "bytes", K::per_step, field<&StepMetrics::division_host_bytes>, false,
       "model_division_host_bytes", &Prediction::division_host_bytes},
      // h2d/d2h_bytes are CUPTI's then; the backend's own accounting beside them, and kernel times.
      {"accounted_h2d_bytes", "bytes", K::per_step, field<&StepMetrics::accounted_h2d_bytes>, true},
      {"accounted_d2h_bytes", "bytes", K::per_step, field<&StepMetrics::accounted_d2h_bytes>, true},
      {"nccl_kernel_ms", "ms", K::per_step, field<&StepMetrics::nccl_kernel_ms>, true},
      {"accumulate_kernel_ms", "ms", K::per_step, field<&StepMetrics::accumulate_kernel_ms>, true},
      {"generate_kernel_ms", "ms", K::per_step, field<&StepMetrics::generate_kernel_ms>, true},
      {"peak_device_bytes", "bytes", K::peak, field<&StepMetrics::peak_device_bytes>, false,
       "model_peak_device_bytes", &Prediction::peak_device_bytes},
      {"peak_pinned_bytes", "bytes", K::peak, field<&StepMetrics::peak_pinned_bytes>, false,
       "model_peak_pinned_bytes", &Prediction::peak_pinned_bytes},
      {"peak_pageable_bytes", "bytes", K::peak, field<&StepMetrics::peak_pageable_bytes>, false,
       "model_peak_pageable_bytes", &Prediction::peak_pageable_bytes},
  };
  return table;
}

const std::vector<CeilingDef>& ceiling_table() {
  static const std::vector<CeilingDef> table = {
      {"h2d_frac_ceiling", "ceiling_h2d_gbps", &Ceilings::h2d_gbps, h2d_gbps},
      {"d2h_frac_ceiling", "ceiling_d2h_gbps", &Ceilings::d2h_gbps,
       phase_gbps<&StepMetrics::d2h_bytes, Phase::d2h>},
      {"accumulate_frac_ceiling", "ceiling_device_copy_gbps", &Ceilings::device_copy_gbps,
       phase_gbps<&StepMetrics::accumulate_bytes, Phase::accumulate>},
      {"cpu_add_frac_ceiling", "ceiling_host_add_gbps", &Ceilings::host_add_gbps,
       phase_gbps<&StepMetrics::cpu_add_bytes, Phase::cpu_add>},
      {"nccl_frac_ceiling", "ceiling_reduce_scatter_busbw_gbps",
       &Ceilings::reduce_scatter_busbw_gbps, nccl_gbps},
  };
  return table;
}

double reduce_scatter_busbw_gbps(double bytes, double ms, int n) {
  if (ms <= 0 || n < 2) return 0;
  return bytes / (ms * 1e-3) / 1e9 * (n - 1) / n;
}

void write_counters(benchmark::UserCounters& c, const CaseTotals& t, const Prediction& model,
                    const Ceilings& ceilings, const CaseVerdict& verdict, int world_size) {
  // Sums with kAvgIterations: Google Benchmark divides by the iterations, one per measured step.
  const auto avg = [](double sum) {
    return benchmark::Counter(sum, benchmark::Counter::kAvgIterations);
  };
  for (const CounterDef& d : counter_table()) {
    if (d.cupti_only && !t.sum.bytes_from_cupti) continue;
    c[d.name] = d.kind == CounterDef::per_step ? avg(d.of(t.sum)) : benchmark::Counter(d.of(t.sum));
    if (d.model) c[d.model] = static_cast<double>(model.*d.model_of);
  }
  c["bytes_from_cupti"] = t.sum.bytes_from_cupti ? 1 : 0;
  // The spread over steps behind the mean step_ms, plain (an extreme, not a sum).
  if (t.steps > 0) {
    c["step_ms_min"] = t.step_min_ms;
    c["step_ms_max"] = t.step_max_ms;
  }
  // A ratio of per-step means, not a sum: written as it is.
  c["nccl_busbw_gbps"] = nccl_busbw(t, world_size);
  // The share of the reduce-scatter time that compute hid (0 without reduce-scatters).
  // Clamped to [0, 1]: exposed and nccl are sums of the same intervals, equal up to rounding.
  c["overlap_fraction"] =
      t.sum.nccl_ms > 0 ? std::clamp(1 - t.sum.exposed_comm_ms / t.sum.nccl_ms, 0.0, 1.0) : 0.0;
  // Per rank where ranks differ: the step time always, a peak when it is not the same everywhere
  // (the counters above are the max over ranks, as the design reports them). Every rank folds
  // every step (CaseTotals::add), so the iterations are its step count too.
  if (t.rank_sum.size() > 1) {
    bool peaks_differ = false;
    for (const StepMetrics& r : t.rank_sum)
      peaks_differ = peaks_differ || r.peak_device_bytes != t.sum.peak_device_bytes ||
                     r.peak_pinned_bytes != t.sum.peak_pinned_bytes;
    for (size_t r = 0; r < t.rank_sum.size(); ++r) {
      const std::string sfx = "_rank" + std::to_string(r);
      c["step_ms" + sfx] = avg(t.rank_sum[r].step_ms);
      if (peaks_differ) {
        c["peak_device_bytes" + sfx] = t.rank_sum[r].peak_device_bytes;
        c["peak_pinned_bytes" + sfx] = t.rank_sum[r].peak_pinned_bytes;
      }
    }
  }
  c["max_rel_err"] = verdict.max_rel_err();
  c["err_bound"] = verdict.bound();
  c["correct"] = verdict.correct() ? 1 : 0;
  // Each phase against its ceiling measured in this run (cuda backend only).
  for (const CeilingDef& d : ceiling_table()) {
    const double cap = ceilings.*d.ceiling;
    double gbps = 0;
    if (cap > 0 && d.gbps(t, world_size, gbps)) c[d.name] = gbps / cap;
  }
  if (const double f = cpu_add_frac_shared_ceiling(t.sum, ceilings); f > 0)
    c["cpu_add_frac_shared_ceiling"] = f;
}

double cpu_add_frac_shared_ceiling(const StepMetrics& m, const Ceilings& ceilings) {
  const double add_ms = m.phase_ms[static_cast<int>(Phase::cpu_add)];
  if (ceilings.host_add_gbps <= 0 || ceilings.host_add_during_d2h_gbps <= 0 || add_ms <= 0 ||
      m.cpu_add_bytes == 0)
    return 0;
  const double beside_ms = std::clamp(m.cpu_add_beside_d2h_ms, 0.0, add_ms);
  // GB/s x ms = 1e6 bytes.
  const double allowed = ((add_ms - beside_ms) * ceilings.host_add_gbps +
                          beside_ms * ceilings.host_add_during_d2h_gbps) *
                         1e6;
  return static_cast<double>(m.cpu_add_bytes) / allowed;
}

}  // namespace shardaccum
