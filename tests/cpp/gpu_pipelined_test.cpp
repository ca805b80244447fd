// gpu-add-pipelined on a GPU (label gpu; docs/DESIGN.md §3): on uniform:16x64M, K=4, SSSS, world 1
// its H2D (h2d stream) and D2H (copy stream) run at the same time, as the backend's own CUDA
// events place them on the trace, and it moves exactly gpu-add's bytes (CUPTI's count).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "bench/case_runner.hpp"
#include "bench/model_layouts.hpp"
#include "strategies/backend/cuda_backend.hpp"
#include "strategies/backend/op_intervals.hpp"
#include "strategies/model.hpp"

namespace shardaccum {
namespace {

CasePlan plan_of(const char* offload) {
  return CasePlan{load_layout("uniform:16x64M", {}),
                  parse_schedule("SSSS", 4),
                  StrategySpec{"data-free", offload, "flag"},
                  parse_dtype_triple("fp32-fp32-fp32"),
                  GenMode::dyadic,
                  3,
                  offload};
}

/// Step 1 of `offload` (after a warm-up), its trace and its figures.
StepReport traced_step(Backend& be, const char* offload, trace::TraceRecorder& recorder) {
  recorder.set_first_recorded_step(1);
  recorder.set_recorded_step_count(1);
  CaseRunner runner(be, plan_of(offload), &recorder);
  runner.step(0, false);
  return runner.step(1, true);
}

/// The intervals (µs) of the events named `phase` on `track`.
std::vector<Interval> intervals(const trace::TraceRecorder& r, const char* track,
                                const char* phase) {
  std::vector<Interval> v;
  for (const trace::TraceEvent& e : r.events())
    if (e.track == track && e.name == phase) v.push_back({e.start_us, e.start_us + e.duration_us});
  return v;
}

TEST(GpuPipelined, H2dAndD2hOverlapAndBytesAreGpuAdds) {
  if (cuda_device_count() < 1) GTEST_SKIP() << "no CUDA device visible: gpu test skipped";
  CudaBackendOptions o;
  o.world_size = 1;
  o.pinned_pool_bytes = 64ull << 20;
  o.measure_ceilings = false;
  o.timeout_s = 120;
  o.cupti = true;
  auto be = make_cuda_backend(o);

  trace::TraceRecorder piped_trace, plain_trace;
  const StepReport piped = traced_step(*be, "gpu-add-pipelined", piped_trace);
  const StepReport plain = traced_step(*be, "gpu-add", plain_trace);
  CaseVerdict verdict(plan_of("gpu-add-pipelined").dtypes, GenMode::dyadic, 4, 1);
  verdict.add(piped.oracle);
  EXPECT_TRUE(verdict.correct()) << verdict.max_rel_err();
  ASSERT_TRUE(piped.max.bytes_from_cupti) << "CUPTI collector is off";
  EXPECT_EQ(piped.max.h2d_bytes, plain.max.h2d_bytes);
  EXPECT_EQ(piped.max.d2h_bytes, plain.max.d2h_bytes);
  const Prediction m = predict(plan_of("gpu-add"), 1);
  EXPECT_EQ(piped.max.h2d_bytes, m.h2d_bytes);
  EXPECT_EQ(piped.max.d2h_bytes, m.d2h_bytes);

  const std::vector<Interval> h2d = intervals(piped_trace, "h2d stream", "h2d"),
                              d2h = intervals(piped_trace, "copy stream", "d2h");
  ASSERT_FALSE(h2d.empty());
  ASSERT_FALSE(d2h.empty());
  // Overlap = |∪H2D| − |∪H2D − ∪D2H|: in series (one copy stream, gpu-add) it is 0.
  const double h2d_us = union_ms(h2d), overlap_us = h2d_us - uncovered_ms(h2d, d2h);
  EXPECT_GT(overlap_us, 0.0) << "h2d " << h2d_us << " us, overlap " << overlap_us;
  // gpu-add has no h2d stream: all its copies are on the copy stream.
  EXPECT_TRUE(intervals(plain_trace, "h2d stream", "h2d").empty());
}

}  // namespace
}  // namespace shardaccum
