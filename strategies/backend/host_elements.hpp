#pragma once
// Element access by dtype for host loops (fp32 as is, bf16 through its bit pattern).
#include <cstdint>

#include "common/dtype.hpp"

namespace shardaccum::detail {

inline float load(const void* p, DType t, uint64_t i) {
  return t == DType::fp32 ? static_cast<const float*>(p)[i]
                          : bf16_to_float(static_cast<const uint16_t*>(p)[i]);
}

inline void store(void* p, DType t, uint64_t i, float v) {
  if (t == DType::fp32)
    static_cast<float*>(p)[i] = v;
  else
    static_cast<uint16_t*>(p)[i] = float_to_bf16(v);
}

/// Fills n elements with a quiet NaN: new and freed buffers read as poison, never as stale data.
void poison(void* p, DType t, uint64_t n);

}  // namespace shardaccum::detail
