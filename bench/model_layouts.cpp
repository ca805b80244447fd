#include "bench/model_layouts.hpp"

#include "bench/hf_families.hpp"
#include "bench/layout_fields.hpp"
#include "bench/list_params.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace shardaccum {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace layout_detail;

constexpr std::string_view kUniformPrefix = "uniform:";
constexpr std::string_view kForms =
    "use a shipped name, a path to a .json layout or Hugging Face config.json, or "
    "uniform:COUNTxNUMEL (e.g. uniform:16x64M)";

// ---------------------------------------------------------------------------------------------
// Layout builders.

Layout layout_from_units(const json& units, std::string name, std::string_view source) {
  if (!units.is_array()) {
    fail(source, "\"units\" must be a list of {\"name\": ..., \"numel\": ...} objects, got " +
                     std::string(units.type_name()));
  }
  if (units.empty()) fail(source, "the layout has no units; list at least one");
  if (units.size() > kMaxLayoutUnits) {
    fail(source, "the layout has " + std::to_string(units.size()) + " units, above the limit of " +
                     std::to_string(kMaxLayoutUnits));
  }
  Counter count(source);
  Layout layout{std::move(name), {}, "list"};
  layout.units.reserve(units.size());
  std::set<std::string> seen, param_names;
  uint64_t total = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const json& u = units[i];
    const std::string where = "unit " + std::to_string(i);
    if (!u.is_object()) {
      fail(source,
           where + " must be an object {\"name\": ..., \"numel\": ...}, got " + brief_json(u));
    }
    auto nm = u.find("name");
    if (nm == u.end() || !nm->is_string() || nm->get<std::string>().empty()) {
      fail(source, where + " needs a non-empty string \"name\"");
    }
    std::string unit_name = nm->get<std::string>();
    if (!seen.insert(unit_name).second) {
      fail(source,
           "unit name \"" + brief_text(unit_name) + "\" appears twice; unit names must be unique");
    }
    auto ne = u.find("numel");
    if (ne == u.end())
      fail(source, where + " (\"" + brief_text(unit_name) + "\") has no \"numel\"");
    const uint64_t numel = positive_value(
        *ne, source, "numel of unit \"" + brief_text(unit_name) + "\"", kMaxLayoutNumel);
    total = count.add(total, numel);
    std::vector<Param> params = list_unit_params(u, unit_name, numel, param_names, source);
    layout.units.push_back({std::move(unit_name), numel, std::move(params)});
  }
  return layout;
}

Layout from_json(const json& j, std::string name, std::string_view source) {
  if (j.is_array()) return layout_from_units(j, std::move(name), source);
  if (!j.is_object()) {
    fail(source, "expected a JSON object or list, got " + std::string(j.type_name()) + "; " +
                     std::string(kForms));
  }
  if (j.contains("units") && j.contains("model_type")) {
    fail(source, "the JSON has both \"units\" (a layout list) and \"model_type\" (a Hugging Face "
                 "config.json); give either the one or the other");
  }
  if (auto units = j.find("units"); units != j.end()) {
    if (name.empty()) {
      if (auto nm = j.find("name"); nm != j.end() && nm->is_string()) name = nm->get<std::string>();
    }
    return layout_from_units(*units, std::move(name), source);
  }
  auto mt = j.find("model_type");
  if (mt == j.end()) {
    fail(source, "the JSON is neither a layout list (no \"units\") nor a Hugging Face config.json "
                 "(no \"model_type\"); " +
                     std::string(kForms));
  }
  if (!mt->is_string()) fail(source, "\"model_type\" must be a string, got " + brief_json(*mt));
  return layout_from_hf_config(j, std::move(name), source);
}

// ---------------------------------------------------------------------------------------------
// uniform:COUNTxNUMEL

/// Parses all of `digits` as a decimal number; false on anything else (sign, space, overflow).
bool parse_decimal(std::string_view digits, uint64_t& out) {
  if (digits.empty()) return false;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  return ec == std::errc() && end == digits.data() + digits.size();
}

Layout layout_uniform(std::string_view spec) {
  const std::string how = "; write uniform:COUNTxNUMEL with COUNT a positive integer and NUMEL a "
                          "positive integer with an optional K, M or G suffix (1024-based), "
                          "e.g. uniform:16x64M";
  const std::string_view body = spec.substr(kUniformPrefix.size());
  const size_t x = body.find('x');
  if (x == std::string_view::npos) fail(spec, "missing 'x' between COUNT and NUMEL" + how);
  const std::string_view count_s = body.substr(0, x);
  std::string_view numel_s = body.substr(x + 1);

  uint64_t count = 0;
  if (!parse_decimal(count_s, count))
    fail(spec, "COUNT '" + std::string(count_s) + "' is not a number" + how);
  if (count == 0) fail(spec, "COUNT must be at least 1" + how);
  if (count > kMaxLayoutUnits) {
    fail(spec, "COUNT " + std::to_string(count) + " is above the limit of " +
                   std::to_string(kMaxLayoutUnits) + " units; use fewer, larger units");
  }

  uint64_t scale = 1;
  if (!numel_s.empty()) {
    switch (numel_s.back()) {
    case 'K':
    case 'k': scale = uint64_t{1} << 10; break;
    case 'M':
    case 'm': scale = uint64_t{1} << 20; break;
    case 'G':
    case 'g': scale = uint64_t{1} << 30; break;
    default: break;
    }
    if (scale != 1) numel_s.remove_suffix(1);
  }
  uint64_t base = 0;
  if (!parse_decimal(numel_s, base)) {
    fail(spec, "NUMEL '" + std::string(body.substr(x + 1)) +
                   "' is not a number with an optional "
                   "K/M/G suffix" +
                   how);
  }
  if (base == 0) fail(spec, "NUMEL must be at least 1" + how);
  uint64_t numel = 0, total = 0;
  if (__builtin_mul_overflow(base, scale, &numel) || numel > kMaxLayoutNumel ||
      __builtin_mul_overflow(numel, count, &total) || total > kMaxLayoutNumel) {
    fail(spec, "the layout would exceed the limit of " + std::to_string(kMaxLayoutNumel) +
                   " elements; use a smaller COUNT or NUMEL");
  }

  // One weight per unit, as a Linear(8192, NUMEL/8192) would hold it when NUMEL allows.
  constexpr uint64_t kRows = 8192;
  const std::vector<uint64_t> shape = numel % kRows == 0
                                          ? std::vector<uint64_t>{kRows, numel / kRows}
                                          : std::vector<uint64_t>{numel};
  Layout layout{std::string(spec), {}, "uniform"};
  layout.units.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    std::string unit = "unit" + std::to_string(i);
    layout.units.push_back({unit, numel, {{unit + ".weight", shape, 0}}});
  }
  return layout;
}

