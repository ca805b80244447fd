// The _cuda functions of capi/shardaccum_gen.h: grid-stride kernels over the suite's generator
// (grad_value_at) and exact reference (expected_value), on the caller's stream (a torch stream in
// bench/real/). The comparison sums in fp64: a block reduction, then one atomicAdd per block.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "capi/gen_keys.hpp"
#include "capi/shardaccum_gen.h"
#include "common/dtype.hpp"
#include "common/gradient_gen.hpp"

using namespace shardaccum;

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 8192;  // grid-stride beyond (as strategies/backend/cuda_kernels.cu)

int blocks_for(uint64_t items) {
  const uint64_t b = (items + kThreads - 1) / kThreads;
  return static_cast<int>(std::clamp<uint64_t>(b, 1, kMaxBlocks));
}

template <DType T>
__global__ void fill_kernel(GenParams p, uint64_t numel, uint64_t first, uint64_t count,
                            void* out) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < count;
       j += stride) {
    const uint64_t i = first + j;
    const float v = i >= numel ? 0.0f : grad_value_at(p, i);
    if constexpr (T == DType::fp32)
      static_cast<float*>(out)[j] = v;
    else
      static_cast<uint16_t*>(out)[j] = float_to_bf16(v);
  }
}

struct Sums {
  double err_norm2, ref_norm2;
  unsigned long long nonfinite;
};

__device__ Sums warp_sum(Sums s) {
  for (int o = 16; o > 0; o >>= 1) {
    s.err_norm2 += __shfl_down_sync(0xffffffffu, s.err_norm2, o);
    s.ref_norm2 += __shfl_down_sync(0xffffffffu, s.ref_norm2, o);
    s.nonfinite += __shfl_down_sync(0xffffffffu, s.nonfinite, o);
  }
  return s;
}

// `sums` is followed in the same allocation by the K*N prefixes (one allocation per call).
template <DType T>
__global__ void compare_kernel(OracleKey key, const uint64_t* prefixes, uint64_t count,
                               const void* x, Sums* sums) {
  Sums s{0, 0, 0};
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < count;
       j += stride) {
    double v;
    if constexpr (T == DType::fp32)
      v = static_cast<const float*>(x)[j];
    else
      v = bf16_to_float(static_cast<const uint16_t*>(x)[j]);
    capi::compare_element(key, prefixes, j, v, s.err_norm2, s.ref_norm2, s.nonfinite);
  }
  __shared__ Sums warps[kThreads / 32];
  s = warp_sum(s);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warps[warp] = s;
  __syncthreads();
  if (warp != 0) return;
  s = lane < static_cast<int>(blockDim.x / 32) ? warps[lane] : Sums{0, 0, 0};
  s = warp_sum(s);
  if (lane == 0) {
    atomicAdd(&sums->err_norm2, s.err_norm2);
    atomicAdd(&sums->ref_norm2, s.ref_norm2);
    atomicAdd(&sums->nonfinite, s.nonfinite);
  }
}

}  // namespace

extern "C" {

int sa_gen_has_cuda(void) { return 1; }

int sa_grad_fill_cuda(const sa_grad_key* key, uint64_t first, uint64_t count, void* out,
                      int32_t out_dtype, void* stream) {
  if (out_dtype != 0 && out_dtype != 1) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const GradKey k = capi::grad_key(*key);
  const GenParams p = gen_params(k);  // once per buffer, not per thread
  auto* s = static_cast<cudaStream_t>(stream);
  if (out_dtype == 0)
    fill_kernel<DType::fp32><<<blocks_for(count), kThreads, 0, s>>>(p, k.numel, first, count, out);
  else
    fill_kernel<DType::bf16><<<blocks_for(count), kThreads, 0, s>>>(p, k.numel, first, count, out);
  return cudaGetLastError();
}

int sa_compare_cuda(const sa_oracle_key* key, uint64_t first, uint64_t count, const void* x,
                    int32_t x_dtype, double out3[3], void* stream) {
  out3[0] = out3[1] = out3[2] = 0;
  if (count == 0) return cudaSuccess;
  const OracleKey o = capi::oracle_key(*key, first);
  const std::vector<uint64_t> prefixes = oracle_prefixes(o);
  auto* s = static_cast<cudaStream_t>(stream);
  const size_t bytes = sizeof(Sums) + prefixes.size() * sizeof(uint64_t);
  void* dev = nullptr;
  cudaError_t rc = cudaMallocAsync(&dev, bytes, s);
  if (rc != cudaSuccess) return rc;
  auto* sums = static_cast<Sums*>(dev);
  auto* dev_prefixes = reinterpret_cast<uint64_t*>(sums + 1);  // Sums is 24 bytes: 8-aligned
  Sums host{0, 0, 0};
  rc = cudaMemsetAsync(sums, 0, sizeof(Sums), s);
  // Pageable source: the copy has staged it when cudaMemcpyAsync returns, so `prefixes` may go.
  if (rc == cudaSuccess)
    rc = cudaMemcpyAsync(dev_prefixes, prefixes.data(), prefixes.size() * sizeof(uint64_t),
                         cudaMemcpyHostToDevice, s);
  if (rc == cudaSuccess) {
    if (capi::dtype_of(x_dtype) == DType::bf16)
      compare_kernel<DType::bf16>
          <<<blocks_for(count), kThreads, 0, s>>>(o, dev_prefixes, count, x, sums);
    else
      compare_kernel<DType::fp32>
          <<<blocks_for(count), kThreads, 0, s>>>(o, dev_prefixes, count, x, sums);
    rc = cudaGetLastError();
  }
  if (rc == cudaSuccess) rc = cudaMemcpyAsync(&host, sums, sizeof(Sums), cudaMemcpyDeviceToHost, s);
  const cudaError_t freed = cudaFreeAsync(dev, s);
  const cudaError_t synced = cudaStreamSynchronize(s);
  if (rc == cudaSuccess) rc = freed != cudaSuccess ? freed : synced;
  if (rc != cudaSuccess) return rc;
  out3[0] = host.err_norm2;
  out3[1] = host.ref_norm2;
  out3[2] = static_cast<double>(host.nonfinite);
  return cudaSuccess;
}

}  // extern "C"
