// libshardaccum_gen's host functions (capi/shardaccum_gen.h) against the suite's own generator,
// reference and check (common/gradient_gen.hpp, common/shard_check.hpp, strategies/oracle.hpp):
// the C ABI adds nothing and loses nothing. Seen failing: with gen_keys.hpp's oracle_key setting
// shard_offset to 0 instead of `first`, ExpectedFillIsTheRanksShard failed at every rank > 0.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "capi/shardaccum_gen.h"
#include "common/gradient_gen.hpp"
#include "common/layout.hpp"
#include "common/shard_check.hpp"
#include "strategies/oracle.hpp"

namespace shardaccum {
namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(GenCapi, GradFillIsGradValue) {
  for (const int32_t mode : {0, 1}) {
    const sa_grad_key c{7, 3, 2, 1, 5, 4099, mode, 3, 1000};
    const GradKey k{7, 3, 2, 1, 5, 4099, mode == 0 ? GenMode::dyadic : GenMode::random, 3, 1000};
    std::vector<float> out(4200);
    sa_grad_fill_host(&c, 17, out.size(), out.data());
    for (uint64_t j = 0; j < out.size(); ++j)
      ASSERT_EQ(bits(out[j]), bits(grad_value(k, 17 + j)))
          << "mode " << mode << " element " << 17 + j;
  }
}

TEST(GenCapi, ExpectedFillIsTheRanksShard) {
  const int world = 3;
  const uint64_t numel = 5000, shard = shard_numel(numel, world);
  const sa_oracle_key c{4, 1, 2, world, 6, numel, 1, 1, 4, shard};
  for (uint32_t rank = 0; rank < world; ++rank) {
    OracleKey o{4,           1, 2,    world, rank, 6, numel, rank * shard, GenMode::random,
                DType::bf16, 4, shard};
    const std::vector<uint64_t> prefixes = oracle_prefixes(o);
    std::vector<double> out(shard);
    sa_expected_fill_host(&c, rank * shard, shard, out.data());
    for (uint64_t j = 0; j < shard; ++j)
      ASSERT_EQ(out[j], expected_value(o, prefixes.data(), j)) << "rank " << rank << " j " << j;
  }
}

TEST(GenCapi, CompareHostIsCheckElementWithoutPadding) {
  const uint64_t numel = 3000;
  const sa_oracle_key c{2, 0, 4, 1, 1, numel, 0, 0, 4, numel};
  OracleKey o{2, 0, 4, 1, 0, 1, numel, 0, GenMode::dyadic, DType::fp32, 4, numel};
  const std::vector<uint64_t> prefixes = oracle_prefixes(o);
  std::vector<float> x(numel);  // not the expected values: every element adds an error
  for (uint64_t j = 0; j < numel; ++j) x[j] = static_cast<float>(j % 7) * 0.25f;
  double out3[3];
  sa_compare_host(&c, 0, numel, x.data(), 0, out3);
  ShardCheck want;
  for (uint64_t j = 0; j < numel; ++j)
    check_element(o, prefixes.data(), j, x[j], want.err_norm2, want.ref_norm2, want.nonfinite,
                  want.bad_padding);
  EXPECT_GT(want.err_norm2, 0);
  EXPECT_DOUBLE_EQ(out3[0], want.err_norm2);  // OpenMP's reduction order differs: not bitwise
  EXPECT_DOUBLE_EQ(out3[1], want.ref_norm2);
  EXPECT_EQ(out3[2], 0);
}

TEST(GenCapi, BoundAndRangeAreTheOracles) {
  for (const char* name : kDtypeTriples) {
    const DTypeTriple t = parse_dtype_triple(name);
    const auto g = static_cast<int32_t>(t.grad), r = static_cast<int32_t>(t.reduce),
               a = static_cast<int32_t>(t.accum);
    for (const int k : {1, 4, 13, 100})
      for (const int n : {1, 2, 5}) {
        EXPECT_EQ(sa_dyadic_range(g, r, a, k, n), dyadic_range(t, k, n)) << name << k << n;
        EXPECT_EQ(sa_error_bound(g, r, a, 0, k, n), error_bound(t, GenMode::dyadic, k, n));
        EXPECT_EQ(sa_error_bound(g, r, a, 1, k, n), error_bound(t, GenMode::random, k, n));
      }
  }
  EXPECT_EQ(sa_gen_abi(), SA_GEN_ABI);
}

}  // namespace
}  // namespace shardaccum
