// Device kernels of the cuda backend: grid-stride loops over 8 elements per step (16-byte accesses
// for bf16, two for fp32), a scalar tail, and the oracle's fp64 comparison with a block reduction.
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "strategies/backend/cuda_check.hpp"
#include "strategies/backend/cuda_kernels.hpp"

namespace shardaccum::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 8192;  // grid-stride beyond: H200 has 132 SMs of 2048 threads
constexpr int kVec = 8;

int blocks_for(uint64_t items) {
  const uint64_t b = (items + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

// The fp32 add (add_f32_kernel: four float4 of each operand in flight per thread) runs on at most
// kMemBlocksPerSm blocks per SM (DeviceAddGrid::two_per_sm; DeviceAddGrid::torch takes the full
// grid, as PyTorch's adds, device_add_grid.hpp): enough to keep HBM busy alone, few enough to leave
// SMs to a compute-bound kernel beside it. The other adds and the scale (one 16-byte access in
// flight per thread) keep the full grid: their rate on fewer blocks is not measured. On one H200
// (reports/h200-experiments-1204/README.md, "Memory-bound kernels beside the generator"): a 1 GiB
// fp32 += on 264 blocks ran at 4.05 TB/s alone against 4.17 on 8192, and beside the generator on a
// lower-priority stream the two overlapped 1.57x (in series / together) against 1.05x with 8192
// blocks, which take every SM at the higher priority and stall the generator.
constexpr int kMemBlocksPerSm = 2;

int sm_count() {
  static std::atomic<int> counts[64] = {};  // per device; 0 until asked
  int dev = 0;
  SA_CUDA_CHECK(cudaGetDevice(&dev));
  const bool cached = dev >= 0 && dev < 64;
  int n = cached ? counts[dev].load(std::memory_order_relaxed) : 0;
  if (n == 0) {
    SA_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    if (cached) counts[dev].store(n, std::memory_order_relaxed);
  }
  return n;
}

int mem_blocks_for(uint64_t items) {
  return std::min(blocks_for(items), std::max(1, kMemBlocksPerSm * sm_count()));
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

__device__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Kernel stamps (docs/DESIGN.md §6): slot[0] = the earliest block start, slot[1] = ~(the latest
// block end), both by atomicMin on a slot the step set to all ones: the kernel's execution as a
// profiler's kernel record has it, without the time it queued for SMs or for the host.
__device__ __forceinline__ void stamp_begin(unsigned long long* slot) {
  if (slot && threadIdx.x == 0) atomicMin(slot, globaltimer_ns());
}
__device__ __forceinline__ void stamp_end(unsigned long long* slot) {
  if (!slot) return;
  __syncthreads();  // the block's last thread is done
  if (threadIdx.x == 0) atomicMin(slot + 1, ~globaltimer_ns());
}
using Slot = unsigned long long*;
Slot as_slot(uint64_t* p) { return reinterpret_cast<Slot>(p); }

// ---- element access by dtype -------------------------------------------------------------------
template <DType T>
__device__ __forceinline__ float load1(const void* p, uint64_t i) {
  if constexpr (T == DType::fp32)
    return static_cast<const float*>(p)[i];
  else
    return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
}
template <DType T>
__device__ __forceinline__ void store1(void* p, uint64_t i, float v) {
  if constexpr (T == DType::fp32)
    static_cast<float*>(p)[i] = v;
  else
    static_cast<uint16_t*>(p)[i] = float_to_bf16(v);
}

/// Loads elements [8v, 8v + 8): one 16-byte load for bf16, two for fp32.
template <DType T>
__device__ __forceinline__ void load8(const void* p, uint64_t v, float (&x)[kVec]) {
  if constexpr (T == DType::fp32) {
    // Streaming (evict-first) accesses: every byte is touched once per kernel.
    const float4* q = static_cast<const float4*>(p) + 2 * v;
    const float4 a = __ldcs(q), b = __ldcs(q + 1);
    x[0] = a.x;
    x[1] = a.y;
    x[2] = a.z;
    x[3] = a.w;
    x[4] = b.x;
    x[5] = b.y;
    x[6] = b.z;
    x[7] = b.w;
  } else {
    const uint4 u = __ldcs(static_cast<const uint4*>(p) + v);
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      x[2 * k] = bf16_to_float(static_cast<uint16_t>(w[k] & 0xffffu));
      x[2 * k + 1] = bf16_to_float(static_cast<uint16_t>(w[k] >> 16));
    }
  }
}
template <DType T>
__device__ __forceinline__ void store8(void* p, uint64_t v, const float (&x)[kVec]) {
  if constexpr (T == DType::fp32) {
    float4* q = static_cast<float4*>(p) + 2 * v;
    __stcs(q, make_float4(x[0], x[1], x[2], x[3]));
    __stcs(q + 1, make_float4(x[4], x[5], x[6], x[7]));
  } else {
    uint32_t w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
      w[k] = static_cast<uint32_t>(float_to_bf16(x[2 * k])) |
             static_cast<uint32_t>(float_to_bf16(x[2 * k + 1])) << 16;
    __stcs(static_cast<uint4*>(p) + v, make_uint4(w[0], w[1], w[2], w[3]));
  }
}

// ---- generate
// ------------------------------------------------------------------------------------
template <DType T, bool Vec>
__global__ void generate_kernel(void* grad, uint64_t n, GradKey key, bool accumulate, Slot st) {
  stamp_begin(st);
  const uint64_t tid = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  // grad_value(key, i), with the per-buffer hash prefix computed once per thread.
  const GenParams params = gen_params(key);
  auto g_at = [&](uint64_t i) { return i >= key.numel ? 0.0f : grad_value_at(params, i); };
  uint64_t done = 0;
  if constexpr (Vec) {
    const uint64_t nv = n / kVec;
    for (uint64_t v = tid; v < nv; v += stride) {
      float x[kVec] = {};
      if (accumulate) load8<T>(grad, v, x);
#pragma unroll
      for (int k = 0; k < kVec; ++k)
        x[k] = accumulate ? x[k] + g_at(v * kVec + k) : g_at(v * kVec + k);
      store8<T>(grad, v, x);
    }
    done = nv * kVec;
  }
  for (uint64_t i = done + tid; i < n; i += stride)
    store1<T>(grad, i, accumulate ? load1<T>(grad, i) + g_at(i) : g_at(i));
  stamp_end(st);
}

// ---- add / convert
// -------------------------------------------------------------------------------
template <DType D, DType S, bool Assign, bool Vec>
__global__ void add_kernel(void* dst, const void* src, uint64_t n, Slot st) {
  stamp_begin(st);
  const uint64_t tid = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  uint64_t done = 0;
  if constexpr (Vec) {
    const uint64_t nv = n / kVec;
    for (uint64_t v = tid; v < nv; v += stride) {
      float d[kVec], s[kVec];
      load8<S>(src, v, s);
      if constexpr (!Assign) load8<D>(dst, v, d);
#pragma unroll
      for (int k = 0; k < kVec; ++k) d[k] = Assign ? s[k] : d[k] + s[k];
      store8<D>(dst, v, d);
    }
    done = nv * kVec;
  }
  for (uint64_t i = done + tid; i < n; i += stride) {
    const float s = load1<S>(src, i);
    store1<D>(dst, i, Assign ? s : load1<D>(dst, i) + s);
  }
  stamp_end(st);
}

/// fp32 += fp32 (the accumulate of every fp32 case): one float4 per access, so that each warp-wide
/// load or store covers 512 contiguous bytes, and four independent float4 of each operand in
/// flight per thread before the first add.
constexpr int kF32Unroll = 4;

template <bool Assign>
__global__ void add_f32_kernel(float* __restrict__ dst, const float* __restrict__ src, uint64_t n,
                               Slot st) {
  stamp_begin(st);
  const uint64_t tid = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  auto* d4 = reinterpret_cast<float4*>(dst);
  const auto* s4 = reinterpret_cast<const float4*>(src);
  const uint64_t n4 = n / 4;
  uint64_t i = tid;
  for (; i + (kF32Unroll - 1) * stride < n4; i += kF32Unroll * stride) {
    float4 a[kF32Unroll], b[kF32Unroll];
#pragma unroll
    for (int k = 0; k < kF32Unroll; ++k) a[k] = __ldcs(s4 + i + k * stride);
    if constexpr (!Assign) {
#pragma unroll
      for (int k = 0; k < kF32Unroll; ++k) b[k] = __ldcs(d4 + i + k * stride);
    }
#pragma unroll
    for (int k = 0; k < kF32Unroll; ++k) {
      if constexpr (!Assign)
        a[k] = make_float4(b[k].x + a[k].x, b[k].y + a[k].y, b[k].z + a[k].z, b[k].w + a[k].w);
      __stcs(d4 + i + k * stride, a[k]);
    }
  }
  for (; i < n4; i += stride) {
    float4 a = __ldcs(s4 + i);
    if constexpr (!Assign) {
      const float4 b = __ldcs(d4 + i);
      a = make_float4(b.x + a.x, b.y + a.y, b.z + a.z, b.w + a.w);
    }
    __stcs(d4 + i, a);
  }
  for (uint64_t j = 4 * n4 + tid; j < n; j += stride) dst[j] = Assign ? src[j] : dst[j] + src[j];
  stamp_end(st);
}

// ---- scale
// ---------------------------------------------------------------------------------------
template <DType T, bool Vec>
__global__ void scale_kernel(void* dst, uint64_t n, float f, Slot st) {
  stamp_begin(st);
  const uint64_t tid = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  uint64_t done = 0;
  if constexpr (Vec) {
    const uint64_t nv = n / kVec;
    for (uint64_t v = tid; v < nv; v += stride) {
      float d[kVec];
      load8<T>(dst, v, d);
#pragma unroll
      for (int k = 0; k < kVec; ++k) d[k] *= f;
      store8<T>(dst, v, d);
    }
    done = nv * kVec;
  }
  for (uint64_t i = done + tid; i < n; i += stride) store1<T>(dst, i, load1<T>(dst, i) * f);
  stamp_end(st);
}

// ---- oracle
// --------------------------------------------------------------------------------------
__device__ __forceinline__ CheckSums warp_sum(CheckSums c) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    c.err_norm2 += __shfl_down_sync(0xffffffffu, c.err_norm2, o);
    c.ref_norm2 += __shfl_down_sync(0xffffffffu, c.ref_norm2, o);
    c.nonfinite += __shfl_down_sync(0xffffffffu, c.nonfinite, o);
    c.bad_padding += __shfl_down_sync(0xffffffffu, c.bad_padding, o);
  }
  return c;
}

/// Sums c over the block (fixed order: deterministic); the result is valid in thread 0.
__device__ CheckSums block_sum(CheckSums c) {
  __shared__ CheckSums warps[kThreads / 32];
  c = warp_sum(c);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warps[warp] = c;
  __syncthreads();
  if (warp == 0) {
    c = lane < static_cast<int>(blockDim.x / 32) ? warps[lane] : CheckSums{0, 0, 0, 0};
    c = warp_sum(c);
  }
  return c;
}

// check_element (common/shard_check.hpp): the host backend's rule, element by element.
template <DType T>
__global__ void check_kernel(const void* shard, uint64_t n, uint64_t j0, OracleKey key,
                             const uint64_t* prefixes, CheckSums* partials) {
  CheckSums c{0, 0, 0, 0};
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < n;
       j += stride)
    check_element(key, prefixes, j0 + j, load1<T>(shard, j), c.err_norm2, c.ref_norm2, c.nonfinite,
                  c.bad_padding);
  c = block_sum(c);
  if (threadIdx.x == 0) partials[blockIdx.x] = c;
}

