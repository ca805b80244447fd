#pragma once
// Pinned host memory pinned once (docs/DESIGN.md §4): cudaHostAlloc'd chunks handed out by a
// first-fit allocator, so allocating and freeing in a step costs no pinning. A request that fits
// nowhere pins one more chunk (counted: a growth inside a measured step distorts its time).
#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "strategies/backend/cuda_handles.hpp"

namespace shardaccum::cuda {

class PinnedArena {
 public:
  /// Pins `initial_bytes` now (none when 0); later chunks are at least `min_chunk_bytes`.
  explicit PinnedArena(uint64_t initial_bytes, uint64_t min_chunk_bytes = 256ull << 20);
  PinnedArena(const PinnedArena&) = delete;
  PinnedArena& operator=(const PinnedArena&) = delete;

  /// A block of at least `bytes`, 256-byte aligned (first fit in address order). When nothing
  /// fits: pins a new chunk with `may_grow`, else returns nullptr.
  void* allocate(uint64_t bytes, bool may_grow = true);
  /// Returns a block at once; neighbours coalesce.
  void free(void* p);

  uint64_t capacity() const { return capacity_; }  // bytes pinned
  int growths() const { return growths_; }         // chunks pinned after the first
  size_t live_blocks() const { return live_.size(); }

  static constexpr uint64_t kAlign = 256;

 private:
  struct Chunk {
    PinnedMemory mem;
    std::map<uint64_t, uint64_t> free;  // offset -> length, coalesced
  };
  struct Block {
    Chunk* chunk;
    uint64_t offset, length;
  };
  Chunk& add_chunk(uint64_t bytes);
  static void* take(Chunk& c, uint64_t length, uint64_t* offset);

  std::vector<std::unique_ptr<Chunk>> chunks_;
  std::unordered_map<void*, Block> live_;
  uint64_t min_chunk_, capacity_ = 0;
  int growths_ = 0;
};

}  // namespace shardaccum::cuda
