#pragma once
// What defines a case apart from the backend: layout, schedule, strategy, dtypes, generator.
#include <cstdint>
#include <string>

#include "common/dtype.hpp"
#include "common/gradient_gen.hpp"
#include "common/layout.hpp"
#include "strategies/schedule.hpp"
#include "strategies/strategy.hpp"

namespace shardaccum {

/// Everything that defines a case except the backend.
struct CasePlan {
  Layout layout;
  Schedule schedule;
  StrategySpec strategy;
  DTypeTriple dtypes;
  GenMode gen = GenMode::dyadic;
  uint64_t seed = 0x5a5a;
  std::string name;  // the benchmark case name, put on the step's NVTX range
};

}  // namespace shardaccum
