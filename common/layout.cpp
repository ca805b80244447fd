#include "common/layout.hpp"

namespace shardaccum {

uint64_t Param::numel() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

uint64_t Layout::total_numel() const {
  // The loaders keep every layout under kMaxLayoutNumel, so this sum cannot overflow.
  uint64_t total = 0;
  for (const FlatParam& u : units) total += u.numel;
  return total;
}

}  // namespace shardaccum
