#include "bench/list_params.hpp"

#include "bench/layout_fields.hpp"

namespace shardaccum::layout_detail {

std::vector<Param> list_unit_params(const json& unit, const std::string& unit_name, uint64_t numel,
                                    std::set<std::string>& names, std::string_view source) {
  const std::string where = "unit \"" + brief_text(unit_name) + "\"";
  auto claim = [&](const std::string& name) {
    if (!names.insert(name).second)
      fail(source, where + ": parameter name \"" + brief_text(name) +
                       "\" appears twice in the layout; parameter names must be unique");
  };
  auto ps = unit.find("params");
  if (ps == unit.end()) {
    claim(unit_name + ".weight");
    return {{unit_name + ".weight", {numel}, 0}};
  }
  const std::string form = "; give \"params\": [{\"name\": ..., \"shape\": [...]}, ...]";
  if (!ps->is_array() || ps->empty())
    fail(source, where + ": \"params\" must be a non-empty list, got " + brief_json(*ps) + form);
  if (ps->size() > numel)
    fail(source, where + " has " + std::to_string(ps->size()) + " params but only " +
                     std::to_string(numel) + " elements" + form);
  Counter c(source);
  std::vector<Param> params;
  params.reserve(ps->size());
  uint64_t offset = 0;
  for (size_t i = 0; i < ps->size(); ++i) {
    const json& p = (*ps)[i];
    const std::string at = where + " param " + std::to_string(i);
    if (!p.is_object()) fail(source, at + " must be an object, got " + brief_json(p) + form);
    auto nm = p.find("name");
    if (nm == p.end() || !nm->is_string() || nm->get<std::string>().empty())
      fail(source, at + " needs a non-empty string \"name\"" + form);
    std::string name = nm->get<std::string>();
    auto sh = p.find("shape");
    if (sh == p.end() || !sh->is_array() || sh->empty() || sh->size() > 16)
      fail(source, at + " (\"" + brief_text(name) +
                       "\") needs a \"shape\": a list of 1 to 16 dimensions" + form);
    std::vector<uint64_t> shape;
    uint64_t n = 1;
    for (const json& d : *sh) {
      shape.push_back(positive_value(d, source, "a dimension of \"" + brief_text(name) + "\"",
                                     kMaxLayoutNumel));
      n = c.mul(n, shape.back());
    }
    // An "offset" (as --describe-layout writes it) must be where the parameter starts: the sum of
    // the earlier shapes. A different one was silently replaced before.
    if (auto off = p.find("offset");
        off != p.end() && (!off->is_number_unsigned() || off->get<uint64_t>() != offset))
      fail(source, at + " (\"" + brief_text(name) + "\"): \"offset\" " + brief_json(*off) +
                       " is not where it starts, " + std::to_string(offset) +
                       " (the sum of the earlier params' shapes); fix it or leave \"offset\" out");
    claim(name);
    params.push_back({std::move(name), std::move(shape), offset});
    offset = c.add(offset, n);
  }
  if (offset != numel)
    fail(source, where + ": its params' shapes hold " + std::to_string(offset) +
                     " elements, but its \"numel\" is " + std::to_string(numel) +
                     "; make the shapes multiply out and sum to numel");
  return params;
}

}  // namespace shardaccum::layout_detail
