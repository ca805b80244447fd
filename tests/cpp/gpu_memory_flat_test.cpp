// Long runs stay flat (label gpu): 60 measured steps of uniform:4x256M on SnSS, one test per
// offload value, hold the same device, pool, pinned, event, CUPTI and trace levels at step 60 as at
// step 2. Before the pool's frees were observed by a synchronize (CudaRank::observe_idle_streams)
// the pool's reserved bytes grew by a step's working set every step until out of memory.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "bench/case_runner.hpp"
#include "bench/model_layouts.hpp"
#include "profiling/trace.hpp"
#include "strategies/backend/cuda_backend.hpp"

namespace shardaccum {
namespace {

constexpr int kSteps = 60;
constexpr int64_t kFreeSlack = 64ll << 20;  // cudaMemGetInfo moves by the driver's own bookkeeping

MemorySnapshot snapshot(Backend& be) {
  MemorySnapshot out;
  be.run([&](RankBackend& r) {
    if (r.rank() == 0) out = r.memory_snapshot();
  });
  return out;
}

void print(const char* when, const MemorySnapshot& m, size_t trace_events) {
  std::printf("%s: device_free %llu, pool_reserved %llu, pool_used %llu, pinned_capacity %llu, "
              "events %llu, "
              "buffers %llu, cupti_records %llu, trace_events %zu, rss %llu\n",
              when, static_cast<unsigned long long>(m.device_free_bytes),
              static_cast<unsigned long long>(m.pool_reserved_bytes),
              static_cast<unsigned long long>(m.pool_used_bytes),
              static_cast<unsigned long long>(m.pinned_capacity_bytes),
              static_cast<unsigned long long>(m.live_events),
              static_cast<unsigned long long>(m.live_buffers),
              static_cast<unsigned long long>(m.cupti_records), trace_events,
              static_cast<unsigned long long>(m.host_rss_bytes));
}

class GpuMemoryFlat : public ::testing::TestWithParam<const char*> {};

TEST_P(GpuMemoryFlat, SixtyStepsHoldWhatTwoHold) {
  if (cuda_device_count() < 1) GTEST_SKIP() << "no CUDA device visible: gpu test skipped";
  CudaBackendOptions o;
  o.world_size = 1;
  o.pinned_pool_bytes = 1ull << 30;
  o.measure_ceilings = false;
  o.timeout_s = 120;
  o.cupti = true;
  auto be = make_cuda_backend(o);
  const CasePlan plan{load_layout("uniform:4x256M", {}),
                      parse_schedule("SnSS", 4),
                      StrategySpec{"data-free", GetParam(), "flag"},
                      parse_dtype_triple("fp32-fp32-fp32"),
                      GenMode::dyadic,
                      7,
                      "memory-flat"};
  // A trace of one step, as --trace-steps 1 records it: its buffer must not grow either.
  trace::TraceRecorder recorder;
  recorder.set_first_recorded_step(0);
  recorder.set_recorded_step_count(1);
  CaseRunner runner(*be, plan, &recorder);
  MemorySnapshot at2{};
  size_t trace_at2 = 0;
  for (int step = 0; step < kSteps; ++step) {
    const StepReport rep =
        runner.step(static_cast<uint32_t>(step), step + 1 == kSteps);  // --check last
    if (step == 1) {
      at2 = snapshot(*be);
      trace_at2 = recorder.size();
    }
    if (step + 1 == kSteps) {
      ASSERT_EQ(rep.oracle.size(), 1u);
      EXPECT_EQ(rep.oracle[0].nonfinite, 0u);
    }
  }
  const MemorySnapshot at60 = snapshot(*be);
  print("step 2", at2, trace_at2);
  print("step 60", at60, recorder.size());
  EXPECT_NEAR(static_cast<double>(at60.device_free_bytes),
              static_cast<double>(at2.device_free_bytes), static_cast<double>(kFreeSlack));
  EXPECT_EQ(at60.pool_reserved_bytes, at2.pool_reserved_bytes);
  EXPECT_EQ(at60.pool_used_bytes, at2.pool_used_bytes);
  EXPECT_EQ(at60.pinned_capacity_bytes, at2.pinned_capacity_bytes);
  EXPECT_EQ(at60.live_events, at2.live_events);
  EXPECT_EQ(at60.live_buffers, at2.live_buffers);
  EXPECT_EQ(at60.cupti_records,
            at2.cupti_records);  // the oracle's copies are discarded after each check
  EXPECT_EQ(recorder.size(), trace_at2);
  EXPECT_NEAR(static_cast<double>(at60.host_rss_bytes), static_cast<double>(at2.host_rss_bytes),
              0.05 * static_cast<double>(at2.host_rss_bytes));
}

INSTANTIATE_TEST_SUITE_P(EveryOffload, GpuMemoryFlat,
                         ::testing::Values("none", "gpu-add", "cpu-add", "copy"),
                         [](const auto& i) {
                           std::string n = i.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace shardaccum