__global__ void check_final_kernel(const CheckSums* partials, int count, CheckSums* result) {
  CheckSums c{0, 0, 0, 0};
  for (int b = threadIdx.x; b < count; b += blockDim.x) {
    c.err_norm2 += partials[b].err_norm2;
    c.ref_norm2 += partials[b].ref_norm2;
    c.nonfinite += partials[b].nonfinite;
    c.bad_padding += partials[b].bad_padding;
  }
  c = block_sum(c);
  if (threadIdx.x == 0) {
    result->err_norm2 += c.err_norm2;
    result->ref_norm2 += c.ref_norm2;
    result->nonfinite += c.nonfinite;
    result->bad_padding += c.bad_padding;
  }
}

template <DType D, DType S, bool Assign>
void add_typed(void* dst, const void* src, uint64_t n, Slot st, cudaStream_t s,
               DeviceAddGrid grid) {
  if constexpr (D == DType::fp32 && S == DType::fp32) {
    if (aligned16(dst) && aligned16(src)) {
      const uint64_t items = n / (4 * kF32Unroll) + 1;
      const int blocks = grid == DeviceAddGrid::torch ? blocks_for(items) : mem_blocks_for(items);
      add_f32_kernel<Assign><<<blocks, kThreads, 0, s>>>(static_cast<float*>(dst),
                                                         static_cast<const float*>(src), n, st);
      return;
    }
  }
  if (aligned16(dst) && aligned16(src))
    add_kernel<D, S, Assign, true><<<blocks_for(n / kVec + 1), kThreads, 0, s>>>(dst, src, n, st);
  else
    add_kernel<D, S, Assign, false><<<blocks_for(n), kThreads, 0, s>>>(dst, src, n, st);
}

