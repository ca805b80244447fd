#include "strategies/default_matrix.hpp"

#include <algorithm>

#include "strategies/preset/preset.hpp"

namespace shardaccum {

const DefaultMatrix& default_matrix() {
  // The matrix every report since the first design shows: 16 strategies.
  static const DefaultMatrix m{
      {"data", "data-free"}, {"none", "gpu-add", "cpu-add", "copy"}, {"flag", "shape"}, {"end"}};
  return m;
}

std::vector<StrategySpec> strategy_product(const std::vector<std::string>& bindings,
                                           const std::vector<std::string>& offloads,
                                           const std::vector<std::string>& modes,
                                           const std::vector<std::string>& divisions) {
  std::vector<StrategySpec> out;
  for (const auto& o : offloads)
    for (const auto& b : bindings)
      for (const auto& m : modes)
        for (const auto& d : divisions) out.push_back({b, o, m, d, std::nullopt});
  return out;
}

std::vector<StrategySpec> default_strategies() {
  const DefaultMatrix& d = default_matrix();
  return strategy_product(d.binding, d.offload, d.mode, d.division);
}

std::vector<StrategySpec> main_strategies() {
  std::vector<StrategySpec> out = default_strategies();
  for (const PresetInfo& p : PresetRegistry::get().entries())
    if (std::find(out.begin(), out.end(), p.spec) == out.end()) out.push_back(p.spec);
  return out;
}

std::vector<StrategySpec> every_strategy() {
  return strategy_product(BindingRegistry::get().names(), OffloadRegistry::get().names(),
                          ModeRegistry::get().names(), DivisionRegistry::get().names());
}

}  // namespace shardaccum
