// The oracle's check of a shard on a cuda rank (oracle staging): on the rank's auxiliary stream,
// after a drain, never inside a step's figures; pinned shards staged through device scratch.
#include "strategies/backend/cuda_rank.hpp"

#include <algorithm>
#include <vector>

#include "strategies/backend/cuda_world.hpp"

namespace shardaccum::cuda {

ShardCheck CudaRank::check_shard(const Buffer& shard, const OracleKey& key) {
  wait_tasks(tasks_queued_.load(), "check_shard");
  set_device(device_);
  Lock l(mu_);
  live(shard, "check_shard", "shard");
  drain(policy(), who("check_shard"));
  auto* partials = static_cast<CheckSums*>(check_partials_.get());
  auto* result = static_cast<CheckSums*>(check_result_.get());
  cudaStream_t s = aux_.get();
  const std::vector<uint64_t> prefixes = oracle_prefixes(key);
  if (check_prefixes_.bytes() < prefixes.size() * sizeof(uint64_t))
    check_prefixes_ = DeviceMemory(prefixes.size() * sizeof(uint64_t));
  auto* pre = static_cast<const uint64_t*>(check_prefixes_.get());
  if (!prefixes.empty())
    SA_CUDA_CHECK(cudaMemcpyAsync(check_prefixes_.get(), prefixes.data(),
                                  prefixes.size() * sizeof(uint64_t), cudaMemcpyHostToDevice, s));
  SA_CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(CheckSums), s));
  if (shard.space() == MemSpace::device) {
    launch_check(shard.data(), shard.dtype(), shard.numel(), 0, key, pre, partials, result, s);
  } else {
    // Kernels never read pinned memory: stage it through device scratch (oracle work, not traffic).
    const uint64_t b = dtype_bytes(shard.dtype());
    const uint64_t chunk = std::min<uint64_t>(shard.numel(), kCheckStagingBytes / b);
    if (check_staging_.bytes() < chunk * b) check_staging_ = DeviceMemory(chunk * b);
    for (uint64_t j = 0; j < shard.numel(); j += chunk) {
      const uint64_t count = std::min(chunk, shard.numel() - j);
      SA_CUDA_CHECK(cudaMemcpyAsync(check_staging_.get(),
                                    static_cast<const char*>(shard.data()) + j * b, count * b,
                                    cudaMemcpyHostToDevice, s));
      launch_check(check_staging_.get(), shard.dtype(), count, j, key, pre, partials, result, s);
    }
  }
  CheckSums sums{};
  SA_CUDA_CHECK(cudaMemcpyAsync(&sums, result, sizeof(CheckSums), cudaMemcpyDeviceToHost, s));
  cudaEvent_t done = marks_.next();
  SA_CUDA_CHECK(cudaEventRecord(done, s));
  wait_event(done, nullptr, policy(), who("check_shard"));
  if (auto* c = world_.collector()) c->discard(device_, c->now());  // oracle copies: never a step's
  return ShardCheck{sums.err_norm2, sums.ref_norm2, sums.nonfinite, sums.bad_padding};
}

}  // namespace shardaccum::cuda
