#pragma once
// Interval arithmetic of a step's timed ops (docs/DESIGN.md §6): how long the reduce-scatters ran
// while no backward op ran, and the busy time of a set of ops, on one clock. Both backends.
#include <utility>
#include <vector>

namespace shardaccum {

/// A half-open interval [first, second) in ms on one clock (e.g. since the step's start event).
using Interval = std::pair<double, double>;

/// |∪ v|: the length covered by the intervals (overlaps counted once; empty or reversed ones
/// count 0). Sorts a copy; O(n log n).
double union_ms(std::vector<Interval> v);

/// |∪ a − ∪ b|: the length covered by `a` and by none of `b` (the exposed communication when `a`
/// are the reduce-scatters and `b` the compute-stream backward ops).
double uncovered_ms(std::vector<Interval> a, std::vector<Interval> b);

}  // namespace shardaccum
