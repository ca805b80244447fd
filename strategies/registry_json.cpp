#include "strategies/registry_json.hpp"

#include "strategies/default_matrix.hpp"
#include "strategies/preset/preset.hpp"

namespace shardaccum {
namespace {

using nlohmann::json;

template <class Interface>
json axis(const std::vector<std::string>& default_matrix, const char* default_value,
          bool always_named, json (*properties)(const Interface&)) {
  json values = json::array();
  for (const auto& e : AxisRegistry<Interface>::get().entries()) {
    const auto instance = e.make(AxisArgs{1, {}});
    values.push_back({{"name", e.info.name},
                      {"description", e.info.description},
                      {"follows", e.info.follows},
                      {"properties", properties(*instance)}});
  }
  return {{"axis", Interface::kAxis},
          {"flag", std::string("--") + Interface::kAxis},
          {"named", always_named ? "always" : "unless_default"},
          {"default", default_value},
          {"default_matrix", default_matrix},
          {"values", values}};
}

template <class Interface>
json no_properties(const Interface&) {
  return json::object();
}

json offload_properties(const OffloadPolicy& o) { return {{"offloaded", o.offloaded()}}; }

/// --lookahead's spellings, in order (strings, as before `buckets` joined them).
json lookahead_values() {
  json values = json::array();
  for (const Lookahead l : kLookaheads) values.push_back(lookahead_name(l));
  return values;
}

json copy_in_values() {
  json values = json::array();
  for (const auto& e : CopyInRegistry::get().entries())
    values.push_back({{"name", e.info.name},
                      {"description", e.info.description},
                      {"follows", e.info.follows},
                      {"properties", {{"separate_input", e.make(AxisArgs{})->separate_input()}}}});
  return values;
}

json canonical_schedules() {
  json out = json::array();
  for (const CanonicalSchedule& c : kCanonicalSchedules) {
    const bool constant = c.head == CanonicalSchedule::Head::constant;
    json head = constant
                    ? json{{"kind", "constant"}, {"letter", std::string(1, c.letter)}}
                    : json{{"kind", "alternating"}, {"at_k_minus_2", std::string(1, c.letter)}};
    out.push_back({{"name", c.name},
                   {"description", c.description},
                   {"min_k", kCanonicalMinK},
                   {"head", head},
                   {"tail", "S"},
                   {"example_k4", canonical_schedule(c.name, 4).modes}});
  }
  return out;
}

}  // namespace

json registry_json() {
  const StrategySpec defaults;
  const DefaultMatrix& d = default_matrix();
  json presets = json::array();
  for (const PresetInfo& p : PresetRegistry::get().entries())
    presets.push_back({{"name", p.name},
                       {"description", p.description},
                       {"follows", p.follows},
                       {"axes",
                        {{"binding", p.spec.binding},
                         {"offload", p.spec.offload},
                         {"mode", p.spec.mode},
                         {"division", p.spec.division}}},
                       {"lookahead", lookahead_name(p.lookahead)},
                       {"device_add_grid", device_add_grid_name(p.device_add_grid)},
                       {"comm_priority", comm_priority_name(p.comm_priority)},
                       {"hook_host_us", p.hook_host_us},
                       // Beside the four axes, as in case names: `/copy-in:C` unless the default.
                       {"copy_in", p.spec.copy_in}});
  return {
      {"schema", kRegistrySchema},
      {"axes",
       {axis<Binding>(d.binding, defaults.binding.c_str(), true, &no_properties<Binding>),
        axis<OffloadPolicy>(d.offload, defaults.offload.c_str(), true, &offload_properties),
        axis<ModeTracking>(d.mode, defaults.mode.c_str(), true, &no_properties<ModeTracking>),
        axis<Division>(d.division, kDefaultDivision, false, &no_properties<Division>)}},
      {"name_parts",
       {"model", "world", "schedule", "binding", "offload", "mode", "division", "dtype"}},
      {"presets", presets},
      {"lookahead",
       {{"flag", "--lookahead"},
        {"values", lookahead_values()},
        {"default", lookahead_name(StrategySpec{}.default_lookahead())},
        {"default_rule", "a preset's registered lookahead for its axis values, else the default"},
        // StrategySpec::name: /lookahead:V whenever --lookahead chose it, the default included.
        {"named", "when_given"}}},
      {"device_add_grid",
       {{"flag", "--device-add-grid"},
        {"values", {"auto", "torch", "two-per-sm"}},
        {"default", "auto"},
        {"default_rule",
         "auto: the device_add_grid of the preset whose axis values the strategy has, else "
         "two-per-sm"},
        {"named", "when_given"}}},
      {"comm_priority",
       {{"flag", "--comm-priority"},
        {"values", {"auto", "greatest", "default"}},
        {"default", "auto"},
        {"default_rule",
         "auto: the comm_priority of the preset whose axis values the strategy has, else "
         "greatest"},
        {"named", "when_given"}}},
      {"hook_host_us",
       {{"flag", "--hook-host-us"},
        {"values", {"auto", "0..100000"}},
        {"default", "auto"},
        {"default_rule",
         "auto: the hook_host_us of the preset whose axis values the strategy has, else 0"},
        {"named", "when_given"}}},
      // Beside the four strategy axes, not among them: like the lookahead, a case-name part
      // (copy-in:V, left out at the default) that report tools read as one more grouping axis.
      {"copy_in",
       {{"flag", "--copy-in"},
        {"values", copy_in_values()},
        {"default", kDefaultCopyIn},
        {"named", "unless_default"}}},
      {"canonical_schedules", canonical_schedules()},
      {"dtypes", std::vector<std::string>(std::begin(kDtypeTriples), std::end(kDtypeTriples))},
      {"default_dtype", kDtypeTriples[0]},
      {"max_k", kMaxMicroBatches}};
}

}  // namespace shardaccum
