#pragma once
// The parameters of one unit of a layout list file (bench/model_layouts.hpp): one `{unit}.weight`
// of shape [numel], or the unit's optional "params" list, checked against its numel.
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/layout.hpp"

namespace shardaccum::layout_detail {

/// The params of list unit `unit` (its JSON object) named `unit_name` of `numel` elements:
/// without a "params" key, one param "{unit_name}.weight" of shape [numel]; with one, a non-empty
/// list of {"name": non-empty string, "shape": non-empty list of integers >= 1}, in that order,
/// offsets the running sum. Names are added to `names`, which must not hold them already (names
/// are unique within a layout). Throws std::invalid_argument naming --model (via fail()) for a
/// malformed entry, a repeated name, or shapes whose element counts do not sum to `numel`.
std::vector<Param> list_unit_params(const nlohmann::json& unit, const std::string& unit_name,
                                    uint64_t numel, std::set<std::string>& names,
                                    std::string_view source);

}  // namespace shardaccum::layout_detail
