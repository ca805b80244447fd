// --backward gemm on GPUs (label gpu, issue 15 Deliver 3): the GEMMs change no gradient bit (the
// weight gradient added is exactly zero), so every case keeps the synthetic backward's verdict
// and error; the measured peak holds the workspace the model adds; the ceiling is in the context.
#include <gtest/gtest.h>

#include <cstring>

#include "strategies/backend/cuda_backend.hpp"
#include "strategies/default_matrix.hpp"
#include "strategies/gemm_workspace.hpp"
#include "strategies/preset/preset.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

#define REQUIRE_GPU()                                                                              \
  if (cuda_device_count() < 1) GTEST_SKIP() << "no CUDA device visible: gpu test skipped"

/// Units with 2-D, 3-D and 1-D parameters, shapes off every alignment.
Layout gemm_layout() {
  Layout l{"gemm-test", {}, "list"};
  l.units.push_back({"u0", 300 * 1000 + 1000, {{"w", {300, 1000}, 0}, {"b", {1000}, 300000}}});
  l.units.push_back({"u1", 4 * 96 * 33, {{"t", {4, 96, 33}, 0}}});
  l.units.push_back({"u2", 777, {{"norm", {777}, 0}}});
  l.units.push_back({"u3", 1024 * 512, {{"w", {1024, 512}, 0}}});
  return l;
}

std::unique_ptr<Backend> world(int n, std::vector<DType> gemm_dtypes = {}) {
  CudaBackendOptions o;
  o.world_size = n;
  o.pinned_pool_bytes = 64ull << 20;
  o.measure_ceilings = !gemm_dtypes.empty();
  o.ceiling_gemm_dtypes = std::move(gemm_dtypes);
  o.timeout_s = 120;
  o.cupti = false;
  return make_cuda_backend(o);
}

TEST(GpuGemm, EveryScheduleKeepsTheSyntheticVerdictAndError) {
  REQUIRE_GPU();
  auto be = world(std::min(2, cuda_device_count()));
  const Layout layout = gemm_layout();
  for (const char* dtype : {"fp32-fp32-fp32", "bf16-bf16-fp32", "bf16-bf16-bf16"})
    for (bool tf32 : {false, true})
      for (const CanonicalSchedule& c : kCanonicalSchedules) {
        if (tf32 && dtype[0] == 'b') continue;
        const Schedule sched = canonical_schedule(c.name, 4);
        CasePlan syn{layout, sched, preset("zero3"), parse_dtype_triple(dtype), GenMode::dyadic,
                     3,      "t"};
        CasePlan gemm = syn;
        gemm.backward = Backward::gemm;
        gemm.tokens = 77;  // odd: the last dY row is the zero one
        gemm.tf32 = tf32;
        SCOPED_TRACE(std::string(dtype) + " " + sched.modes + (tf32 ? " tf32" : ""));
        const auto a = testing::run_two_steps(*be, syn), b = testing::run_two_steps(*be, gemm);
        EXPECT_TRUE(b.correct) << b.max_rel_err;
        EXPECT_EQ(b.max_rel_err, a.max_rel_err);  // bit for bit: dW added exactly zero
        EXPECT_EQ(b.model.peak_device_bytes,
                  a.model.peak_device_bytes + gemm_workspace_numel(layout, 77, gemm.dtypes.grad) *
                                                  dtype_bytes(gemm.dtypes.grad));
        EXPECT_GE(b.measured.peak_device_bytes, b.model.peak_device_bytes);
      }
}

TEST(GpuGemm, CeilingIsInTheContextForEachDtypeAsked) {
  REQUIRE_GPU();
  auto be = world(1, {DType::bf16});
  const auto ctx = be->context();
  ASSERT_TRUE(ctx.contains("ceiling_gemm_tflops_bf16")) << ctx.dump(2);
  EXPECT_GT(ctx.at("ceiling_gemm_tflops_bf16").get<double>(), 0);
  EXPECT_FALSE(ctx.contains("ceiling_gemm_tflops_fp32"));
  EXPECT_GT(be->ceilings().gemm_tflops_bf16, 0);
}

}  // namespace
}  // namespace shardaccum
