#pragma once
// The oracle's gradient generator (docs/DESIGN.md §5): a counter-based hash, one __host__
// __device__ function shared by the backward of every backend and by the exact reference.
//
// Why the values look as they do (issue 11, item 14). A loss must never look like a correct sum:
//  * No value is zero (dyadic k/8 with k in ±1..±r): adding, losing or misplacing ONE contribution
//    changes every element it touches.
//  * Several lost contributions of signed values can cancel (1-element unit, SSSS, seed 8 lost
//    three values summing to 0). So some elements are *witnesses*: element 0, every
//    kWitnessStride-th element, and the first element of every rank's shard. At a witness the
//    value is s * m_u / 8 for every micro-batch and rank, with the sign s = ±1 from
//    (seed, step, unit, i) only and the magnitude m_u = 1 + unit mod r. So all K*N contributions
//    there are equal; the finished element is (m_u s / 8N) * C, where C counts the contributions
//    that arrived. Proof sketch: any error that loses or duplicates contributions of a unit's
//    shard changes C (losses only: C < K*N; duplicates only: C > K*N), so the witness is off by
//    |C - K*N| m_u / 8N >= 1/(8N) and cannot cancel; a contribution of unit u added to unit u'
//    either changes C at u (a loss) or adds a nonzero value at u'; swapped with u''s own, it
//    changes the witness by (s_u m_u - s_u' m_u')/8 != 0 whenever m_u != m_u' (units closer than r,
//    in particular adjacent ones, for r >= 2).
//    Error is WRONG when that deviation exceeds bound * ||ref||: with fp32 accumulation (bound
//    2^-23) for every shard below 2^30 elements at r*K*N <= 256; in bf16 accumulation the
//    witness alone suffices for small shards and the non-witness elements carry large ones.
//  * Not proved, only tested: compound errors that lose one contribution and duplicate another
//    (C unchanged at the witness; caught by the non-witness elements with high probability), and
//    swaps between units with equal m_u.
//  * The witnesses are a 1/kWitnessStride sparse set, so the positive control keeps its norm-wise
//    error: on SSSS K=4 with three of four micro-batches lost, the independent zero-mean values
//    give sqrt(3/4) = 0.866 and the same-signed witnesses (error 3/4) move it below 0.001.
// Sums stay exact as before: |any partial sum| <= r*K*N/8, within dyadic_range's budget.
#include <cstdint>
#include <vector>

#include "common/dtype.hpp"

