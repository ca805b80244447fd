#pragma once
// Parses shardaccum_bench's flags in-process for the tests of the command line and the matrix:
// the options, and the cases they build on the host backend's defaults.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/case_matrix.hpp"
#include "bench/cli.hpp"

namespace shardaccum::testing {

/// `args` parsed as shardaccum_bench's flags (argv[0] is prepended). Throws CliError for bad
/// input, as parse_cli does; a --help (parse_cli returning false) fails the calling test.
inline BenchOptions parsed(std::vector<std::string> args) {
  args.insert(args.begin(), "shardaccum_bench");
  std::vector<char*> argv;
  argv.reserve(args.size());
  for (auto& a : args) argv.push_back(a.data());
  BenchOptions o;
  EXPECT_TRUE(parse_cli(static_cast<int>(argv.size()), argv.data(), o)) << "--help printed";
  return o;
}

/// The cases `args` build with the host backend's test defaults: model `uniform:2x4`, world size 2,
/// at most 1,024 ranks. Throws CliError as parse_cli and resolve_axes do.
inline std::vector<CaseSpec> cases_of(std::vector<std::string> args) {
  return build_matrix(resolve_axes(parsed(std::move(args)), "uniform:2x4", 2, 1024, false));
}

}  // namespace shardaccum::testing
