// Backend::ceilings() of the cuda backend: the typed figures are the context's ceiling_*_gbps keys
// (the same means), zero when nothing was measured (label gpu; skips without a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "common/ceilings.hpp"
#include "strategies/backend/cuda_backend.hpp"

namespace shardaccum {
namespace {

CudaBackendOptions small_options(bool measure) {
  CudaBackendOptions o;
  o.world_size = std::min(2, cuda_device_count());
  o.pinned_pool_bytes = 0;
  o.measure_ceilings = measure;
  o.ceiling_copy_bytes = 16ull << 20;  // small: the figures are compared, not judged
  o.ceiling_device_copy_bytes = 16ull << 20;
  o.ceiling_reduce_scatter_bytes = 16ull << 20;
  o.ceiling_host_add_bytes = 16ull << 20;
  o.cupti = false;
  o.timeout_s = 120;
  return o;
}

void expect_same(const Ceilings& c, const nlohmann::json& j) {
  EXPECT_EQ(c.h2d_gbps, j.at("ceiling_h2d_gbps").get<double>());
  EXPECT_EQ(c.d2h_gbps, j.at("ceiling_d2h_gbps").get<double>());
  EXPECT_EQ(c.bidir_gbps, j.at("ceiling_bidir_gbps").get<double>());
  EXPECT_EQ(c.device_copy_gbps, j.at("ceiling_device_copy_gbps").get<double>());
  EXPECT_EQ(c.reduce_scatter_busbw_gbps, j.at("ceiling_reduce_scatter_busbw_gbps").get<double>());
  EXPECT_EQ(c.reduce_scatter_algbw_gbps, j.at("ceiling_reduce_scatter_algbw_gbps").get<double>());
  EXPECT_EQ(c.host_add_gbps, j.at("ceiling_host_add_gbps").get<double>());
  EXPECT_EQ(c.generate_gelems, j.at("ceiling_generate_gelems").get<double>());
  EXPECT_EQ(c.sm_overlap, j.at("ceiling_sm_overlap").get<double>());
}

TEST(CudaCeilings, TypedCeilingsAreTheContextsKeys) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto be = make_cuda_backend(small_options(true));
  const Ceilings c = be->ceilings();
  EXPECT_TRUE(c.measured());
  EXPECT_GT(c.h2d_gbps, 0.0);
  EXPECT_GT(c.generate_gelems, 0.0);
  EXPECT_GT(c.sm_overlap, 0.0);
  expect_same(c, be->context());
  // Measured again: ceilings() follows the new figures, as the context does.
  const nlohmann::json again = measure_cuda_ceilings(*be);
  expect_same(be->ceilings(), again);
  expect_same(be->ceilings(), be->context());
}

// Each synthetic layout's generator alone (at_own_shapes): one entry per layout and dtype, every
// unit's elements, a time, and the same in the context.
TEST(CudaCeilings, EachSyntheticLayoutsGeneratorAloneIsInTheCeilings) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  CudaBackendOptions o = small_options(true);
  auto layout = std::make_shared<Layout>();
  layout->name = "gen-test";
  for (uint64_t numel : {1ull << 20, 3ull << 18, 4097ull}) {
    FlatParam u;
    u.name = "u" + std::to_string(layout->units.size());
    u.numel = numel;
    layout->units.push_back(u);
  }
  o.ceiling_generate_layouts = {{layout, DType::fp32}, {layout, DType::bf16}};
  auto be = make_cuda_backend(o);
  const Ceilings c = be->ceilings();
  ASSERT_EQ(c.generate_layouts.size(), 2u);
  for (DType t : {DType::fp32, DType::bf16}) {
    const GenerateLayoutCeiling* g = c.generate_of("gen-test", t);
    ASSERT_NE(g, nullptr) << dtype_name(t);
    EXPECT_EQ(g->elements, (1ull << 20) + (3ull << 18) + 4097);
    EXPECT_GT(g->ms, 0.0);
  }
  const auto ctx = be->context();
  ASSERT_TRUE(ctx.contains("ceiling_generate_layouts")) << ctx.dump(2);
  EXPECT_EQ(ctx.at("ceiling_generate_layouts").size(), 2u);
}

TEST(CudaCeilings, NothingMeasuredIsAllZero) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto be = make_cuda_backend(small_options(false));
  const Ceilings c = be->ceilings();
  EXPECT_FALSE(c.measured());
  EXPECT_EQ(c.h2d_gbps, 0.0);
  EXPECT_EQ(c.reduce_scatter_busbw_gbps, 0.0);
  EXPECT_FALSE(be->context().contains("ceiling_h2d_gbps"));
}

}  // namespace
}  // namespace shardaccum