// ---------------------------------------------------------------------------------------------
// Files.

/// Deepest JSON nesting a model file may have; real configs use 2 or 3 levels.
constexpr int kMaxJsonDepth = 64;

/// A parser callback that refuses nesting deeper than kMaxJsonDepth (nothing later has to recurse
/// deeply) and a key repeated within one object (nlohmann would keep the last one silently).
json::parser_callback_t bounded_parse(std::string_view spec, const fs::path& path) {
  auto keys = std::make_shared<std::vector<std::set<std::string>>>();  // one set per open object
  return [keys, spec = std::string(spec),
          file = path.string()](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start:
      if (depth >= kMaxJsonDepth) {
        fail(spec, "'" + file + "': JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                       " levels; a layout or config.json needs 3");
      }
      if (event == json::parse_event_t::object_start) keys->emplace_back();
      break;
    case json::parse_event_t::object_end: keys->pop_back(); break;
    case json::parse_event_t::key: {
      const std::string& k = parsed.get_ref<const std::string&>();
      if (!keys->back().insert(k).second) {
        fail(spec, "'" + file + "': duplicate key \"" + brief_text(k) +
                       "\" in one object; keep one of them");
      }
      break;
    }
    default: break;
    }
    return true;
  };
}

Layout layout_from_file(const fs::path& path, std::string_view spec) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    fail(spec, "'" + path.string() + "' is a directory; give the path of a .json file");
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))  // a FIFO, a device: never read it
    fail(spec, "'" + path.string() +
                   "' is not a regular file (a device, a pipe or a socket); give the path of "
                   "a .json file");
  if (!fs::is_regular_file(path, ec)) {
    fail(spec, "file '" + path.string() +
                   "' not found; check the path (relative paths start at "
                   "the working directory)");
  }
  std::ifstream in(path);
  if (!in) fail(spec, "cannot open '" + path.string() + "'; check its permissions");
  json j;
  try {
    j = json::parse(in, bounded_parse(spec, path));
  } catch (const json::exception& e) {
    // nlohmann's text quotes the last token read, which a hostile file can make long.
    fail(spec, "'" + path.string() + "' is not valid JSON: " + brief_text(e.what(), 200) +
                   "; fix the file or download config.json again");
  }
  return from_json(j, path.stem().string(), spec);
}

}  // namespace

/// Stems of the *.json files in `dirs`, sorted and unique: the names `--model` accepts.
std::vector<std::string> shipped_model_names(const std::vector<std::string>& dirs) {
  std::set<std::string> names;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      std::error_code ec2;
      if (p.extension() == ".json" && it->is_regular_file(ec2)) names.insert(p.stem().string());
    }
  }
  return {names.begin(), names.end()};
}

std::string model_choices_help(const std::vector<std::string>& dirs) {
  std::string names, types;
  for (const std::string& n : shipped_model_names(dirs)) names += (names.empty() ? "" : ", ") + n;
  for (const std::string& t : supported_model_types()) types += (types.empty() ? "" : ", ") + t;
  return "a shipped name (" + (names.empty() ? std::string("none found") : names) +
         ") or a .json file (a layout list, or a Hugging Face config.json of model_type " + types +
         ")";
}

Layout layout_from_json(const nlohmann::json& j, const std::string& name) {
  return from_json(j, name, name);
}

Layout load_layout(std::string_view spec, const std::vector<std::string>& config_dirs) {
  if (spec.substr(0, kUniformPrefix.size()) == kUniformPrefix) return layout_uniform(spec);
  if (spec.empty()) fail(spec, "empty value; " + std::string(kForms));

  const bool is_path = spec.find('/') != std::string_view::npos ||
                       (spec.size() >= 5 && spec.substr(spec.size() - 5) == ".json");
  if (is_path) return layout_from_file(fs::path(spec), spec);

  for (const std::string& dir : config_dirs) {
    const fs::path candidate = fs::path(dir) / (std::string(spec) + ".json");
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return layout_from_file(candidate, spec);
  }
  std::string known;
  for (const std::string& n : shipped_model_names(config_dirs))
    known += (known.empty() ? "" : ", ") + n;
  std::string searched;
  for (const std::string& d : config_dirs) searched += (searched.empty() ? "" : ", ") + d;
  fail(spec, "unknown model name. Shipped models: " + (known.empty() ? "(none found)" : known) +
                 " (searched: " + (searched.empty() ? "no directories" : searched) +
                 "); otherwise pass a path to a .json layout or Hugging Face config.json, or "
                 "uniform:COUNTxNUMEL (e.g. uniform:16x64M)");
}

}  // namespace shardaccum
