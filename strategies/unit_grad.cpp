#include "strategies/unit_grad.hpp"

#include <algorithm>

namespace shardaccum {

std::string AddSite::describe() const {
  return "unit " + std::to_string(unit) + (unit_name ? " (" + *unit_name + ")" : "") +
         ", micro-batch " + std::to_string(micro_batch);
}

std::vector<uint64_t> param_pieces(const FlatParam& unit, int world_size) {
  const uint64_t shard = shard_numel(unit.numel, world_size);
  const auto n = static_cast<uint64_t>(world_size);
  std::vector<uint64_t> pieces;
  uint64_t left = shard;
  for (const Param& p : unit.params) {
    const uint64_t want = std::min((p.numel() + n - 1) / n, left);
    if (want == 0) break;
    pieces.push_back(want);
    left -= want;
  }
  if (pieces.empty())
    pieces.push_back(shard);
  else
    pieces.back() += left;
  return pieces;
}

}  // namespace shardaccum
