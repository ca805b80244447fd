// Experiment (not part of the suite): the generator (compute-bound) beside the fp32 add (HBM-bound)
// on a higher-priority stream, with the add's grid capped at B blocks: how much of the generator's
// speed survives, and how fast the add runs alone, per B.
#include "common/gradient_gen.hpp"
#include "strategies/backend/cuda_kernels.hpp"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <vector>
#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__);                            \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)
using namespace shardaccum;
__global__ void add4(float* __restrict__ dst, const float* __restrict__ src, uint64_t n) {
  const uint64_t tid = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x,
                 stride = (uint64_t)gridDim.x * blockDim.x;
  auto* d4 = reinterpret_cast<float4*>(dst);
  const auto* s4 = reinterpret_cast<const float4*>(src);
  const uint64_t n4 = n / 4;
  uint64_t i = tid;
  for (; i + 3 * stride < n4; i += 4 * stride) {
    float4 a[4], b[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) a[k] = __ldcs(s4 + i + k * stride);
#pragma unroll
    for (int k = 0; k < 4; ++k) b[k] = __ldcs(d4 + i + k * stride);
#pragma unroll
    for (int k = 0; k < 4; ++k)
      __stcs(d4 + i + k * stride,
             make_float4(a[k].x + b[k].x, a[k].y + b[k].y, a[k].z + b[k].z, a[k].w + b[k].w));
  }
  for (; i < n4; i += stride) {
    float4 a = __ldcs(s4 + i), b = __ldcs(d4 + i);
    __stcs(d4 + i, make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w));
  }
}
int main() {
  const uint64_t gen_n = 256ull << 20, add_n = 256ull << 20;  // 1 GiB generated, 1 GiB += 1 GiB
  float *g, *a, *b;
  CK(cudaMalloc(&g, gen_n * 4));
  CK(cudaMalloc(&a, add_n * 4));
  CK(cudaMalloc(&b, add_n * 4));
  CK(cudaMemset(a, 0, add_n * 4));
  CK(cudaMemset(b, 0, add_n * 4));
  int lo, hi;
  CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t cs, ms;
  CK(cudaStreamCreateWithPriority(&cs, cudaStreamNonBlocking, lo));
  CK(cudaStreamCreateWithPriority(&ms, cudaStreamNonBlocking, hi));
  cudaEvent_t e0, e1, e2, e3;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventCreate(&e2);
  cudaEventCreate(&e3);
  GradKey key;
  key.seed = 1;
  key.numel = gen_n;
  auto gen = [&] { cuda::launch_generate(g, DType::fp32, gen_n, key, false, cs, nullptr); };
  auto best = [&](auto fn, cudaStream_t s) {
    float bestms = 1e9;
    for (int t = 0; t < 5; ++t) {
      cudaEventRecord(e0, s);
      fn();
      cudaEventRecord(e1, s);
      cudaEventSynchronize(e1);
      float ms_;
      cudaEventElapsedTime(&ms_, e0, e1);
      bestms = std::min(bestms, ms_);
    }
    return bestms;
  };
  gen();
  CK(cudaDeviceSynchronize());
  const float gen_ms = best(gen, cs);
  std::printf("generator alone: %.3f ms for %llu elements (%.1f Gelem/s)\n", gen_ms,
              (unsigned long long)gen_n, gen_n / (gen_ms * 1e6));
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  for (int blocks : {sms, 2 * sms, 4 * sms, 8 * sms, 8192, sms / 4, sms / 2, 3 * sms / 4}) {
    auto add = [&] { add4<<<blocks, 256, 0, ms>>>(a, b, add_n); };
    const float add_ms = best(add, ms);
    const double add_tbps = 12.0 * add_n / (add_ms * 1e9);
    // both: the generator once, then as many adds as it takes ~ the generator's time, beside it
    const int adds = std::max(1, (int)(gen_ms / add_ms + 0.5));
    float both = 1e9, gen_in = 0;
    for (int t = 0; t < 5; ++t) {
      CK(cudaDeviceSynchronize());
      cudaEventRecord(e0, cs);
      cudaEventRecord(e2, ms);
      gen();
      for (int i = 0; i < adds; ++i) add();
      cudaEventRecord(e1, cs);
      cudaEventRecord(e3, ms);
      CK(cudaDeviceSynchronize());
      float g_ms, a_ms;
      cudaEventElapsedTime(&g_ms, e0, e1);
      cudaEventElapsedTime(&a_ms, e2, e3);
      const float span = std::max(g_ms, a_ms);
      if (span < both) {
        both = span;
        gen_in = g_ms;
      }
    }
    std::printf("add grid %5d blocks: alone %.3f ms (%.2f TB/s); %d adds beside the generator: "
                "span %.3f ms (generator %.3f), in series %.3f, overlap %.3f\n",
                blocks, add_ms, add_tbps, adds, both, gen_in, gen_ms + adds * add_ms,
                (gen_ms + adds * add_ms) / both);
  }
  return 0;
}
namespace shardaccum::cuda {
[[noreturn]] void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  std::printf("%s: %s (%s:%d)\n", call, cudaGetErrorString(e), file, line);
  std::exit(1);
}
}  // namespace shardaccum::cuda
