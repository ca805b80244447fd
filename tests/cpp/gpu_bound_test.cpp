// The bound is a lower bound on a GPU (label gpu; skips without one): every case of a small matrix
// (the default strategies x canonical schedules, uniform:4x16M, K=4, world 1, fp32) takes at least
// 0.97 of its bound_ms at the ceilings the same backend measured (3% for the ceilings' own noise),
// the host add's and host memory's raised to what the case's own work reached, as the benchmark
// writes it (write_bound_counters). On one H200 (2026-12-04) the host add alone raised put the
// cpu-add cases' critical path up to 3% above their steps. The cpu-add cases also place their CPU
// adds beside their D2Hs (cpu_add_beside_d2h_ms, within the add's own time).
#include <gtest/gtest.h>

#include "bench/bound_counters.hpp"
#include "bench/case_runner.hpp"
#include "bench/model_layouts.hpp"
#include "strategies/backend/cuda_backend.hpp"
#include "strategies/bound.hpp"
#include "strategies/default_matrix.hpp"

namespace shardaccum {
namespace {

TEST(GpuBound, EveryCaseTakesAtLeastItsBound) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  CudaBackendOptions o;
  o.world_size = 1;
  o.pinned_pool_bytes = 1ull << 30;
  o.measure_ceilings = true;  // the default sizes: smaller ones read low and inflate the bound
  o.cupti = false;
  o.timeout_s = 120;
  auto be = make_cuda_backend(o);
  const Ceilings c = be->ceilings();
  ASSERT_TRUE(c.measured());
  const Layout layout = load_layout("uniform:4x16M", {});
  int cases = 0, cpu_add_cases = 0, cpu_adds_beside = 0;
  for (const StrategySpec& s : default_strategies())
    for (const CanonicalSchedule& cs : kCanonicalSchedules) {
      const CasePlan plan{layout,
                          canonical_schedule(cs.name, 4),
                          s,
                          parse_dtype_triple("fp32-fp32-fp32"),
                          GenMode::dyadic,
                          5,
                          "t"};
      SCOPED_TRACE(s.name() + " schedule " + plan.schedule.modes);
      CaseRunner runner(*be, plan);
      runner.step(0, false);  // warm-up, as the benchmark's
      CaseTotals t(1);
      double sum_ms = 0;
      for (uint32_t step = 1; step <= 3; ++step) {
        const StepReport r = runner.step(step, false);
        t.add(r.max, r.per_rank);
        sum_ms += r.max.step_ms;
      }
      // The bound the benchmark writes (the host add and host memory ceilings raised to what the
      // case's own work reached, write_bound_counters), not a recomputation that could drift.
      benchmark::UserCounters counters;
      const std::string by = write_bound_counters(counters, t, plan, c, 1);
      ASSERT_TRUE(counters.count("bound_ms")) << by;
      EXPECT_GE(sum_ms / 3, 0.97 * counters.at("bound_ms").value) << "bound by " << by;
      // The CPU add's time beside D2Hs (cpu_add_frac_shared_ceiling's weight) is part of its time.
      const double add_ms = t.sum.phase_ms[static_cast<int>(Phase::cpu_add)];
      EXPECT_GE(t.sum.cpu_add_beside_d2h_ms, 0);
      EXPECT_LE(t.sum.cpu_add_beside_d2h_ms, add_ms + 1e-6);
      if (t.sum.cpu_add_bytes > 0) {
        ++cpu_add_cases;
        if (t.sum.cpu_add_beside_d2h_ms > 0) ++cpu_adds_beside;
      }
      ++cases;
    }
  EXPECT_GT(cases, 0);
  // cpu-add overlaps a unit's add with the next units' D2Hs: some of its cases must show it.
  EXPECT_GT(cpu_add_cases, 0);
  EXPECT_GT(cpu_adds_beside, 0) << "no CPU add placed beside a D2H in " << cpu_add_cases
                                << " cases";
}

}  // namespace
}  // namespace shardaccum
