#pragma once
// Where a buffer lives, and the direction of a counted copy (docs/DESIGN.md §4).
#include <bit>
#include <cstdint>
#include <span>

namespace shardaccum {

/// device: GPU memory. pinned_host: page-locked host memory (a D2H into it is an asynchronous
/// DMA). pageable_host: ordinary host memory, not pre-touched (a D2H into it is staged and
/// synchronous, and a fresh buffer is page-faulted during the copy: FSDP2's accumulating copy).
enum class MemSpace : uint8_t { device, pinned_host, pageable_host };
inline constexpr int kMemSpaceCount = 3;
inline const char* space_name(MemSpace s) {
  return s == MemSpace::device        ? "device"
         : s == MemSpace::pinned_host ? "pinned_host"
                                      : "pageable_host";
}
/// True for the two host spaces (a copy to or from one is a counted D2H or H2D).
inline bool is_host(MemSpace s) { return s != MemSpace::device; }
/// True when an operand in `b` may take part in an add on `where`: the device add takes device
/// operands; the CPU add (where = a host space) takes operands in either host space (FSDP2 adds a
/// pageable copy into the pinned saved shard).
inline bool add_operand_in(MemSpace b, MemSpace where) {
  return is_host(where) ? is_host(b) : b == where;
}

/// The bytes PyTorch's CachingHostAllocator takes for a pinned request of `bytes`: the next power
/// of two (torch/include/ATen/core/CachingHostAllocator.h:300-302, PowerOf2Ceil; docs/PRESETS.md
/// F1). 0 stays 0.
inline uint64_t cached_host_bytes(uint64_t bytes) { return bytes ? std::bit_ceil(bytes) : 0; }

/// The bytes the same allocator takes for one pinned tensor per piece: Σ cached_host_bytes(piece ·
/// elem_bytes) over `piece_numels` (element counts). FSDP2 pins each parameter's shard and each
/// gradient's first copy separately (_fsdp_param.py FSDPParam._init_sharded_param `pin_memory()`,
/// _fsdp_collectives.py foreach_reduce `.to("cpu", non_blocking=True)`), so its blocks are rounded
/// per parameter, not per unit.
inline uint64_t cached_host_bytes(std::span<const uint64_t> piece_numels, uint64_t elem_bytes) {
  uint64_t sum = 0;
  for (uint64_t n : piece_numels) sum += cached_host_bytes(n * elem_bytes);
  return sum;
}

/// Direction of a counted copy, from the spaces of source and destination.
enum class CopyDir : uint8_t { h2d, d2h, d2d };

}  // namespace shardaccum
