#pragma once
// The oracle's gradient generator (DESIGN.md §5): a counter-based hash, one __host__ __device__
// function shared by the backward of every backend and by the exact reference.
#include <cstdint>
#include <vector>

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
  uint8_t dyadic_max = 4;  // dyadic values are k/8 with integer |k| <= dyadic_max (1..4)
};

/// splitmix64's finaliser (Steele et al., 2014): a bijective 64-bit mix.
SA_HD inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// The hash of (seed, step, mb, rank, unit): computed once per buffer, not per element.
SA_HD inline uint64_t grad_prefix(const GradKey& k) {
  uint64_t h = mix64(k.seed ^ 0x5eed5eed5eedull);
  h = mix64(h ^ (static_cast<uint64_t>(k.step) << 32 | k.mb));
  return mix64(h ^ (static_cast<uint64_t>(k.rank) << 32 | k.unit));
}

/// Element i of the gradient whose prefix hash is `prefix` (padding not handled here).
SA_HD inline float grad_value_at(uint64_t prefix, GenMode mode, uint64_t i, uint8_t dyadic_max = 4) {
  const uint64_t h = mix64(prefix ^ i);
  if (mode == GenMode::dyadic) {
    const int r = dyadic_max;
    return static_cast<float>(static_cast<int>(h % (2 * r + 1)) - r) * 0.125f;
  }
  // 24 random bits -> a float in [-1, 1) with a full fp32 mantissa.
  return static_cast<float>(static_cast<int64_t>(h >> 40) - (1 << 23)) * 0x1p-23f;
}

/// g(seed, step, mb, rank, unit, i): the gradient element i; zero in the padding.
SA_HD inline float grad_value(const GradKey& k, uint64_t i) {
  return i >= k.numel ? 0.0f : grad_value_at(grad_prefix(k), k.mode, i, k.dyadic_max);
}

/// Identifies one rank's finished shard of one unit, for the exact reference.
struct OracleKey {
  uint64_t seed = 0;
  uint32_t step = 0, k = 0, world_size = 1, rank = 0, unit = 0;
  uint64_t numel = 0;         // the unit's true numel (padding beyond)
  uint64_t shard_offset = 0;  // first padded index of this rank's shard
  GenMode mode = GenMode::dyadic;
  DType grad_dtype = DType::fp32;  // values are rounded to it before summing, as backward does
  uint8_t dyadic_max = 4;          // as GradKey::dyadic_max
};

/// Expected shard element j: (1/N) * sum over all K micro-batches and N ranks of g, in fp64.
/// `prefixes` holds grad_prefix for (mb, rank) at index mb * N + rank (K * N entries).
SA_HD inline double expected_value(const OracleKey& o, const uint64_t* prefixes, uint64_t j) {
  const uint64_t i = o.shard_offset + j;
  if (i >= o.numel) return 0.0;
  double sum = 0;
  for (uint32_t q = 0; q < o.k * o.world_size; ++q) {
    float v = grad_value_at(prefixes[q], o.mode, i, o.dyadic_max);
    if (o.grad_dtype == DType::bf16) v = bf16_to_float(float_to_bf16(v));
    sum += v;
  }
  return sum / o.world_size;
}

/// The K * N generator prefixes that expected_value sums over.
inline std::vector<uint64_t> oracle_prefixes(const OracleKey& o) {
  std::vector<uint64_t> p;
  for (uint32_t mb = 0; mb < o.k; ++mb)
    for (uint32_t r = 0; r < o.world_size; ++r)
      p.push_back(grad_prefix(GradKey{o.seed, o.step, mb, r, o.unit, o.numel, o.mode, o.dyadic_max}));
  return p;
}

}  // namespace shardaccum