namespace shardaccum {

enum class GenMode : uint8_t {
  dyadic,  // k/8 with integer 1 <= |k| <= r (r <= 4): every sum is exact in fp32, and in bf16 for
           // r*K*N <= 256
  random,  // full-mantissa uniform values in [-1, 1): for precision studies
};

/// Every kWitnessStride-th element of a unit is a witness (as are element 0 and shard starts).
inline constexpr uint64_t kWitnessStride = 1024;

/// Identifies one micro-batch's gradient of one unit on one rank.
struct GradKey {
  uint64_t seed = 0;
  uint32_t step = 0, mb = 0, rank = 0, unit = 0;
  uint64_t numel = 0;  // elements >= numel are padding: zero
  GenMode mode = GenMode::dyadic;
  uint8_t dyadic_max = 4;  // dyadic values are k/8 with integer 1 <= |k| <= dyadic_max (1..4)
  uint64_t shard = 0;      // elements per rank's shard: i % shard == 0 is a witness (0: none extra)
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

/// The hash of (seed, step, unit) alone: the witnesses' sign, the same for every mb and rank.
SA_HD inline uint64_t witness_prefix(uint64_t seed, uint32_t step, uint32_t unit) {
  const uint64_t h = mix64(seed ^ 0x3717e55ull);
  return mix64(h ^ (static_cast<uint64_t>(step) << 32 | unit));
}

/// What one buffer's elements depend on, computed once per buffer (host loop or kernel thread).
struct GenParams {
  uint64_t prefix = 0;   // grad_prefix: this (mb, rank)'s values
  uint64_t witness = 0;  // witness_prefix: the unit's witness signs
  uint64_t shard = 0;    // as GradKey::shard
  GenMode mode = GenMode::dyadic;
  uint8_t dyadic_max = 4;
  uint8_t witness_mag = 1;  // m_u = 1 + unit mod dyadic_max
};

SA_HD inline GenParams gen_params(const GradKey& k) {
  const uint8_t r = k.dyadic_max ? k.dyadic_max : 1;
  return GenParams{grad_prefix(k),
                   witness_prefix(k.seed, k.step, k.unit),
                   k.shard,
                   k.mode,
                   r,
                   static_cast<uint8_t>(1 + k.unit % r)};
}

/// Whether element i is a witness (see the file comment).
SA_HD inline bool is_witness(uint64_t i, uint64_t shard) {
  return i % kWitnessStride == 0 || (shard != 0 && i % shard == 0);
}

/// Element i of the buffer described by p (padding not handled here). Never zero.
SA_HD inline float grad_value_at(const GenParams& p, uint64_t i) {
  const bool w = is_witness(i, p.shard);
  const uint64_t h = mix64((w ? p.witness : p.prefix) ^ i);
  if (p.mode == GenMode::dyadic) {
    const int r = p.dyadic_max;
    if (w) return static_cast<float>((h & 1) ? p.witness_mag : -p.witness_mag) * 0.125f;
    const int idx = static_cast<int>(h % (uint64_t{2} * r));  // 0..2r-1 -> -r..-1, 1..r
    return static_cast<float>(idx < r ? idx - r : idx - r + 1) * 0.125f;
  }
  // 24 random bits -> a float in [-1, 1) with a full fp32 mantissa; witnesses: sign from the
  // unit's hash, magnitude in [0.5, 1) (no value near zero that a loss could hide behind).
  if (w) {
    const float m = 0.5f + static_cast<float>(h >> 41) * 0x1p-24f;
    return (h & 1) ? m : -m;
  }
  return static_cast<float>(static_cast<int64_t>(h >> 40) - (1 << 23)) * 0x1p-23f;
}

/// g(seed, step, mb, rank, unit, i): the gradient element i; zero in the padding.
SA_HD inline float grad_value(const GradKey& k, uint64_t i) {
  return i >= k.numel ? 0.0f : grad_value_at(gen_params(k), i);
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
  uint64_t shard = 0;              // as GradKey::shard (the witnesses)
};

/// The GradKey of micro-batch mb on rank r that expected_value sums.
inline GradKey grad_key_of(const OracleKey& o, uint32_t mb, uint32_t r) {
  return GradKey{o.seed, o.step, mb, r, o.unit, o.numel, o.mode, o.dyadic_max, o.shard};
}

/// Expected shard element j: (1/N) * sum over all K micro-batches and N ranks of g, in fp64.
/// `prefixes` holds grad_prefix for (mb, rank) at index mb * N + rank (K * N entries).
SA_HD inline double expected_value(const OracleKey& o, const uint64_t* prefixes, uint64_t j) {
  const uint64_t i = o.shard_offset + j;
  if (i >= o.numel) return 0.0;
  // The witness fields are the same for every (mb, rank); their hash only where one is needed.
  const uint8_t r = o.dyadic_max ? o.dyadic_max : 1;
  GenParams p{0,       is_witness(i, o.shard) ? witness_prefix(o.seed, o.step, o.unit) : 0,
              o.shard, o.mode,
              r,       static_cast<uint8_t>(1 + o.unit % r)};
  double sum = 0;
  for (uint32_t q = 0; q < o.k * o.world_size; ++q) {
    p.prefix = prefixes[q];
    float v = grad_value_at(p, i);
    if (o.grad_dtype == DType::bf16) v = bf16_to_float(float_to_bf16(v));
    sum += v;
  }
  return sum / o.world_size;
}

/// The K * N generator prefixes that expected_value sums over.
inline std::vector<uint64_t> oracle_prefixes(const OracleKey& o) {
  std::vector<uint64_t> p;
  for (uint32_t mb = 0; mb < o.k; ++mb)
    for (uint32_t r = 0; r < o.world_size; ++r) p.push_back(grad_prefix(grad_key_of(o, mb, r)));
  return p;
}

}  // namespace shardaccum
