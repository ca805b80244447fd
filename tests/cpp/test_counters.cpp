// The counters a case writes (bench/counters.hpp), on hand-made step figures: per-step figures are
// sums that Google Benchmark divides by the iterations, peaks and the model are plain, the ceiling
// fractions appear only against a measured ceiling. The figures are worked out by hand below.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "bench/counters.hpp"

namespace shardaccum {
namespace {

using benchmark::Counter;

StepMetrics step(double step_ms, uint64_t h2d_bytes, double h2d_ms, uint64_t peak_device) {
  StepMetrics m;
  m.step_ms = step_ms;
  m.h2d_bytes = h2d_bytes;
  m.phase_ms[static_cast<int>(Phase::h2d)] = h2d_ms;
  m.peak_device_bytes = peak_device;
  return m;
}

CaseVerdict unchecked() {
  return CaseVerdict(parse_dtype_triple("fp32-fp32-fp32"), GenMode::dyadic, 4, 2);
}

TEST(Counters, PerStepFiguresAreSumsThatGoogleBenchmarkAverages) {
  CaseTotals t(1);
  t.add(step(1.5, 1000, 0.5, 300), {step(1.5, 1000, 0.5, 300)});
  t.add(step(2.5, 3000, 1.5, 700), {step(2.5, 3000, 1.5, 700)});
  Prediction model;
  model.h2d_bytes = 2000;
  model.peak_device_bytes = 650;
  benchmark::UserCounters c;
  write_counters(c, t, model, Ceilings{}, unchecked(), 1);
  // Sums over the two steps, flagged so that GB writes sum / iterations: 2.0 ms and 2000 bytes.
  EXPECT_EQ(c.at("step_ms").value, 4.0);
  EXPECT_EQ(c.at("step_ms").flags, Counter::kAvgIterations);
  EXPECT_EQ(c.at("h2d_bytes").value, 4000.0);
  EXPECT_EQ(c.at("h2d_bytes").flags, Counter::kAvgIterations);
  EXPECT_EQ(c.at("h2d_ms").value, 2.0);
  // A peak is the max over steps, the model's figures are per step already: both plain.
  EXPECT_EQ(c.at("peak_device_bytes").value, 700.0);
  EXPECT_EQ(c.at("peak_device_bytes").flags, Counter::kDefaults);
  EXPECT_EQ(c.at("model_h2d_bytes").value, 2000.0);
  EXPECT_EQ(c.at("model_h2d_bytes").flags, Counter::kDefaults);
  EXPECT_EQ(c.at("model_peak_device_bytes").value, 650.0);
  // The spread over steps: the fastest and the slowest step, plain (not averaged).
  EXPECT_EQ(c.at("step_ms_min").value, 1.5);
  EXPECT_EQ(c.at("step_ms_min").flags, Counter::kDefaults);
  EXPECT_EQ(c.at("step_ms_max").value, 2.5);
  EXPECT_EQ(c.at("step_ms_max").flags, Counter::kDefaults);
  EXPECT_EQ(c.at("correct").value, 0.0);  // no step was checked
  // One rank: no per-rank counters; no CUPTI: none of CUPTI's counters.
  EXPECT_EQ(c.count("step_ms_rank0"), 0u);
  EXPECT_EQ(c.count("nccl_kernel_ms"), 0u);
  EXPECT_EQ(c.count("accounted_h2d_bytes"), 0u);
}

TEST(Counters, FractionsOfCeilingsOnlyWhereACeilingWasMeasuredAndThePhaseRan) {
  CaseTotals t(2);
  StepMetrics m = step(3, 4'000'000, 1.0, 0);  // H2D: 4e6 bytes in 1 ms per step = 4 GB/s
  m.nccl_input_bytes = 8'000'000;              // reduce-scatter: 8e6 bytes in 2 ms = 4 GB/s algbw,
  m.phase_ms[static_cast<int>(Phase::reduce_scatter)] = 2.0;  // busbw 4 * (2-1)/2 = 2 GB/s
  m.nccl_ms = m.nccl_link_ms = 2.0;                           // no rank waited for a peer
  t.add(m, {m, m});
  benchmark::UserCounters host;
  write_counters(host, t, Prediction{}, Ceilings{}, unchecked(), 2);
  for (const CeilingDef& d : ceiling_table()) EXPECT_EQ(host.count(d.name), 0u) << d.name;
  EXPECT_EQ(host.at("nccl_busbw_gbps").value, 2.0);

  Ceilings cap;
  cap.h2d_gbps = 8;
  cap.d2h_gbps = 8;  // D2H took no time: no fraction
  cap.reduce_scatter_busbw_gbps = 4;
  benchmark::UserCounters gpu;
  write_counters(gpu, t, Prediction{}, cap, unchecked(), 2);
  EXPECT_EQ(gpu.at("h2d_frac_ceiling").value, 0.5);
  EXPECT_EQ(gpu.at("nccl_frac_ceiling").value, 0.5);
  EXPECT_EQ(gpu.count("d2h_frac_ceiling"), 0u);
  EXPECT_EQ(gpu.count("accumulate_frac_ceiling"), 0u);  // its ceiling is 0
}

// Issue 17's CPU add target against the host memory it shared: 3e10 bytes added in 300 ms, 200 of
// them beside D2Hs. At 150 GB/s alone and 120 beside D2Hs the ceilings allow 100 ms x 150 + 200 ms
// x 120 = 39,000 ms.GB/s = 3.9e10 bytes: 3e10 / 3.9e10 = 0.769..., where the alone ceiling
// gives 100 GB/s / 150 = 0.667.
TEST(Counters, TheCpuAddIsWeighedAgainstTheCeilingsOfItsTimeAloneAndBesideD2hs) {
  StepMetrics m;
  m.cpu_add_bytes = 30'000'000'000;
  m.phase_ms[static_cast<int>(Phase::cpu_add)] = 300;
  m.cpu_add_beside_d2h_ms = 200;
  Ceilings cap;
  cap.host_add_gbps = 150;
  cap.host_add_during_d2h_gbps = 120;
  EXPECT_DOUBLE_EQ(cpu_add_frac_shared_ceiling(m, cap), 3e10 / 3.9e10);
  CaseTotals t(1);
  t.add(m, {m});
  benchmark::UserCounters c;
  write_counters(c, t, Prediction{}, cap, unchecked(), 1);
  EXPECT_DOUBLE_EQ(c.at("cpu_add_frac_shared_ceiling").value, 3e10 / 3.9e10);
  EXPECT_NEAR(c.at("cpu_add_frac_ceiling").value, 100.0 / 150, 1e-12);
  // Never beside D2Hs for longer than it ran (the two clocks' placement may differ by
  // microseconds).
  m.cpu_add_beside_d2h_ms = 301;
  EXPECT_DOUBLE_EQ(cpu_add_frac_shared_ceiling(m, cap), 3e10 / (300 * 120 * 1e6));
  // No figure without both ceilings, the add's time or its bytes (the host backend: no ceilings).
  cap.host_add_during_d2h_gbps = 0;
  EXPECT_EQ(cpu_add_frac_shared_ceiling(m, cap), 0);
  benchmark::UserCounters none;
  write_counters(none, t, Prediction{}, cap, unchecked(), 1);
  EXPECT_EQ(none.count("cpu_add_frac_shared_ceiling"), 0u);
  cap.host_add_during_d2h_gbps = 120;
  m.cpu_add_bytes = 0;
  EXPECT_EQ(cpu_add_frac_shared_ceiling(m, cap), 0);
}

TEST(Counters, BusBandwidthIsOverTheLinkTimeAndOverlapIsTheHiddenShare) {
  CaseTotals t(2);
  StepMetrics m = step(10, 0, 0, 0);
  m.nccl_input_bytes = 8'000'000;
  m.nccl_ms = 5.0;           // from the own start: 3 ms of it waiting for the later rank
  m.nccl_wait_ms = 3.0;      // ...
  m.nccl_link_ms = 2.0;      // 8e6 bytes in 2 ms = 4 GB/s algbw, busbw 2 GB/s
  m.exposed_comm_ms = 1.25;  // the rest ran while a backward op ran
  t.add(m, {m, m});
  t.add(m, {m, m});
  benchmark::UserCounters c;
  write_counters(c, t, Prediction{}, Ceilings{}, unchecked(), 2);
  EXPECT_EQ(c.at("nccl_ms").value, 10.0);  // two steps' sum, GB averages
  EXPECT_EQ(c.at("nccl_ms").flags, Counter::kAvgIterations);
  EXPECT_EQ(c.at("nccl_wait_ms").value, 6.0);
  EXPECT_EQ(c.at("exposed_comm_ms").value, 2.5);
  EXPECT_EQ(c.at("nccl_busbw_gbps").value, 2.0);
  EXPECT_EQ(c.at("overlap_fraction").value, 0.75);  // 1 − 1.25 / 5
  EXPECT_EQ(c.at("overlap_fraction").flags, Counter::kDefaults);

  CaseTotals none(1);  // no reduce-scatter: nothing to hide, 0 rather than NaN
  none.add(step(1, 0, 0, 0), {step(1, 0, 0, 0)});
  benchmark::UserCounters z;
  write_counters(z, none, Prediction{}, Ceilings{}, unchecked(), 1);
  EXPECT_EQ(z.at("overlap_fraction").value, 0.0);
  EXPECT_EQ(z.at("nccl_busbw_gbps").value, 0.0);
}

TEST(Counters, EveryRankHasItsStepTimeAndItsPeaksWhenTheyDiffer) {
  CaseTotals t(2);
  const StepMetrics r0 = step(1.0, 0, 0, 100), r1 = step(3.0, 0, 0, 200);
  t.add(step(3.0, 0, 0, 200), {r0, r1});
  t.add(step(3.0, 0, 0, 200), {r0, r1});
  benchmark::UserCounters c;
  write_counters(c, t, Prediction{}, Ceilings{}, unchecked(), 2);
  EXPECT_EQ(c.at("step_ms_rank0").value, 2.0);  // 1.0 ms in each of two steps, averaged by GB
  EXPECT_EQ(c.at("step_ms_rank0").flags, Counter::kAvgIterations);
  EXPECT_EQ(c.at("step_ms_rank1").value, 6.0);
  EXPECT_EQ(c.at("peak_device_bytes_rank0").value, 100.0);
  EXPECT_EQ(c.at("peak_device_bytes_rank0").flags, Counter::kDefaults);
  EXPECT_EQ(c.at("peak_device_bytes_rank1").value, 200.0);
}

TEST(Counters, TableNamesAreUniqueAndTheirUnitsAndModelNamesMatch) {
  std::set<std::string> names;
  for (const CounterDef& d : counter_table()) {
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    const std::string n = d.name, unit = d.unit;
    if (n.size() > 3 && n.compare(n.size() - 3, 3, "_ms") == 0) {
      EXPECT_EQ(unit, "ms") << n;
    }
    if (n.size() > 6 && n.compare(n.size() - 6, 6, "_bytes") == 0) {
      EXPECT_EQ(unit, "bytes") << n;
    }
    if (d.model) {
      EXPECT_EQ(std::string(d.model), "model_" + n);
      EXPECT_NE(d.model_of, nullptr) << n;
    }
  }
  for (const CeilingDef& d : ceiling_table()) {
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    EXPECT_EQ(std::string(d.ceiling_key).rfind("ceiling_", 0), 0u) << d.ceiling_key;
  }
}

}  // namespace
}  // namespace shardaccum
