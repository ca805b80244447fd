#include "strategies/preset/preset.hpp"

#include <algorithm>
#include <stdexcept>

namespace shardaccum {

PresetRegistry& PresetRegistry::get() {
  static PresetRegistry
      registry;  // function-local: whatever order the presets' initialisers run in
  return registry;
}

bool PresetRegistry::add(PresetInfo p) {
  if (p.name.empty() || find(p.name))
    throw std::logic_error("preset '" + p.name + "' registered twice or unnamed");
  entries_.push_back(std::move(p));
  std::stable_sort(entries_.begin(), entries_.end(), [](const PresetInfo& a, const PresetInfo& b) {
    return a.order != b.order ? a.order < b.order : a.name < b.name;
  });
  return true;
}

std::vector<std::string> PresetRegistry::names() const {
  std::vector<std::string> n;
  for (const PresetInfo& p : entries_) n.push_back(p.name);
  return n;
}

const PresetInfo* PresetRegistry::find(std::string_view name) const {
  for (const PresetInfo& p : entries_)
    if (p.name == name) return &p;
  return nullptr;
}

const PresetInfo* PresetRegistry::of(const StrategySpec& s) const {
  for (const PresetInfo& p : entries_)
    if (p.spec.binding == s.binding && p.spec.offload == s.offload && p.spec.mode == s.mode &&
        p.spec.division == s.division)
      return &p;
  return nullptr;
}

StrategySpec preset(std::string_view name) {
  const PresetRegistry& r = PresetRegistry::get();
  if (const PresetInfo* p = r.find(name)) return p->spec;
  std::string list;
  for (const std::string& n : r.names()) list += (list.empty() ? "" : ", ") + n;
  throw std::invalid_argument("--preset: unknown value '" + std::string(name) + "' (expected " +
                              list + ")");
}

}  // namespace shardaccum