template <bool Assign>
void add_dispatch(void* dst, DType dt, const void* src, DType st, uint64_t n, Slot slot,
                  cudaStream_t s, DeviceAddGrid grid) {
  if (dt == DType::fp32 && st == DType::fp32)
    add_typed<DType::fp32, DType::fp32, Assign>(dst, src, n, slot, s, grid);
  else if (dt == DType::fp32)
    add_typed<DType::fp32, DType::bf16, Assign>(dst, src, n, slot, s, grid);
  else if (st == DType::fp32)
    add_typed<DType::bf16, DType::fp32, Assign>(dst, src, n, slot, s, grid);
  else
    add_typed<DType::bf16, DType::bf16, Assign>(dst, src, n, slot, s, grid);
}

}  // namespace

void launch_generate(void* grad, DType t, uint64_t n, const GradKey& key, bool accumulate,
                     cudaStream_t s, uint64_t* stamp) {
  const Slot st = as_slot(stamp);
  const bool vec = aligned16(grad);
  const int blocks = blocks_for(vec ? n / kVec + 1 : n);
  if (t == DType::fp32) {
    if (vec)
      generate_kernel<DType::fp32, true><<<blocks, kThreads, 0, s>>>(grad, n, key, accumulate, st);
    else
      generate_kernel<DType::fp32, false><<<blocks, kThreads, 0, s>>>(grad, n, key, accumulate, st);
  } else {
    if (vec)
      generate_kernel<DType::bf16, true><<<blocks, kThreads, 0, s>>>(grad, n, key, accumulate, st);
    else
      generate_kernel<DType::bf16, false><<<blocks, kThreads, 0, s>>>(grad, n, key, accumulate, st);
  }
  SA_CUDA_LAUNCH_CHECK("generate_kernel");
}

