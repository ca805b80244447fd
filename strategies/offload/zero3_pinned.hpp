#pragma once
// DeepSpeed ZeRO-3's pinned host buffers with offload_optimizer and pin_memory (0.19.8,
// deepspeed/runtime/zero/stage3.py; docs/PRESETS.md "ZeRO-3's step profiled"): one buffer for the
// whole gradient partition in the accumulation dtype (grad_partitions_flat_buffer, 791-795) and one
// fp32 gradient buffer per optimizer sub-group (1337-1340); a sub-group closes once its parameters'
// partitions reach sub_group_size elements (_create_fp16_sub_groups, 1210-1232; 1e9 by default,
// zero/config.py 182). Each is one pin_memory() tensor, which PyTorch's caching host allocator
// rounds up to a power of two (cached_host_bytes). The suite keeps one pinned shard per unit
// (offload gpu-add-zero3), each counted at its share of those rounded buffers, so the counts sum to
// DeepSpeed's blocks.
#include <cstdint>
#include <vector>

#include "common/dtype.hpp"

namespace shardaccum {

/// zero/config.py's sub_group_size default (elements).
inline constexpr uint64_t kZero3SubGroupElements = 1'000'000'000;

/// Per unit, the pinned bytes its shards are counted at (Σ saved = the flat buffer's power of two;
/// Σ master = the sub-groups' powers of two).
struct Zero3PinnedShares {
  std::vector<uint64_t> saved;   // its share of grad_partitions_flat_buffer (accum dtype)
  std::vector<uint64_t> master;  // its parameters' shares of their sub-groups' fp32 buffers
};

/// The shares of units whose shards are cut at their parameters as `pieces` (per unit, in forward
/// order: UnitGrad::pieces, element counts standing for each parameter's partition_numel). A buffer
/// of T bytes rounded to R is shared out by cumulative bytes: the part of the buffer from byte
/// C(i-1) to C(i) of T counts floor(R*C(i)/T) - floor(R*C(i-1)/T) bytes, so the shares sum to R.
Zero3PinnedShares zero3_pinned_shares(const std::vector<std::vector<uint64_t>>& pieces, DType accum,
                                      uint64_t sub_group_elements = kZero3SubGroupElements);

}  // namespace shardaccum
