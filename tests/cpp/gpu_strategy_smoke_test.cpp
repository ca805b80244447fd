// The strategies on the cuda backend against the host backend (the reference semantics): every
// strategy x canonical schedule at world 2 (or 1), fp32 and bf16-bf16-fp32, small odd layouts.
// Outcome, error and counted bytes must be those of the host backend; peaks are printed.
// (A smoke test of the backend under the real call patterns; the lead owns the strategy matrix.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "strategies/backend/cuda_backend.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

TEST(CudaStrategySmoke, EveryStrategyMatchesTheHostBackend) {
  if (cuda_device_count() == 0)
    GTEST_SKIP() << "no CUDA device visible: cuda backend tests skipped";
  const int world = std::min(2, cuda_device_count());
  CudaBackendOptions o;
  o.world_size = world;
  o.pinned_pool_bytes = 16ull << 20;
  o.measure_ceilings = false;
  o.timeout_s = 60;
  auto cuda = make_cuda_backend(o);
  auto host = make_host_backend({world, 4});
  const Layout layout = testing::make_layout({1, 1009, 3, 64, 300007});
  int cases = 0, wrong_as_designed = 0;
  for (const char* dtype : {"fp32-fp32-fp32", "bf16-bf16-fp32"})
    for (const StrategySpec& s : all_strategies())
      for (const char* name : kCanonicalSchedules) {
        const Schedule sched = canonical_schedule(name, 4);
        const CasePlan plan{layout, sched, s, parse_dtype_triple(dtype), GenMode::dyadic, 7, "t"};
        SCOPED_TRACE(s.name() + " schedule " + sched.modes + " " + dtype);
        const auto g = testing::run_two_steps(*cuda, plan);
        const auto h = testing::run_two_steps(*host, plan);
        EXPECT_EQ(g.correct, testing::design_says_correct(s, sched))
            << "max_rel_err " << g.max_rel_err;
        EXPECT_EQ(g.correct, h.correct);
        EXPECT_NEAR(g.max_rel_err, h.max_rel_err, 1e-9 * std::max(1.0, h.max_rel_err));
        EXPECT_EQ(g.measured.h2d_bytes, h.measured.h2d_bytes);
        EXPECT_EQ(g.measured.d2h_bytes, h.measured.d2h_bytes);
        EXPECT_EQ(g.measured.nccl_input_bytes, h.measured.nccl_input_bytes);
        EXPECT_EQ(g.measured.reduce_scatter_calls, h.measured.reduce_scatter_calls);
        // Host tasks may hold stagings a little longer than the host backend: within the model's
        // worst case for the backend's host_task_depth.
        EXPECT_GE(g.measured.peak_pinned_bytes, h.measured.peak_pinned_bytes);
        EXPECT_LE(g.measured.peak_pinned_bytes,
                  predict(plan, world, cuda->host_task_depth()).peak_pinned_bytes);
        EXPECT_GE(g.measured.peak_device_bytes, h.measured.peak_device_bytes);
        EXPECT_GT(g.measured.step_ms, 0.0);
        if (!g.correct) ++wrong_as_designed;
        if (cases % 16 == 0)
          std::printf("%-45s %s %s: err %.3g step %.3f ms peak device %llu (host arena %llu)\n",
                      s.name().c_str(), sched.modes.c_str(), dtype, g.max_rel_err,
                      g.measured.step_ms,
                      static_cast<unsigned long long>(g.measured.peak_device_bytes),
                      static_cast<unsigned long long>(h.measured.peak_device_bytes));
        ++cases;
      }
  EXPECT_EQ(cases, 2 * 16 * 4);
  std::printf("%d cases, %d wrong as the design says\n", cases, wrong_as_designed);
}

}  // namespace
}  // namespace shardaccum
