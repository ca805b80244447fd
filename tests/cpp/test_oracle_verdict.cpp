// Issue 11 item 16: the oracle's verdict rules against numbers worked out by hand (each derived
// in a comment), never recomputed by the code under test. tests/mutation/run_mutations.sh shows
// that breaking any rule fails one of these.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "strategies/backend/host_backend.hpp"
#include "strategies/step_driver.hpp"

namespace shardaccum {
namespace {

const DTypeTriple kFp32 = parse_dtype_triple("fp32-fp32-fp32");
const DTypeTriple kBf16Fp32 = parse_dtype_triple("bf16-bf16-fp32");
const DTypeTriple kBf16 = parse_dtype_triple("bf16-bf16-bf16");
constexpr GenMode kDyadic = GenMode::dyadic, kRandom = GenMode::random;

TEST(OracleVerdict, DyadicRangeKeepsBf16SumsWithin256Eighths) {
  // fp32 holds sums of k/8, |k| <= 4, far beyond any K*N: always 4.
  EXPECT_EQ(dyadic_range(kFp32, 4, 2), 4);
  EXPECT_EQ(dyadic_range(kFp32, 4096, 1024), 4);
  // bf16 (8 significand bits): r = floor(256 / (K*N)), clamped to 1..4.
  EXPECT_EQ(dyadic_range(kBf16Fp32, 4, 2), 4);   // 256/8 = 32 -> 4
  EXPECT_EQ(dyadic_range(kBf16Fp32, 8, 8), 4);   // 256/64 = 4
  EXPECT_EQ(dyadic_range(kBf16Fp32, 13, 5), 3);  // K*N = 65 > 63: 256/65 = 3.94 -> 3
  EXPECT_EQ(dyadic_range(kBf16, 32, 4), 2);      // 256/128 = 2
  EXPECT_EQ(dyadic_range(kBf16, 64, 4), 1);      // 256/256 = 1
  EXPECT_EQ(dyadic_range(kBf16, 100, 4), 1);     // 256/400 = 0 -> 1 (and the sums are not exact)
}

TEST(OracleVerdict, SumsExactOnlyForDyadicValuesWithinBudget) {
  EXPECT_TRUE(sums_exact(kFp32, kDyadic, 4, 2));         // 4*8 = 32 <= 2^24
  EXPECT_TRUE(sums_exact(kFp32, kDyadic, 4096, 1024));   // 4 * 2^22 = 2^24: the limit itself
  EXPECT_FALSE(sums_exact(kFp32, kDyadic, 4096, 1025));  // 4 * 4096 * 1025 > 2^24
  EXPECT_FALSE(sums_exact(kFp32, kRandom, 4, 2));        // full-mantissa values round
  EXPECT_FALSE(sums_exact(kFp32, kRandom, 1, 1));
  EXPECT_TRUE(sums_exact(kBf16Fp32, kDyadic, 13, 5));  // K*N = 65 > 63 with r = 3: 195 <= 256
  EXPECT_TRUE(sums_exact(kBf16, kDyadic, 64, 4));      // r = 1: 256 <= 256
  EXPECT_FALSE(sums_exact(kBf16, kDyadic, 100, 4));    // r = 1: 400 > 256
  EXPECT_FALSE(sums_exact(kBf16Fp32, kRandom, 4, 2));
}

TEST(OracleVerdict, ErrorBoundCountsRoundingsWithHeadroomTwo) {
  // Exact sums: one rounding in the accum dtype, x2. fp32 u = 2^-24 -> 2^-23.
  EXPECT_EQ(error_bound(kFp32, kDyadic, 4, 2), 1.1920928955078125e-07);
  EXPECT_EQ(error_bound(kBf16Fp32, kDyadic, 13, 5), 1.1920928955078125e-07);  // accum fp32
  // bf16 accumulator: u = 2^-8 -> 2^-7.
  EXPECT_EQ(error_bound(kBf16, kDyadic, 4, 2), 0.0078125);
  // Random fp32, K=4, N=2: 2 * (K*N*u + K*u + u) = 2 * 13 * 2^-24 = 26 * 2^-24.
  EXPECT_EQ(error_bound(kFp32, kRandom, 4, 2), 1.5497207641601562e-06);
  // Random bf16-bf16-fp32, K=4, N=2: 2 * (8 * 2^-8 + 5 * 2^-24) = 0.0625 + 10 * 2^-24.
  EXPECT_EQ(error_bound(kBf16Fp32, kRandom, 4, 2), 0.06250059604644775);
  // Dyadic bf16 past the budget (K*N = 400): counted as rounding, 2 * (400 * 2^-8 + 101 * 2^-24).
  EXPECT_EQ(error_bound(kBf16Fp32, kDyadic, 100, 4), 3.1250120401382446);
  // Random bf16-bf16-bf16, K=4, N=2: 2 * 13 * 2^-8 = 26/256.
  EXPECT_EQ(error_bound(kBf16, kRandom, 4, 2), 0.1015625);
}

TEST(OracleVerdict, OracleResolvesOnlyWhenALostMicroBatchStandsOut) {
  EXPECT_TRUE(oracle_resolves(kFp32, kDyadic, 4, 2));      // 2^-23 far below 1/4
  EXPECT_TRUE(oracle_resolves(kFp32, kRandom, 4, 2));      // 1.55e-6 < 0.5 * sqrt(1/4) = 0.25
  EXPECT_TRUE(oracle_resolves(kBf16Fp32, kRandom, 4, 2));  // 0.0625006 < 0.25
  EXPECT_TRUE(oracle_resolves(kBf16, kRandom, 4, 2));      // 0.1015625 < 0.25
  // Random bf16-bf16-fp32, K=8, N=4: 2 * (32 * 2^-8 + 9 * 2^-24) = 0.2500011 >= 0.5 * sqrt(1/8) =
  // 0.177.
  EXPECT_FALSE(oracle_resolves(kBf16Fp32, kRandom, 8, 4));
  // A bf16 accumulator (bound 2^-7 = 0.0078125) with exact sums: a witness shows one lost
  // micro-batch as 1/K; resolved while 2^-7 < 0.25/K: K = 31 (0.00806) yes, K = 32 (0.0078125) no.
  EXPECT_TRUE(oracle_resolves(kBf16, kDyadic, 31, 1));
  EXPECT_FALSE(oracle_resolves(kBf16, kDyadic, 32, 1));
  // Dyadic bf16 past the budget: bound 3.125 > 1.
  EXPECT_FALSE(oracle_resolves(kBf16Fp32, kDyadic, 100, 4));
}

OracleResult result(double err2, double ref2) {
  OracleResult r;
  ShardCheck c;
  c.err_norm2 = err2;
  c.ref_norm2 = ref2;
  r.merge(c);
  return r;
}

TEST(OracleVerdict, IsCorrectNeedsBoundFinitenessZeroPaddingAndEveryUnit) {
  const double bound = 1.1920928955078125e-07;  // fp32 dyadic, 2^-23
  EXPECT_TRUE(is_correct(result(0, 4), bound));
  EXPECT_TRUE(is_correct(result(1e-14, 1), bound));   // rel 1e-7 <= 1.19e-7
  EXPECT_FALSE(is_correct(result(4e-14, 1), bound));  // rel 2e-7 > 1.19e-7
  EXPECT_FALSE(is_correct(result(std::nan(""), 1), bound));
  EXPECT_FALSE(is_correct(result(std::numeric_limits<double>::infinity(), 1), bound));
  OracleResult pad = result(0, 1);
  pad.bad_padding = 1;
  EXPECT_FALSE(is_correct(pad, bound));
  OracleResult nan = result(0, 1);
  nan.nonfinite = 1;
  EXPECT_FALSE(is_correct(nan, bound));
  // One unit off by rel 0.5 (0.25/1), hidden in the total by a unit of norm^2 1e14: rel 5e-8.
  OracleResult two = result(0.25, 1);
  ShardCheck big;
  big.ref_norm2 = 1e14;
  two.merge(big);
  EXPECT_LT(two.rel_err(), bound);
  EXPECT_EQ(two.max_unit_rel_err, 0.5);
  EXPECT_FALSE(is_correct(two, bound));
}

TEST(OracleVerdict, HostCheckCountsNonzeroPaddingAndNanAsWrong) {
  // A 1-element unit at N=1: shard of 8 (padded to N*8), element 0 true, 1..7 padding.
  auto be = make_host_backend({1, 1});
  be->run([](RankBackend& rb) {
    const GradKey g{3, 1, 0, 0, 0, 1, kDyadic, 4};
    OracleKey key{3, 1, 1, 1, 0, 0, 1, 0, kDyadic, DType::fp32, 4};
    Buffer b = rb.allocate(MemSpace::device, DType::fp32, 8, Stream::compute);
    float* v = static_cast<float*>(b.data());
    for (int i = 0; i < 8; ++i) v[i] = grad_value(g, i);  // K = N = 1: the sum is g itself
    const double bound = 1.1920928955078125e-07;
    OracleResult ok;
    ok.merge(rb.check_shard(b, key));
    EXPECT_TRUE(is_correct(ok, bound));
    v[5] = 0.125f;  // padding written
    OracleResult pad;
    pad.merge(rb.check_shard(b, key));
    EXPECT_EQ(pad.bad_padding, 1u);
    EXPECT_FALSE(is_correct(pad, bound));
    v[5] = 0;
    v[0] = std::nanf("");
    OracleResult nan;
    nan.merge(rb.check_shard(b, key));
    EXPECT_EQ(nan.nonfinite, 1u);
    EXPECT_FALSE(is_correct(nan, bound));
  });
}

TEST(OracleVerdict, RandomModeValuesAreFullMantissaAndNeverExact) {
  // Random mode: values in [-1, 1) with 24 significant bits; a sum of two of them generally
  // rounds, which is why sums_exact is false and the bound counts roundings.
  const GradKey g{1, 0, 0, 0, 0, 4096, kRandom};
  int wide = 0;
  for (uint64_t i = 1; i < 4096; ++i) {
    const float v = grad_value(g, i);
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    ASSERT_NE(v, 0.0f);
    // Multiples of 2^-24 (2^-23 elsewhere, 0.5 + k 2^-24 at a witness); more than bf16's 8
    // significant bits when v * 2^24 is not a multiple of 2^16.
    const double scaled = static_cast<double>(v) * 0x1p24;
    ASSERT_EQ(scaled, std::floor(scaled));
    wide += std::fmod(std::fabs(scaled), 65536.0) != 0 ? 1 : 0;
  }
  EXPECT_GT(wide, 4000);
}

}  // namespace
}  // namespace shardaccum

