#pragma once
// A model layout: the flat parameters (FSDP units) of a model, in forward order.
#include <cstdint>
#include <string>
#include <vector>

namespace shardaccum {

/// One parameter of a unit (a tensor of the real model): `shape` is row-major, and element j of
/// the parameter is element `offset + j` of its unit's flat buffer (the generator's contract with
/// bench/real/, docs/DESIGN.md §8).
struct Param {
  std::string name;  // the Hugging Face named_parameters() name, e.g. "model.norm.weight"
  std::vector<uint64_t> shape;  // at least one dimension, each >= 1
  uint64_t offset = 0;          // first element in the unit: the sum of the earlier params' numel
  /// The product of `shape` (the loaders keep it under kMaxLayoutNumel, so it cannot overflow).
  uint64_t numel() const;
};

/// One flat parameter: a contiguous 1-D buffer of `numel` elements.
struct FlatParam {
  std::string name;
  uint64_t numel = 0;
  /// The unit's parameters in named_parameters() order, offsets the running sum of their numel,
  /// which add up to `numel`; empty for a hand-built unit (tests), which no tool describes.
  std::vector<Param> params = {};
};

struct Layout {
  std::string name;              // e.g. "llama2-7b", "uniform:8x1M"
  std::vector<FlatParam> units;  // forward order; backward visits them last to first
  std::string family = {};  // uniform | list | the config's model_type (the loader that built it)
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
