// How a CPU add splits its elements over its threads (strategies/backend/host_split.hpp): the
// suite's dynamic blocks, and PyTorch's at::parallel_for (ATen/ParallelOpenMP.h invoke_parallel,
// at::internal::GRAIN_SIZE 32768), which the fsdp2 preset's add follows. Each split covers every
// element exactly once.
#include <gtest/gtest.h>

#include <cstdint>

#include "strategies/backend/host_split.hpp"

namespace shardaccum {
namespace {

TEST(HostSplit, TorchRunsSeriallyBelowItsGrainAndOneChunkPerThreadAbove) {
  EXPECT_EQ(torch_split(1, 16).threads, 1);
  EXPECT_EQ(torch_split(32767, 16).threads, 1);  // below GRAIN_SIZE: serial
  EXPECT_EQ(torch_split(32767, 16).chunk, 32767);
  EXPECT_EQ(torch_split(32768, 16).threads, 1);  // ceil(32768 / 32768) = 1 thread
  EXPECT_EQ(torch_split(32769, 16).threads, 2);  // two chunks of 16385 and 16384
  EXPECT_EQ(torch_split(32769, 16).chunk, 16385);
  EXPECT_EQ(torch_split(int64_t{16} * 32768, 16).threads, 16);
  EXPECT_EQ(torch_split(int64_t{16} * 32768, 16).chunk, 32768);
  // A 64 Mi-element shard on 16 threads: 16 chunks of 4 Mi, one per thread.
  EXPECT_EQ(torch_split(int64_t{64} << 20, 16).threads, 16);
  EXPECT_EQ(torch_split(int64_t{64} << 20, 16).chunk, int64_t{4} << 20);
  EXPECT_EQ(torch_split(int64_t{64} << 20, 1).threads, 1);  // --host-threads 1 (torchrun, N > 1)
  for (const int64_t n : {int64_t{1}, int64_t{32769}, int64_t{1000003}, int64_t{100} << 20})
    for (const int threads : {1, 3, 16}) {
      const TorchSplit t = torch_split(n, threads);
      EXPECT_GE(t.threads * t.chunk, n) << n << " on " << threads;        // every element covered
      EXPECT_LT((t.threads - 1) * t.chunk, n) << n << " on " << threads;  // no thread idle
      EXPECT_LE(t.threads, threads);
    }
}

TEST(HostSplit, BlocksAreAboutSixteenPerThreadBetween4KiAnd1MiElements) {
  EXPECT_EQ(split_block(int64_t{64} << 20, 16), int64_t{256} << 10);  // 64 Mi / 256
  EXPECT_EQ(split_block(int64_t{1200} << 18, 16), int64_t{1} << 20);  // 1200 MiB fp32: capped
  EXPECT_EQ(split_block(1000, 16), int64_t{4} << 10);                 // small: one block
  EXPECT_EQ(split_block(int64_t{1} << 20, 1), int64_t{64} << 10);
}

}  // namespace
}  // namespace shardaccum