void launch_add(void* dst, DType dt, const void* src, DType st, uint64_t n, bool assign,
                cudaStream_t s, uint64_t* stamp, DeviceAddGrid grid) {
  if (assign)
    add_dispatch<true>(dst, dt, src, st, n, as_slot(stamp), s, grid);
  else
    add_dispatch<false>(dst, dt, src, st, n, as_slot(stamp), s, grid);
  SA_CUDA_LAUNCH_CHECK("add_kernel");
}

void launch_scale(void* dst, DType t, uint64_t n, float factor, cudaStream_t s, uint64_t* stamp) {
  const Slot st = as_slot(stamp);
  const bool vec = aligned16(dst);
  const int blocks = blocks_for(vec ? n / kVec + 1 : n);
  if (t == DType::fp32) {
    if (vec)
      scale_kernel<DType::fp32, true><<<blocks, kThreads, 0, s>>>(dst, n, factor, st);
    else
      scale_kernel<DType::fp32, false><<<blocks, kThreads, 0, s>>>(dst, n, factor, st);
  } else {
    if (vec)
      scale_kernel<DType::bf16, true><<<blocks, kThreads, 0, s>>>(dst, n, factor, st);
    else
      scale_kernel<DType::bf16, false><<<blocks, kThreads, 0, s>>>(dst, n, factor, st);
  }
  SA_CUDA_LAUNCH_CHECK("scale_kernel");
}

