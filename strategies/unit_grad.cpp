#include "strategies/unit_grad.hpp"

#include <algorithm>
#include <numeric>

namespace shardaccum {

std::string AddSite::describe() const {
  return "unit " + std::to_string(unit) + (unit_name ? " (" + *unit_name + ")" : "") +
         ", micro-batch " + std::to_string(micro_batch);
}

std::vector<uint64_t> param_pieces(const FlatParam& unit, int world_size) {
  const uint64_t shard = shard_numel(unit.numel, world_size);
  const auto n = static_cast<uint64_t>(world_size);
  if (unit.params.empty()) return {shard};
  std::vector<uint64_t> pieces;
  uint64_t sum = 0;
  for (const Param& p : unit.params) {  // FSDP2's dim-0 chunk: ceil(rows / N) rows
    const uint64_t rows = p.shape.front(), row = p.numel() / rows;
    pieces.push_back((rows + n - 1) / n * row);
    sum += pieces.back();
  }
  if (sum <= shard) {
    pieces.back() += shard - sum;  // the unit's padding
    return pieces;
  }
  // The rows' padding is more than the unit's: taken from the largest pieces, down to 1 element
  // each, then (parameters of fewer rows than N, more of them than the shard has elements) the last
  // pieces are dropped.
  std::vector<size_t> order(pieces.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return pieces[x] > pieces[y]; });
  uint64_t excess = sum - shard;
  for (const size_t i : order) {
    const uint64_t cut = std::min(excess, pieces[i] - 1);
    pieces[i] -= cut;
    excess -= cut;
    if (excess == 0) break;
  }
  pieces.resize(pieces.size() - excess);  // every piece is 1 here
  return pieces;
}

}  // namespace shardaccum
