#pragma once
// The oracle's gradient generator (DESIGN.md §5): a counter-based hash, one __host__ __device__
// function shared by the backward of every backend and by the exact reference.
#include <cstdint>

#include "strategies/dtype.hpp"

namespace shardaccum {

enum class GenMode : uint8_t {
  dyadic,  // k/8 with integer |k| <= 4: every sum is exact in fp32, and in bf16 for K*N <= 63
  random,  // full-mantissa uniform values in [-1, 1): for precision studies
};

/// Identifies one micro-batch's gradient of one unit on one rank.
struct GradKey {
  uint64_t seed = 0;
  uint32_t step = 0, mb = 0, rank = 0, unit = 0;
  uint64_t numel = 0;  // elements >= numel are padding: zero
  GenMode mode = GenMode::dyadic;
};

/// splitmix64's finaliser (Steele et al., 2014): a bijective 64-bit mix.
SA_HD inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// g(seed, step, mb, rank, unit, i): the gradient element i; zero in the padding.
SA_HD inline float grad_value(const GradKey& k, uint64_t i) {
  if (i >= k.numel) return 0.0f;
  uint64_t h = mix64(k.seed ^ 0x5eed5eed5eedull);
  h = mix64(h ^ (static_cast<uint64_t>(k.step) << 32 | k.mb));
  h = mix64(h ^ (static_cast<uint64_t>(k.rank) << 32 | k.unit));
  h = mix64(h ^ i);
  if (k.mode == GenMode::dyadic) return static_cast<float>(static_cast<int>(h % 9) - 4) * 0.125f;
  // 24 random bits -> a float in [-1, 1) with a full fp32 mantissa.
  return static_cast<float>(static_cast<int64_t>(h >> 40) - (1 << 23)) * 0x1p-23f;
}

/// Identifies one rank's finished shard of one unit, for the exact reference.
struct OracleKey {
  uint64_t seed = 0;
  uint32_t step = 0, k = 0, world_size = 1, rank = 0, unit = 0;
  uint64_t numel = 0;         // the unit's true numel (padding beyond)
  uint64_t shard_offset = 0;  // first padded index of this rank's shard
  GenMode mode = GenMode::dyadic;
  DType grad_dtype = DType::fp32;  // values are rounded to it before summing, as backward does
};

/// Expected shard element j: (1/N) * sum over all K micro-batches and N ranks of g, in fp64.
SA_HD inline double expected_value(const OracleKey& o, uint64_t j) {
  const uint64_t i = o.shard_offset + j;
  if (i >= o.numel) return 0.0;
  double sum = 0;
  GradKey g{o.seed, o.step, 0, 0, o.unit, o.numel, o.mode};
  for (uint32_t mb = 0; mb < o.k; ++mb)
    for (uint32_t r = 0; r < o.world_size; ++r) {
      g.mb = mb;
      g.rank = r;
      float v = grad_value(g, i);
      if (o.grad_dtype == DType::bf16) v = bf16_to_float(float_to_bf16(v));
      sum += v;
    }
  return sum / o.world_size;
}

}  // namespace shardaccum
