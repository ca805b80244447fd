#pragma once
// The case matrix as axes (STYLE.md, NVBench): model x world size x schedule x strategy x dtype.
#include <memory>
#include <string>
#include <vector>

#include "strategies/step_driver.hpp"

namespace shardaccum {

/// The values of every axis, already validated.
struct MatrixAxes {
  std::vector<std::shared_ptr<const Layout>> models;
  std::vector<int> world_sizes;
  std::vector<Schedule> schedules;
  std::vector<StrategySpec> strategies;
  std::vector<DTypeTriple> dtypes;
  GenMode gen = GenMode::dyadic;
  uint64_t seed = 0x5a5a;
};

/// One benchmark case.
struct CaseSpec {
  std::shared_ptr<const Layout> layout;
  int world_size = 1;
  Schedule schedule;
  StrategySpec strategy;
  DTypeTriple dtypes;
  GenMode gen = GenMode::dyadic;
  uint64_t seed = 0;

  /// `accum/model:M/world:N/schedule:S/binding:B/offload:O/mode:T/dtype:D` (DESIGN.md §7).
  std::string name() const;
  CasePlan plan() const;
};

/// The product of the axes, in a stable order (model, world, dtype, strategy, schedule).
std::vector<CaseSpec> build_matrix(const MatrixAxes& axes);

}  // namespace shardaccum
