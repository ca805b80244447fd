#pragma once
// Device kernels of the cuda backend, behind host-callable launchers (cuda_kernels.cu), and the
// OpenMP host loops on pinned memory (cuda_host_ops.cpp). Kernels never touch pinned memory.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/dtype.hpp"
#include "common/gradient_gen.hpp"
#include "common/shard_check.hpp"
#include "strategies/backend/device_add_grid.hpp"
#include "strategies/backend/host_split.hpp"

namespace shardaccum::cuda {

/// A kernel stamp (docs/DESIGN.md §6): two words of device memory, set to all ones before the
/// kernel; the kernel leaves word 0 = its earliest block's start and word 1 = ~(its latest block's
/// end), %globaltimer ns. The launchers below take one, or null for none.
inline constexpr uint64_t kStampUnset = ~0ull;

/// grad = g(key, i), or grad += g(key, i) with `accumulate` (the host backend's arithmetic: in
/// fp32, rounded once to grad's dtype); g is zero in the padding (i >= key.numel).
void launch_generate(void* grad, DType t, uint64_t n, const GradKey& key, bool accumulate,
                     cudaStream_t s, uint64_t* stamp = nullptr);

/// dst += src (or dst = src with `assign`: convert), in fp32, rounded to dst's dtype.
/// 16-byte accesses when both pointers allow it.
/// `grid`: the launch of an fp32-to-fp32 add or convert (device_add_grid.hpp); the other dtype
/// pairs take the full grid whatever it says.
void launch_add(void* dst, DType dt, const void* src, DType st, uint64_t n, bool assign,
                cudaStream_t s, uint64_t* stamp = nullptr,
                DeviceAddGrid grid = DeviceAddGrid::two_per_sm);

/// dst *= factor, in fp32 (as the host backend), rounded to dst's dtype.
void launch_scale(void* dst, DType t, uint64_t n, float factor, cudaStream_t s,
                  uint64_t* stamp = nullptr);

/// *mapped = *flag: hands a 4-byte control flag (ProcessLink) to the host through mapped pinned
/// memory, so that no memcpy appears among a measured step's copies (CUPTI counts those). The one
/// place a kernel touches pinned memory, and never gradient data.
void launch_publish_flag(const int* flag, int* mapped, cudaStream_t s);

/// How long a gate waits for the host at most, ns: a bound, so that a host that never writes the
/// flag, or a launch that waits for the spinning stream (lazy loading of NCCL's kernels), cannot
/// hang the stream; the start then holds host time (end_step warns).
inline constexpr uint64_t kGateSpinNs = 1'000'000'000;
/// The reduce-scatter's gate (docs/DESIGN.md §6), one thread on the comm stream: spins until
/// *flag (mapped pinned memory the host writes after ncclReduceScatter has returned) reaches `seq`,
/// or `spin_ns` of %globaltimer have passed (then stamp[2] = 1: the start includes host time; a
/// bound, so that no gate can hold a stream forever), and writes %globaltimer (ns) to stamp[0].
/// `flag` and `stamp` are device pointers of mapped pinned memory: control data, never gradients.
void launch_gate(const uint64_t* flag, uint64_t seq, uint64_t* stamp, uint64_t spin_ns,
                 cudaStream_t s);
/// *stamp = %globaltimer (ns), one thread: the end of the collective before it on the stream.
void launch_stamp(uint64_t* stamp, cudaStream_t s);
/// mapped[0, words) = stamps[0, words): the step's kernel stamps to mapped pinned memory by a
/// kernel, so that no memcpy appears among the step's copies (CUPTI and nsys count those).
void launch_copy_stamps(uint64_t* mapped, const uint64_t* stamps, uint64_t words, cudaStream_t s);

/// The oracle's partial sums (docs/DESIGN.md §5), summed in a fixed order: deterministic.
struct CheckSums {
  double err_norm2;
  double ref_norm2;
  unsigned long long nonfinite;
  unsigned long long bad_padding;
};
inline constexpr int kCheckBlocks = 1024;  // partials[] holds this many CheckSums
/// Device scratch through which the oracle reads a pinned shard, a chunk at a time (kernels never
/// read pinned memory), and the initial room for the generator prefixes (K*N of 8 bytes).
inline constexpr uint64_t kCheckStagingBytes = 64ull << 20;
inline constexpr uint64_t kCheckPrefixBytes = 64ull << 10;

/// Compares elements [j0, j0 + n) of a shard, held at `shard` (device memory), with
/// expected_value(key, prefixes, j) in fp64 and adds the sums into *result. `prefixes` (device
/// memory) holds oracle_prefixes(key).
void launch_check(const void* shard, DType t, uint64_t n, uint64_t j0, const OracleKey& key,
                  const uint64_t* prefixes, CheckSums* partials, CheckSums* result, cudaStream_t s);

// ---- host loops on pinned memory (OpenMP)
// ---------------------------------------------------------

/// dst += src on the host with `threads` OpenMP threads (vectorized: fp32 += fp32, fp32 +=
/// bf16...), the elements split as `split` says (host_split.hpp).
void host_add(void* dst, DType dt, const void* src, DType st, uint64_t n, int threads,
              CpuAddSplit split = CpuAddSplit::blocks);
/// dst *= factor on the host.
void host_scale(void* dst, DType t, uint64_t n, float factor, int threads);
/// omp_get_max_threads() / world_size, at least 1.
int default_host_threads(int world_size);

}  // namespace shardaccum::cuda
