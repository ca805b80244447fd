// The CPU add and scale on pinned memory (docs/DESIGN.md §3 `cpu-add`, FSDP2's offloaded foreach
// add): one `omp parallel for simd` per dtype pair, so each loop is a plain vectorizable stream.
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "strategies/backend/cuda_kernels.hpp"

namespace shardaccum::cuda {

void host_add(void* dst, DType dt, const void* src, DType st, uint64_t n, int threads) {
  const int64_t m = static_cast<int64_t>(n);
  threads = std::max(1, threads);
  if (dt == DType::fp32 && st == DType::fp32) {
    float* __restrict d = static_cast<float*>(dst);
    const float* __restrict s = static_cast<const float*>(src);
#pragma omp parallel for simd num_threads(threads) schedule(static)
    for (int64_t i = 0; i < m; ++i) d[i] += s[i];
  } else if (dt == DType::fp32) {
    float* __restrict d = static_cast<float*>(dst);
    const uint16_t* __restrict s = static_cast<const uint16_t*>(src);
#pragma omp parallel for simd num_threads(threads) schedule(static)
    for (int64_t i = 0; i < m; ++i) d[i] += bf16_to_float(s[i]);
  } else if (st == DType::fp32) {
    uint16_t* __restrict d = static_cast<uint16_t*>(dst);
    const float* __restrict s = static_cast<const float*>(src);
#pragma omp parallel for simd num_threads(threads) schedule(static)
    for (int64_t i = 0; i < m; ++i) d[i] = float_to_bf16(bf16_to_float(d[i]) + s[i]);
  } else {
    uint16_t* __restrict d = static_cast<uint16_t*>(dst);
    const uint16_t* __restrict s = static_cast<const uint16_t*>(src);
#pragma omp parallel for simd num_threads(threads) schedule(static)
    for (int64_t i = 0; i < m; ++i) d[i] = float_to_bf16(bf16_to_float(d[i]) + bf16_to_float(s[i]));
  }
}

void host_scale(void* dst, DType t, uint64_t n, float factor, int threads) {
  const int64_t m = static_cast<int64_t>(n);
  threads = std::max(1, threads);
  if (t == DType::fp32) {
    float* __restrict d = static_cast<float*>(dst);
#pragma omp parallel for simd num_threads(threads) schedule(static)
    for (int64_t i = 0; i < m; ++i) d[i] *= factor;
  } else {
    uint16_t* __restrict d = static_cast<uint16_t*>(dst);
#pragma omp parallel for simd num_threads(threads) schedule(static)
    for (int64_t i = 0; i < m; ++i) d[i] = float_to_bf16(bf16_to_float(d[i]) * factor);
  }
}

int default_host_threads(int world_size) {
  return std::max(1, omp_get_max_threads() / std::max(1, world_size));
}

}  // namespace shardaccum::cuda
