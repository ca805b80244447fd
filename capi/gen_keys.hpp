#pragma once
// The C keys of capi/shardaccum_gen.h as the suite's own GradKey / OracleKey, and the oracle's
// per-element sums of sa_compare_*: what gen_host.cpp and gen_cuda.cu share.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "capi/shardaccum_gen.h"
#include "common/gradient_gen.hpp"
#include "common/shard_check.hpp"

namespace shardaccum::capi {

/// A dtype code of the C ABI: 1 bf16, anything else fp32.
inline DType dtype_of(int32_t code) { return code == 1 ? DType::bf16 : DType::fp32; }
/// A generator mode code: 0 dyadic, anything else random.
inline GenMode mode_of(int32_t code) { return code == 0 ? GenMode::dyadic : GenMode::random; }
/// dyadic_max as GradKey holds it (uint8_t; gen_params reads 0 as 1).
inline uint8_t dyadic_of(int32_t v) { return static_cast<uint8_t>(std::clamp(v, 0, 255)); }

inline GradKey grad_key(const sa_grad_key& k) {
  return GradKey{
      k.seed, k.step, k.mb, k.rank, k.unit, k.numel, mode_of(k.mode), dyadic_of(k.dyadic_max),
      k.shard};
}

/// The whole unit's reference as a one-shard OracleKey whose shard starts at `first`: then
/// expected_value(key, prefixes, j) is unit element first + j (rank plays no part in it).
inline OracleKey oracle_key(const sa_oracle_key& k, uint64_t first) {
  OracleKey o;
  o.seed = k.seed;
  o.step = k.step;
  o.k = k.k;
  o.world_size = k.world_size;
  o.unit = k.unit;
  o.numel = k.numel;
  o.shard_offset = first;
  o.mode = mode_of(k.mode);
  o.grad_dtype = dtype_of(k.grad_dtype);
  o.dyadic_max = dyadic_of(k.dyadic_max);
  o.shard = k.shard;
  return o;
}

/// Folds element j (value v in fp64) into the sums of sa_compare_*: common/shard_check.hpp's
/// check_element, with its padding term turned into error (a caller such as FSDP owns its padding,
/// so a nonzero padding value is an error against e = 0 there, not a count of its own).
template <class Count>
SA_HD inline void compare_element(const OracleKey& key, const uint64_t* prefixes, uint64_t j,
                                  double v, double& err_norm2, double& ref_norm2,
                                  Count& nonfinite) {
  Count bad_padding = 0;
  check_element(key, prefixes, j, v, err_norm2, ref_norm2, nonfinite, bad_padding);
  if (bad_padding != 0) err_norm2 += v * v;  // (v - e)^2 with e = 0 in the padding
}

}  // namespace shardaccum::capi
