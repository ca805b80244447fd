// --part I/N (bench/case_matrix.hpp): the N slices of the case matrix cover every case exactly
// once, in order, with sizes that differ by at most 1; bad values are input errors naming --part.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "bench/case_matrix.hpp"
#include "bench/cli.hpp"
#include "bench_cli_support.hpp"
#include "strategies/default_matrix.hpp"

namespace shardaccum {
namespace {

TEST(MatrixPart, SlicesCoverEveryCaseOnceInOrderWithSizesWithinOne) {
  for (size_t total = 1; total <= 70; ++total)
    for (int n = 1; n <= static_cast<int>(total) && n <= 12; ++n) {
      size_t next = 0, smallest = total, largest = 0;
      for (int i = 1; i <= n; ++i) {
        const auto [b, e] = part_range(total, MatrixPart{i, n});
        ASSERT_EQ(b, next) << "part " << i << "/" << n << " of " << total << " is not contiguous";
        ASSERT_LT(b, e) << "part " << i << "/" << n << " of " << total << " is empty";
        smallest = std::min(smallest, e - b);
        largest = std::max(largest, e - b);
        next = e;
      }
      EXPECT_EQ(next, total) << n << " parts of " << total << " miss cases at the end";
      EXPECT_LE(largest - smallest, 1u) << n << " parts of " << total;
    }
  // Literal expectations: 64 cases in 3 parts are 21, 21, 22; 5 in 3 are 1, 2, 2.
  EXPECT_EQ(part_range(64, {1, 3}), (std::pair<size_t, size_t>{0, 21}));
  EXPECT_EQ(part_range(64, {2, 3}), (std::pair<size_t, size_t>{21, 42}));
  EXPECT_EQ(part_range(64, {3, 3}), (std::pair<size_t, size_t>{42, 64}));
  EXPECT_EQ(part_range(5, {1, 3}), (std::pair<size_t, size_t>{0, 1}));
  EXPECT_EQ(part_range(5, {1, 1}), (std::pair<size_t, size_t>{0, 5}));
}

TEST(MatrixPart, SelectPartOfARealMatrixKeepsTheOrderOfTheCases) {
  BenchOptions o;
  const MatrixAxes axes = resolve_axes(o, "uniform:2x1000", 2, 8);
  const std::vector<CaseSpec> all = build_matrix(axes);
  ASSERT_EQ(all.size(), main_strategies().size() * std::size(kCanonicalSchedules));
  std::vector<std::string> joined;
  for (int i = 1; i <= 5; ++i)
    for (const auto& c : select_part(all, MatrixPart{i, 5})) joined.push_back(c.name());
  std::vector<std::string> expected;
  for (const auto& c : all) expected.push_back(c.name());
  EXPECT_EQ(joined, expected);
}

TEST(MatrixPart, ParseAcceptsIOverNAndRefusesEverythingElse) {
  const MatrixPart p = parse_part("2/3");
  EXPECT_EQ(p.index, 2);
  EXPECT_EQ(p.count, 3);
  EXPECT_EQ(p.text(), "2/3");
  for (const char* bad :
       {"0/3", "4/3", "x", "1/", "/2", "1/0", "+1/2", "1/2/3", " 1/2", "-1/2", "1/9999999", ""}) {
    try {
      parse_part(bad);
      ADD_FAILURE() << "--part '" << bad << "' was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--part"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(part_range(3, MatrixPart{1, 4}), std::invalid_argument);  // a slice would be empty
}

const std::string kTiny =
    "--backend host --model uniform:2x1000 --binding data --mode flag --steps 1 --warmup 0 ";

TEST(MatrixPartCli, BadPartValuesExitTwoNamingTheFlag) {
  for (const char* bad : {"0/3", "4/3", "x"}) {
    const auto r = testing::run_bench_cli("", kTiny + "--list --part " + bad);
    EXPECT_EQ(r.rc, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--part '" + std::string(bad) + "'"), std::string::npos) << r.err;
  }
  // 16 cases (4 schedules x 4 offloads) cannot make 17 non-empty slices.
  const auto r = testing::run_bench_cli("", kTiny + "--list --part 1/17");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("give N <= 16"), std::string::npos) << r.err;
}

TEST(MatrixPartCli, ListShowsTheSliceAndTheWholeMatrixSize) {
  const auto r = testing::run_bench_cli("", kTiny + "--list --part 2/3");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("5 cases on backend host (part 2/3 of 16 cases)"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace shardaccum
