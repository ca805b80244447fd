// The interval arithmetic behind compute_ms and exposed_comm_ms (strategies/backend/op_intervals):
// overlaps count once, a reduce-scatter hidden by backward ops is not exposed.
#include <gtest/gtest.h>

#include "strategies/backend/op_intervals.hpp"

namespace shardaccum {
namespace {

TEST(OpIntervals, UnionCountsOverlapsOnceAndDropsEmptyOnes) {
  EXPECT_DOUBLE_EQ(union_ms({}), 0.0);
  EXPECT_DOUBLE_EQ(union_ms({{0, 2}, {1, 3}, {5, 6}}), 4.0);
  EXPECT_DOUBLE_EQ(union_ms({{5, 6}, {0, 1}, {0.5, 0.75}}), 2.0);  // unsorted, nested
  EXPECT_DOUBLE_EQ(union_ms({{2, 2}, {3, 1}}), 0.0);               // empty and reversed
  EXPECT_DOUBLE_EQ(union_ms({{0, 1}, {1, 2}}), 2.0);               // touching
}

TEST(OpIntervals, UncoveredIsTheCommunicationNoComputeHides) {
  // Fully exposed: no compute at all, or compute elsewhere.
  EXPECT_DOUBLE_EQ(uncovered_ms({{0, 4}}, {}), 4.0);
  EXPECT_DOUBLE_EQ(uncovered_ms({{0, 4}}, {{4, 6}, {-3, 0}}), 4.0);
  // Fully hidden.
  EXPECT_DOUBLE_EQ(uncovered_ms({{1, 2}, {2.5, 3}}, {{0, 4}}), 0.0);
  // Partly: [0,10) with compute [1,3) and [2,4) and [8,12): exposed [0,1) [4,8) = 5.
  EXPECT_DOUBLE_EQ(uncovered_ms({{0, 10}}, {{2, 4}, {1, 3}, {8, 12}}), 5.0);
  // Two reduce-scatters overlapping each other count once: ∪ = [0,6), compute [2,3) -> 5.
  EXPECT_DOUBLE_EQ(uncovered_ms({{0, 4}, {3, 6}}, {{2, 3}}), 5.0);
  // A compute interval spanning two reduce-scatters.
  EXPECT_DOUBLE_EQ(uncovered_ms({{0, 2}, {3, 5}, {6, 7}}, {{1, 4}}), 1.0 + 1.0 + 1.0);
}

}  // namespace
}  // namespace shardaccum
