// --backward gemm on GPUs (label gpu, issue 15 Deliver 3): the GEMMs change no gradient bit (the
// weight gradient added is exactly zero), so every case keeps the synthetic backward's verdict
// and error; the measured peak holds the workspace the model adds; the ceiling is in the context.
#include <gtest/gtest.h>

#include <cstring>

#include "common/gemm_shape.hpp"
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

// The workspace's operands are filled once and reused by units of the same shapes
// (GemmOperandFill): every GEMM backward still adds exactly zero, whether its unit reuses the fill,
// follows a unit of other shapes, or runs on a new workspace at the address of a freed buffer that
// held other values.
TEST(GpuGemm, ReusedAndRefilledOperandsAddExactlyZero) {
  REQUIRE_GPU();
  auto be = world(1);
  const Layout l = gemm_layout();
  const uint64_t ws_numel = gemm_workspace_numel(l, 77, DType::fp32);
  be->run([&](RankBackend& r) {
    uint32_t calls = 0;
    auto gemm_is_exact = [&](const FlatParam& u, Buffer& ws) {
      GradKey k;
      k.seed = 5;
      k.unit = calls++;
      k.numel = u.numel;
      k.shard = u.numel;
      Buffer want = r.allocate(MemSpace::device, DType::fp32, u.numel, Stream::compute);
      Buffer got = r.allocate(MemSpace::device, DType::fp32, u.numel, Stream::compute);
      r.generate(want, k, false, Stream::compute);
      r.generate(got, k, false, Stream::compute);
      r.gemm_backward(got, u, 77, false, ws, Stream::compute);
      Buffer hw = r.allocate(MemSpace::pinned_host, DType::fp32, u.numel, Stream::compute);
      Buffer hg = r.allocate(MemSpace::pinned_host, DType::fp32, u.numel, Stream::compute);
      r.copy(hw, want, Stream::compute);
      r.copy(hg, got, Stream::compute);
      r.host_wait(r.record(Stream::compute));
      return std::memcmp(hw.data(), hg.data(), u.numel * sizeof(float)) == 0;
    };
    Buffer ws = r.allocate(MemSpace::device, DType::fp32, ws_numel, Stream::compute);
    EXPECT_TRUE(gemm_is_exact(l.units[3], ws)) << "first fill";
    EXPECT_TRUE(gemm_is_exact(l.units[3], ws)) << "the same shapes: the fill reused";
    EXPECT_TRUE(gemm_is_exact(l.units[0], ws)) << "other shapes: refilled";
    EXPECT_TRUE(gemm_is_exact(l.units[1], ws)) << "a 3-D parameter";
    EXPECT_TRUE(gemm_is_exact(l.units[3], ws)) << "back to the first shapes: refilled";
    ws.reset();
    {  // the freed workspace's memory handed out again and overwritten
      Buffer other = r.allocate(MemSpace::device, DType::fp32, ws_numel, Stream::compute);
      GradKey k;
      k.seed = 9;
      k.numel = ws_numel;
      r.generate(other, k, false, Stream::compute);
    }
    Buffer again = r.allocate(MemSpace::device, DType::fp32, ws_numel, Stream::compute);
    EXPECT_TRUE(gemm_is_exact(l.units[3], again)) << "a new workspace: filled afresh";
  });
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

// Each layout of the run's gemm cases has its GEMM backward alone in the ceilings (the compute
// ceiling at its own shapes, bound.hpp at_own_shapes): one entry per layout, tokens and dtype, the
// FLOPs of its units, a time, and the same in the context.
TEST(GpuGemm, EachLayoutsGemmBackwardAloneIsInTheCeilings) {
  REQUIRE_GPU();
  CudaBackendOptions o;
  o.world_size = 1;
  o.pinned_pool_bytes = 64ull << 20;
  o.ceiling_gemm_dtypes = {DType::fp32};
  const auto layout = std::make_shared<const Layout>(gemm_layout());
  o.ceiling_gemm_layouts = {{layout, 77, DType::fp32}, {layout, 77, DType::bf16}};
  o.timeout_s = 120;
  o.cupti = false;
  auto be = make_cuda_backend(o);
  const Ceilings c = be->ceilings();
  ASSERT_EQ(c.gemm_backward.size(), 2u);
  double flops = 0;
  for (const FlatParam& u : layout->units) flops += gemm_flops(u, 77);
  for (DType t : {DType::fp32, DType::bf16}) {
    const GemmBackwardCeiling* g = c.gemm_backward_of("gemm-test", 77, t);
    ASSERT_NE(g, nullptr) << dtype_name(t);
    EXPECT_DOUBLE_EQ(g->flops, flops);
    EXPECT_GT(g->ms, 0.0);
  }
  const auto ctx = be->context();
  ASSERT_TRUE(ctx.contains("ceiling_gemm_backward")) << ctx.dump(2);
  EXPECT_EQ(ctx.at("ceiling_gemm_backward").size(), 2u);
  // A gemm case of that layout runs after the measurement, with its verdict intact.
  CasePlan plan{*layout,
                canonical_schedule("sync", 4),
                preset("ideal"),
                parse_dtype_triple("fp32-fp32-fp32"),
                GenMode::dyadic,
                3,
                "t"};
  plan.backward = Backward::gemm;
  plan.tokens = 77;
  EXPECT_TRUE(testing::run_two_steps(*be, plan).correct);
}

}  // namespace
}  // namespace shardaccum
