// The strategies on GPUs (label gpu): the correctness matrix on 1 and 2 GPUs against docs/DESIGN.md
// §3 and the host backend, CUPTI-measured H2D/D2H bytes equal to the model exactly, a deliberately
// added extra copy seen as a mismatch, and peak device memory within 5% of the model plus a stated
// fixed overhead.
#include <gtest/gtest.h>

#include <algorithm>

#include "forwarding_rank.hpp"
#include "strategies/backend/cuda_backend.hpp"
#include "strategies/default_matrix.hpp"
#include "strategies/preset/preset.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

std::unique_ptr<Backend> cuda_world(int world) {
  CudaBackendOptions o;
  o.world_size = world;
  o.pinned_pool_bytes = 64ull << 20;
  o.measure_ceilings = false;
  o.timeout_s = 120;
  o.cupti = true;
  o.cupti_kernels = true;  // nccl_kernel_ms is asserted below
  return make_cuda_backend(o);
}

#define REQUIRE_GPUS(n)                                                                            \
  if (cuda_device_count() < (n))                                                                   \
  GTEST_SKIP() << "needs " << (n) << " GPU(s), " << cuda_device_count()                            \
               << " visible: gpu test skipped"

class GpuMatrix : public ::testing::TestWithParam<int> {};

// The one GPU matrix: every strategy of the default matrix x canonical schedule, fp32 and
// bf16-bf16-fp32, small odd layouts, on the cuda backend against the design's outcome, the model's
// bytes (CUPTI's and the backend's own) and the host backend (the reference semantics).
TEST_P(GpuMatrix, OutcomeBytesAndHostBackendFollowTheDesign) {
  const int world = GetParam();
  REQUIRE_GPUS(world);
  auto be = cuda_world(world);
  auto host = make_host_backend({world, 4});
  const Layout layout = testing::make_layout({1, 1009, 3, 64, 300007, 1 << 20});
  size_t cases = 0;
  const char* const dtypes[] = {"fp32-fp32-fp32", "bf16-bf16-fp32"};
  for (const char* dtype : dtypes)
    for (const StrategySpec& s : default_strategies())
      for (const CanonicalSchedule& c : kCanonicalSchedules) {
        const Schedule sched = canonical_schedule(c.name, 4);
        const CasePlan plan{layout, sched, s, parse_dtype_triple(dtype), GenMode::dyadic, 5, "t"};
        SCOPED_TRACE(s.name() + " schedule " + sched.modes + " " + dtype);
        const auto o = testing::run_two_steps(*be, plan);
        const auto h = testing::run_two_steps(*host, plan);
        EXPECT_EQ(o.correct, testing::design_says_correct(s, sched)) << o.max_rel_err;
        EXPECT_EQ(o.correct, h.correct);
        EXPECT_NEAR(o.max_rel_err, h.max_rel_err, 1e-9 * std::max(1.0, h.max_rel_err));
        ASSERT_TRUE(o.measured.bytes_from_cupti) << "CUPTI collector is off";
        EXPECT_EQ(o.measured.h2d_bytes, o.model.h2d_bytes);  // CUPTI's MEMCPY records
        EXPECT_EQ(o.measured.d2h_bytes, o.model.d2h_bytes);
        EXPECT_EQ(o.measured.accounted_h2d_bytes, o.model.h2d_bytes);
        EXPECT_EQ(o.measured.accounted_d2h_bytes, o.model.d2h_bytes);
        EXPECT_EQ(o.measured.h2d_bytes, h.measured.h2d_bytes);
        EXPECT_EQ(o.measured.d2h_bytes, h.measured.d2h_bytes);
        EXPECT_EQ(o.measured.nccl_input_bytes, o.model.nccl_input_bytes);
        EXPECT_EQ(o.measured.reduce_scatter_calls, h.measured.reduce_scatter_calls);
        // Host tasks may hold stagings a little longer than the host backend: within the model's
        // worst case for the backend's host_task_depth.
        EXPECT_GE(o.measured.peak_pinned_bytes, h.measured.peak_pinned_bytes);
        EXPECT_LE(o.measured.peak_pinned_bytes,
                  predict(plan, world, be->host_task_depth()).peak_pinned_bytes);
        EXPECT_GE(o.measured.peak_device_bytes, h.measured.peak_device_bytes);
        EXPECT_GT(o.measured.step_ms, 0.0);
        if (world > 1) {
          EXPECT_GT(o.measured.nccl_kernel_ms, 0.0);
        }
        ++cases;
      }
  EXPECT_EQ(cases,
            std::size(dtypes) * default_strategies().size() * std::size(kCanonicalSchedules));
}

INSTANTIATE_TEST_SUITE_P(OneAndTwoGpus, GpuMatrix, ::testing::Values(1, 2),
                         [](const auto& i) { return "world" + std::to_string(i.param); });

class GpuDivision : public ::testing::TestWithParam<int> {};

