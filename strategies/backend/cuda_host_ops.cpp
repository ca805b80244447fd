// The CPU add and scale on pinned memory (docs/DESIGN.md §3 `cpu-add`, FSDP2's offloaded foreach
// add): one `omp parallel for simd` per dtype pair, so each loop is a plain vectorizable stream.
// Scheduled dynamically in blocks of up to 1 Mi elements, not in one static block per thread: on
// one H200 VM (16 vCPUs) a static partition waits for its slowest thread, and the fp32 add of 1200
// MiB operands kept a median of 101-102 GB/s static against 112-120 dynamic, 91-93 against 101-105
// beside D2Hs (reports/h200-experiments-1204b).
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "strategies/backend/cuda_kernels.hpp"

namespace shardaccum::cuda {

namespace {

// Elements per block of the dynamic schedule: about 16 blocks per thread, each 4 Ki to 1 Mi
// elements (1 Mi fp32 is 4 MiB: small enough to even out, large enough that taking a block costs
// nothing beside streaming it).
int64_t block_of(int64_t m, int threads) {
  return std::clamp<int64_t>(m / (int64_t{16} * threads), int64_t{4} << 10, int64_t{1} << 20);
}

}  // namespace

void host_add(void* dst, DType dt, const void* src, DType st, uint64_t n, int threads) {
  const int64_t m = static_cast<int64_t>(n);
  threads = std::max(1, threads);
  const int64_t block = block_of(m, threads);
  if (dt == DType::fp32 && st == DType::fp32) {
    float* __restrict d = static_cast<float*>(dst);
    const float* __restrict s = static_cast<const float*>(src);
#pragma omp parallel for simd num_threads(threads) schedule(dynamic, block)
    for (int64_t i = 0; i < m; ++i) d[i] += s[i];
  } else if (dt == DType::fp32) {
    float* __restrict d = static_cast<float*>(dst);
    const uint16_t* __restrict s = static_cast<const uint16_t*>(src);
#pragma omp parallel for simd num_threads(threads) schedule(dynamic, block)
    for (int64_t i = 0; i < m; ++i) d[i] += bf16_to_float(s[i]);
  } else if (st == DType::fp32) {
    uint16_t* __restrict d = static_cast<uint16_t*>(dst);
    const float* __restrict s = static_cast<const float*>(src);
#pragma omp parallel for simd num_threads(threads) schedule(dynamic, block)
    for (int64_t i = 0; i < m; ++i) d[i] = float_to_bf16(bf16_to_float(d[i]) + s[i]);
  } else {
    uint16_t* __restrict d = static_cast<uint16_t*>(dst);
    const uint16_t* __restrict s = static_cast<const uint16_t*>(src);
#pragma omp parallel for simd num_threads(threads) schedule(dynamic, block)
    for (int64_t i = 0; i < m; ++i) d[i] = float_to_bf16(bf16_to_float(d[i]) + bf16_to_float(s[i]));
  }
}

void host_scale(void* dst, DType t, uint64_t n, float factor, int threads) {
  const int64_t m = static_cast<int64_t>(n);
  threads = std::max(1, threads);
  const int64_t block = block_of(m, threads);
  if (t == DType::fp32) {
    float* __restrict d = static_cast<float*>(dst);
#pragma omp parallel for simd num_threads(threads) schedule(dynamic, block)
    for (int64_t i = 0; i < m; ++i) d[i] *= factor;
  } else {
    uint16_t* __restrict d = static_cast<uint16_t*>(dst);
#pragma omp parallel for simd num_threads(threads) schedule(dynamic, block)
    for (int64_t i = 0; i < m; ++i) d[i] = float_to_bf16(bf16_to_float(d[i]) * factor);
  }
}

int default_host_threads(int world_size) {
  return std::max(1, omp_get_max_threads() / std::max(1, world_size));
}

}  // namespace shardaccum::cuda
