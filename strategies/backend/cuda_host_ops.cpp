// The CPU add and scale on pinned memory (docs/DESIGN.md §3 `cpu-add`, FSDP2's offloaded foreach
// add): one `omp parallel for simd` per dtype pair, so each loop is a plain vectorizable stream.
// Split as set_cpu_add_split says (host_split.hpp): the suite's dynamic blocks of up to 1 Mi
// elements, not one static block per thread (on one H200 VM, 16 vCPUs, the fp32 add of 1200 MiB
// operands kept a median of 101-102 GB/s static against 112-120 dynamic, 91-93 against 101-105
// beside D2Hs: reports/h200-experiments-1204b), or PyTorch's at::parallel_for, whose static chunks
// a preset of FSDP2 adds with.
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "strategies/backend/cuda_kernels.hpp"
#include "strategies/backend/host_split.hpp"

namespace shardaccum::cuda {

namespace {

// PyTorch's split (torch_split): one contiguous chunk per thread, vectorized within it.
template <class Op>
void torch_parallel_for(int64_t m, int threads, Op op) {
  const TorchSplit t = torch_split(m, threads);
#pragma omp parallel num_threads(static_cast <int>(t.threads))
  {
    const int64_t b = omp_get_thread_num() * t.chunk, e = std::min(m, b + t.chunk);
#pragma omp simd
    for (int64_t i = b; i < e; ++i) op(i);
  }
}

// host_add's loops under PyTorch's split.
void host_add_torch(void* dst, DType dt, const void* src, DType st, int64_t m, int threads) {
  if (dt == DType::fp32 && st == DType::fp32) {
    float* __restrict d = static_cast<float*>(dst);
    const float* __restrict s = static_cast<const float*>(src);
    torch_parallel_for(m, threads, [=](int64_t i) { d[i] += s[i]; });
  } else if (dt == DType::fp32) {
    float* __restrict d = static_cast<float*>(dst);
    const uint16_t* __restrict s = static_cast<const uint16_t*>(src);
    torch_parallel_for(m, threads, [=](int64_t i) { d[i] += bf16_to_float(s[i]); });
  } else if (st == DType::fp32) {
    uint16_t* __restrict d = static_cast<uint16_t*>(dst);
    const float* __restrict s = static_cast<const float*>(src);
    torch_parallel_for(m, threads,
                       [=](int64_t i) { d[i] = float_to_bf16(bf16_to_float(d[i]) + s[i]); });
  } else {
    uint16_t* __restrict d = static_cast<uint16_t*>(dst);
    const uint16_t* __restrict s = static_cast<const uint16_t*>(src);
    torch_parallel_for(m, threads, [=](int64_t i) {
      d[i] = float_to_bf16(bf16_to_float(d[i]) + bf16_to_float(s[i]));
    });
  }
}

}  // namespace

void host_add(void* dst, DType dt, const void* src, DType st, uint64_t n, int threads,
              CpuAddSplit split) {
  const int64_t m = static_cast<int64_t>(n);
  threads = std::max(1, threads);
  if (split == CpuAddSplit::torch) {
    host_add_torch(dst, dt, src, st, m, threads);
    return;
  }
  const int64_t block = split_block(m, threads);
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
  const int64_t block = split_block(m, threads);
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
