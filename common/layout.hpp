#pragma once
// A model layout: the flat parameters (FSDP units) of a model, in forward order.
#include <cstdint>
#include <string>
#include <vector>

namespace shardaccum {

/// One flat parameter: a contiguous 1-D buffer of `numel` elements.
struct FlatParam {
  std::string name;
  uint64_t numel = 0;
};

struct Layout {
  std::string name;              // e.g. "llama2-7b", "uniform:8x1M"
  std::vector<FlatParam> units;  // forward order; backward visits them last to first
  uint64_t total_numel() const;
};

/// numel_padded = roundup(numel, N*8): every shard starts 16-byte aligned for 2-byte dtypes
/// (docs/DESIGN.md §1). Padding elements are zero and stay zero.
constexpr uint64_t padded_numel(uint64_t numel, int world_size) {
  const uint64_t q = static_cast<uint64_t>(world_size) * 8;
  return (numel + q - 1) / q * q;
}

/// Elements of one rank's shard: numel_padded / N.
constexpr uint64_t shard_numel(uint64_t numel, int world_size) {
  return padded_numel(numel, world_size) / static_cast<uint64_t>(world_size);
}

}  // namespace shardaccum
