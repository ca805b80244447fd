#include "bench/layout_json.hpp"

#include <stdexcept>
#include <string>

namespace shardaccum {

nlohmann::ordered_json layout_json(const Layout& layout, std::string_view spec) {
  using nlohmann::ordered_json;
  ordered_json units = ordered_json::array();
  for (size_t i = 0; i < layout.units.size(); ++i) {
    const FlatParam& u = layout.units[i];
    ordered_json params = ordered_json::array();
    uint64_t offset = 0;
    for (const Param& p : u.params) {
      if (p.offset != offset)
        throw std::logic_error("layout_json: param " + p.name + " of unit " + u.name +
                               " is not at the running offset");
      params.push_back({{"name", p.name}, {"shape", p.shape}, {"offset", p.offset}});
      offset += p.numel();
    }
    if (offset != u.numel)
      throw std::logic_error("layout_json: the params of unit " + u.name + " hold " +
                             std::to_string(offset) + " of its " + std::to_string(u.numel) +
                             " elements");
    units.push_back(
        {{"index", i}, {"name", u.name}, {"numel", u.numel}, {"params", std::move(params)}});
  }
  return {{"schema", kLayoutSchema},
          {"model", layout.name},
          {"spec", std::string(spec)},
          {"family", layout.family},
          {"total_numel", layout.total_numel()},
          {"units", std::move(units)}};
}

}  // namespace shardaccum
