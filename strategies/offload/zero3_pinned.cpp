#include "strategies/offload/zero3_pinned.hpp"

#include <numeric>

#include "common/memory_space.hpp"

namespace shardaccum {
namespace {

/// The cumulative shares of parts of `bytes` in one buffer of their sum rounded to a power of two.
std::vector<uint64_t> shares_of(const std::vector<uint64_t>& bytes) {
  const uint64_t total = std::accumulate(bytes.begin(), bytes.end(), uint64_t{0});
  std::vector<uint64_t> out(bytes.size(), 0);
  if (total == 0) return out;
  const unsigned __int128 rounded = cached_host_bytes(total);
  uint64_t before = 0, counted_before = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    before += bytes[i];
    const auto counted = static_cast<uint64_t>(rounded * before / total);
    out[i] = counted - counted_before;
    counted_before = counted;
  }
  return out;
}

}  // namespace

Zero3PinnedShares zero3_pinned_shares(const std::vector<std::vector<uint64_t>>& pieces, DType accum,
                                      uint64_t sub_group_elements) {
  Zero3PinnedShares s;
  std::vector<uint64_t> unit_bytes;
  for (const auto& p : pieces)
    unit_bytes.push_back(std::accumulate(p.begin(), p.end(), uint64_t{0}) * dtype_bytes(accum));
  s.saved = shares_of(unit_bytes);
  s.master.assign(pieces.size(), 0);
  // The sub-groups: parameters in order, each group closed by the one that brings it to
  // sub_group_elements or by the last parameter (stage3.py 1221-1231).
  std::vector<uint64_t> group;     // fp32 bytes of the open group's parameters
  std::vector<size_t> group_unit;  // the unit of each
  uint64_t group_elements = 0;
  size_t left = 0;
  for (const auto& p : pieces) left += p.size();
  const auto close = [&] {
    const std::vector<uint64_t> shares = shares_of(group);
    for (size_t i = 0; i < shares.size(); ++i) s.master[group_unit[i]] += shares[i];
    group.clear();
    group_unit.clear();
    group_elements = 0;
  };
  for (size_t u = 0; u < pieces.size(); ++u) {
    for (const uint64_t numel : pieces[u]) {
      group.push_back(numel * dtype_bytes(DType::fp32));
      group_unit.push_back(u);
      group_elements += numel;
      --left;
      if (group_elements >= sub_group_elements || left == 0) close();
    }
  }
  return s;
}

}  // namespace shardaccum