__global__ void publish_flag_kernel(const int* flag, volatile int* mapped) { *mapped = *flag; }

void launch_publish_flag(const int* flag, int* mapped, cudaStream_t s) {
  publish_flag_kernel<<<1, 1, 0, s>>>(flag, mapped);
  SA_CUDA_LAUNCH_CHECK("publish_flag_kernel");
}

__global__ void shardaccum_nccl_gate(const volatile unsigned long long* flag,
                                     unsigned long long seq, volatile unsigned long long* stamp,
                                     unsigned long long spin_ns) {
  const unsigned long long t0 = globaltimer_ns();
  unsigned long long timed_out = 0;
  while (*flag < seq) {  // volatile: every iteration reads the host's write through the bus
    if (globaltimer_ns() - t0 > spin_ns) {
      timed_out = 1;
      break;
    }
    __nanosleep(256);  // the spinning thread leaves its SM's issue slots to other kernels
  }
  stamp[2] = timed_out;
  stamp[0] = globaltimer_ns();
  __threadfence_system();
}

__global__ void shardaccum_nccl_stamp(volatile unsigned long long* stamp) {
  *stamp = globaltimer_ns();
  __threadfence_system();
}

void launch_gate(const uint64_t* flag, uint64_t seq, uint64_t* stamp, uint64_t spin_ns,
                 cudaStream_t s) {
  shardaccum_nccl_gate<<<1, 1, 0, s>>>(reinterpret_cast<const volatile unsigned long long*>(flag),
                                       seq, reinterpret_cast<volatile unsigned long long*>(stamp),
                                       spin_ns);
  SA_CUDA_LAUNCH_CHECK("shardaccum_nccl_gate");
}

__global__ void copy_words_kernel(volatile unsigned long long* dst, const unsigned long long* src,
                                  uint64_t n) {
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
  __threadfence_system();
}

void launch_copy_stamps(uint64_t* mapped, const uint64_t* stamps, uint64_t words, cudaStream_t s) {
  copy_words_kernel<<<blocks_for(words), kThreads, 0, s>>>(
      reinterpret_cast<volatile unsigned long long*>(mapped),
      reinterpret_cast<const unsigned long long*>(stamps), words);
  SA_CUDA_LAUNCH_CHECK("copy_words_kernel");
}

void launch_stamp(uint64_t* stamp, cudaStream_t s) {
  shardaccum_nccl_stamp<<<1, 1, 0, s>>>(reinterpret_cast<volatile unsigned long long*>(stamp));
  SA_CUDA_LAUNCH_CHECK("shardaccum_nccl_stamp");
}

void launch_check(const void* shard, DType t, uint64_t n, uint64_t j0, const OracleKey& key,
                  const uint64_t* prefixes, CheckSums* partials, CheckSums* result,
                  cudaStream_t s) {
  const int blocks = std::min(blocks_for(n), kCheckBlocks);
  if (t == DType::fp32)
    check_kernel<DType::fp32><<<blocks, kThreads, 0, s>>>(shard, n, j0, key, prefixes, partials);
  else
    check_kernel<DType::bf16><<<blocks, kThreads, 0, s>>>(shard, n, j0, key, prefixes, partials);
  SA_CUDA_LAUNCH_CHECK("check_kernel");
  check_final_kernel<<<1, kThreads, 0, s>>>(partials, blocks, result);
  SA_CUDA_LAUNCH_CHECK("check_final_kernel");
}

}  // namespace shardaccum::cuda
