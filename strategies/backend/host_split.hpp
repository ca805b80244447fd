#pragma once
// How a CPU add (or scale) on pinned memory splits its n elements over its threads
// (RankBackend::set_cpu_add_split): the suite's dynamic blocks, or PyTorch's at::parallel_for, so
// that a preset of a PyTorch system adds as PyTorch does.
#include <algorithm>
#include <cstdint>

namespace shardaccum {

/// `blocks`: the suite's, blocks of split_block(n, threads) elements taken dynamically (a thread
/// whose vCPU is taken away holds up only its block). `torch`: at::parallel_for under OpenMP
/// (ATen/ParallelOpenMP.h `invoke_parallel`, used by TensorIterator's for_each for an elementwise
/// `add_`): torch_split(n, threads), one contiguous chunk per thread, each waiting for the last.
enum class CpuAddSplit { blocks, torch };

/// Elements per dynamic block: about 16 blocks per thread, each 4 Ki to 1 Mi elements (1 Mi fp32 is
/// 4 MiB: small enough to even out, large enough that taking a block costs nothing beside
/// streaming it). `threads` >= 1.
inline int64_t split_block(int64_t n, int threads) {
  return std::clamp<int64_t>(n / (int64_t{16} * threads), int64_t{4} << 10, int64_t{1} << 20);
}

/// at::parallel_for's split of n elements over a team of `threads`: below at::internal::GRAIN_SIZE
/// (32768, ATen/Parallel.h) elements it runs serially; above, min(threads, ceil(n / 32768))
/// threads each take ceil(n / that) contiguous elements (the last fewer).
struct TorchSplit {
  int64_t threads = 1;
  int64_t chunk = 0;
};
inline TorchSplit torch_split(int64_t n, int threads) {
  constexpr int64_t kGrain = 32768;
  const auto divup = [](int64_t x, int64_t y) { return (x + y - 1) / y; };
  if (n < kGrain || threads <= 1) return {1, n};
  const int64_t t = std::min<int64_t>(threads, divup(n, kGrain));
  return {t, divup(n, t)};
}

}  // namespace shardaccum