// The division values on the cuda backend (ncclAvg, the passes on the comm stream): the design's
// verdict, the host backend's error, and the division's device and host bytes the model's.
TEST_P(GpuDivision, EachValueIsCorrectAndItsPassesTheModels) {
  const int world = GetParam();
  REQUIRE_GPUS(world);
  auto be = cuda_world(world);
  auto host = make_host_backend({world, 4});
  const Layout layout = testing::make_layout({1, 1009, 300007});
  for (const char* division : {"collective", "pre-post", "pre", "end"})
    for (const char* offload : {"none", "cpu-add", "gpu-add"})
      for (const char* modes : {"SSSS", "nnnS", "nSnS"}) {
        StrategySpec s;
        s.offload = offload;
        s.division = division;
        const Schedule sched = parse_schedule(modes, 4);
        const CasePlan plan{layout,          sched, s,  parse_dtype_triple("fp32-fp32-fp32"),
                            GenMode::dyadic, 5,     "t"};
        SCOPED_TRACE(s.name() + " schedule " + modes);
        const auto o = testing::run_two_steps(*be, plan);
        const auto h = testing::run_two_steps(*host, plan);
        EXPECT_EQ(o.correct, testing::design_says_correct(s, sched)) << o.max_rel_err;
        EXPECT_NEAR(o.max_rel_err, h.max_rel_err, 1e-9 * std::max(1.0, h.max_rel_err));
        EXPECT_EQ(o.measured.division_device_bytes, o.model.division_device_bytes);
        EXPECT_EQ(o.measured.division_host_bytes, o.model.division_host_bytes);
      }
}

INSTANTIATE_TEST_SUITE_P(OneAndTwoGpus, GpuDivision, ::testing::Values(1, 2),
                         [](const auto& i) { return "world" + std::to_string(i.param); });

/// A rank whose D2H copies are issued twice: a strategy with one copy too many. Into pinned and
/// pageable host memory alike: fsdp2's later syncs copy into pageable memory (cpu-add-pageable).
class ExtraCopyRank final : public testing::ForwardingRank {
 public:
  explicit ExtraCopyRank(RankBackend& in) : ForwardingRank(in) {}
  void copy(Buffer& dst, const Buffer& src, Stream s) override {
    in_.copy(dst, src, s);
    if (dst.space() != MemSpace::device) in_.copy(dst, src, s);  // the deliberate extra copy
  }
};

class ExtraCopyWorld final : public Backend {
 public:
  explicit ExtraCopyWorld(Backend& in) : in_(in) {}
  std::string name() const override { return in_.name(); }
  int world_size() const override { return in_.world_size(); }
  bool gpu_times() const override { return true; }
  nlohmann::json context() const override { return in_.context(); }
  void run(const std::function<void(RankBackend&)>& fn) override {
    in_.run([&](RankBackend& r) {
      // One wrapper per rank for the world's life: the case's step drivers keep a reference.
      auto& x = ranks_[r.rank()];
      if (!x) x = std::make_unique<ExtraCopyRank>(r);
      fn(*x);
    });
  }

 private:
  Backend& in_;
  std::vector<std::unique_ptr<ExtraCopyRank>> ranks_ =
      std::vector<std::unique_ptr<ExtraCopyRank>>(in_.world_size());
};

TEST(GpuBytes, ADeliberateExtraCopyShowsUpAsAMismatch) {
  REQUIRE_GPUS(1);
  auto be = cuda_world(1);
  ExtraCopyWorld buggy(*be);
  const CasePlan plan{testing::make_layout({1 << 20, 4099}),
                      canonical_schedule("sync", 4),
                      preset("fsdp2"),
                      parse_dtype_triple("fp32-fp32-fp32"),
                      GenMode::dyadic,
                      3,
                      "t"};
  const auto o = testing::run_two_steps(buggy, plan);
  ASSERT_TRUE(o.measured.bytes_from_cupti);
  EXPECT_NE(o.measured.d2h_bytes, o.model.d2h_bytes);
  EXPECT_EQ(o.measured.d2h_bytes, 2 * o.model.d2h_bytes);  // CUPTI saw every extra byte
  EXPECT_EQ(o.measured.h2d_bytes, o.model.h2d_bytes);
}

// The pool's used-memory high watermark against the model: within 5% plus a fixed 64 MiB for
// what the model does not count (the pool's allocation granularity of a few MiB per live
// buffer, NCCL's and the backend's own scratch are outside the pool).
TEST(GpuMemory, PeakDeviceWithinFivePercentOfTheModel) {
  REQUIRE_GPUS(1);
  const int world = std::min(2, cuda_device_count());
  auto be = cuda_world(world);
  const Layout layout = testing::make_layout({64ull << 20, 64ull << 20, 64ull << 20, 5'000'011});
  for (const char* preset_name : {"fsdp2", "zero3"})
    for (const char* sched : {"no-sync", "sync", "interleaved-nosync-last"}) {
      const CasePlan plan{layout,
                          canonical_schedule(sched, 4),
                          preset(preset_name),
                          parse_dtype_triple("fp32-fp32-fp32"),
                          GenMode::dyadic,
                          9,
                          "t"};
      const auto o = testing::run_two_steps(*be, plan);
      SCOPED_TRACE(std::string(preset_name) + " " + sched);
      const double model = static_cast<double>(o.model.peak_device_bytes);
      EXPECT_GE(o.measured.peak_device_bytes, o.model.peak_device_bytes);
      EXPECT_LE(o.measured.peak_device_bytes, 1.05 * model + (64ull << 20));
    }
}

}  // namespace
}  // namespace shardaccum
