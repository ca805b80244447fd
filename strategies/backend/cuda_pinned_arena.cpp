#include "strategies/backend/cuda_pinned_arena.hpp"

#include <algorithm>
#include <stdexcept>

namespace shardaccum::cuda {

PinnedArena::PinnedArena(uint64_t initial_bytes, uint64_t min_chunk_bytes)
    : min_chunk_(std::max<uint64_t>(min_chunk_bytes, kAlign)) {
  if (initial_bytes > 0) add_chunk((initial_bytes + kAlign - 1) / kAlign * kAlign);
}

PinnedArena::Chunk& PinnedArena::add_chunk(uint64_t bytes) {
  auto c = std::make_unique<Chunk>();
  c->mem = PinnedMemory(bytes);
  c->free.emplace(0, bytes);
  capacity_ += bytes;
  if (!chunks_.empty()) ++growths_;
  chunks_.push_back(std::move(c));
  return *chunks_.back();
}

void* PinnedArena::take(Chunk& c, uint64_t length, uint64_t* offset) {
  for (auto it = c.free.begin(); it != c.free.end(); ++it) {
    if (it->second < length) continue;
    *offset = it->first;
    const uint64_t rest = it->second - length;
    c.free.erase(it);
    if (rest > 0) c.free.emplace(*offset + length, rest);
    return static_cast<char*>(c.mem.get()) + *offset;
  }
  return nullptr;
}

void* PinnedArena::allocate(uint64_t bytes, bool may_grow) {
  const uint64_t length = std::max<uint64_t>(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  uint64_t offset = 0;
  for (auto& c : chunks_)
    if (void* p = take(*c, length, &offset)) {
      live_.emplace(p, Block{c.get(), offset, length});
      return p;
    }
  if (!may_grow) return nullptr;
  // Grow geometrically (by half of what is pinned) so a large model pins a few times, not per unit.
  Chunk& c = add_chunk(std::max({length, min_chunk_, capacity_ / 2 / kAlign * kAlign}));
  void* p = take(c, length, &offset);
  live_.emplace(p, Block{&c, offset, length});
  return p;
}

void PinnedArena::free(void* p) {
  auto it = live_.find(p);
  if (it == live_.end()) throw std::logic_error("PinnedArena::free: not a live block");
  auto [chunk, offset, length] = it->second;
  live_.erase(it);
  auto& fl = chunk->free;
  auto next = fl.lower_bound(offset);
  if (next != fl.end() && offset + length == next->first) {  // merge with the following block
    length += next->second;
    next = fl.erase(next);
  }
  if (next != fl.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {  // merge into the preceding block
      prev->second += length;
      return;
    }
  }
  fl.emplace(offset, length);
}

}  // namespace shardaccum::cuda
