#pragma once
// The default matrix (docs/DESIGN.md §3): a named list of values per axis, not the product of every
// registered value, so that registering a value leaves the default run and its baselines as they
// were. `all` on an axis flag means every registered value instead.
#include <string>
#include <vector>

#include "strategies/strategy.hpp"

namespace shardaccum {

/// The values each axis takes when its flag is not given.
struct DefaultMatrix {
  std::vector<std::string> binding, offload, mode, division;
};
const DefaultMatrix& default_matrix();

/// The strategies of the product of value lists, in report order: offload, binding, mode, division.
std::vector<StrategySpec> strategy_product(const std::vector<std::string>& bindings,
                                           const std::vector<std::string>& offloads,
                                           const std::vector<std::string>& modes,
                                           const std::vector<std::string>& divisions);

/// The default matrix's strategies (16: 2 bindings x 4 offloads x 2 modes x 1 division).
std::vector<StrategySpec> default_strategies();

/// The main job's strategies (issue 16 item 7, docs/DESIGN.md §3): the default matrix's idealised
/// strategies, then each preset (strategies/preset/, in its registry order) whose strategy is not
/// among them, so that the faithful presets and the limit strategy run beside the idealised ones.
/// What the benchmark runs when no axis flag and no --preset is given.
std::vector<StrategySpec> main_strategies();

/// Every combination of registered values.
std::vector<StrategySpec> every_strategy();

}  // namespace shardaccum