namespace shardaccum {
namespace {

// The divisions' roundings (error_bound's docstring), u = 2^-24, fp32 throughout, K = 4. Dyadic
// sums are exact; a pass by a power-of-two factor is exact too, so at N = 1, 2, 4, 8 every
// division keeps `end`'s 2u. At N = 3, per sync: collective avg 3u + u_32 + the add into the
// saved shard u = 5u; pre u_g + u_32 + 2 adds of quotients 2u + u = 5u; pre-post (2, 1.5) only
// the post pass u + u_32 + u = 3u. Times K, times 2: 40u, 40u, 24u.
TEST(OracleVerdict, DivisionsAddTheRoundingsOfTheirPasses) {
  const char* divisions[] = {"collective", "pre-post", "pre", "end"};
  for (int n : {1, 2, 4, 8})
    for (const char* d : divisions)
      EXPECT_EQ(error_bound(kFp32, kDyadic, 4, n, division_steps(d, n)), 0x1p-23) << d << n;
  EXPECT_EQ(error_bound(kFp32, kDyadic, 4, 3, division_steps("collective", 3)), 40 * 0x1p-24);
  EXPECT_EQ(error_bound(kFp32, kDyadic, 4, 3, division_steps("pre", 3)), 40 * 0x1p-24);
  EXPECT_EQ(error_bound(kFp32, kDyadic, 4, 3, division_steps("pre-post", 3)), 24 * 0x1p-24);
  EXPECT_EQ(error_bound(kFp32, kDyadic, 4, 3, division_steps("end", 3)), 0x1p-23);
  // Random values, N = 2: the sums' K*N*u + K*u = 12u, and collective's avg every sync (2u +
  // u_32 + u = 4u, counted though 1/2 is exact: the sums round anyway) 16u: 2 * 28u.
  EXPECT_EQ(error_bound(kFp32, kRandom, 4, 2, division_steps("collective", 2)), 56 * 0x1p-24);
  // bf16 reduce at N = 3, K = 4: collective 2 * 4 * (3 * 2^-8 + 2u) = 0.0938 is above a witness's
  // 0.25 / K, so the oracle cannot resolve it (the CLI refuses such a case); pre-post (2 * 4 *
  // (2^-8 + 2u) = 0.0313) resolves.
  EXPECT_FALSE(oracle_resolves(kBf16Fp32, kDyadic, 4, 3, division_steps("collective", 3)));
  EXPECT_TRUE(oracle_resolves(kBf16Fp32, kDyadic, 4, 3, division_steps("pre-post", 3)));
  EXPECT_TRUE(oracle_resolves(kBf16Fp32, kDyadic, 4, 2, division_steps("collective", 2)));
}

}  // namespace
}  // namespace shardaccum
