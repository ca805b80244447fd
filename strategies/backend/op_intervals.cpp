#include "strategies/backend/op_intervals.hpp"

#include <algorithm>

namespace shardaccum {

namespace {
/// The disjoint, sorted union of `v` (reversed and empty intervals dropped).
std::vector<Interval> merged(std::vector<Interval> v) {
  std::erase_if(v, [](const Interval& i) { return !(i.second > i.first); });
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}
}  // namespace

double union_ms(std::vector<Interval> v) {
  double total = 0;
  for (const Interval& i : merged(std::move(v))) total += i.second - i.first;
  return total;
}

double uncovered_ms(std::vector<Interval> a, std::vector<Interval> b) {
  const std::vector<Interval> ua = merged(std::move(a)), ub = merged(std::move(b));
  double total = 0;
  size_t j = 0;
  for (const Interval& i : ua) {
    double at = i.first;  // the uncovered part of i runs from `at`
    while (j < ub.size() && ub[j].second <= at) ++j;
    for (size_t k = j; k < ub.size() && ub[k].first < i.second; ++k) {
      if (ub[k].first > at) total += ub[k].first - at;
      at = std::max(at, ub[k].second);
      if (at >= i.second) break;
    }
    if (at < i.second) total += i.second - at;
  }
  return total;
}

}  // namespace shardaccum
