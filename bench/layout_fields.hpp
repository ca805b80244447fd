#pragma once
// What the layout loaders share (bench/model_layouts.cpp, bench/hf_layouts.cpp): errors that name
// --model, short quoting of the user's text, checked access to a config's fields, checked sums.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/model_layouts.hpp"

namespace shardaccum::layout_detail {

using nlohmann::json;

/// Throws std::invalid_argument "--model 'SOURCE': WHAT" (the value quoted short).
[[noreturn]] void fail(std::string_view source, const std::string& what);
/// At most `max` characters of `s`, marked when cut.
std::string brief_text(std::string_view s, size_t max = 80);
/// `v` as JSON text of at most about 80 characters ("..." when cut), for messages.
std::string brief_json(const json& v);
/// A JSON value as an integer in [1, limit]; `what` names it in messages. Throws via fail().
uint64_t positive_value(const json& v, std::string_view source, const std::string& what,
                        uint64_t limit);
/// The field `key` of `obj`, or null when absent or JSON null (HF's "use the default").
const json* find_field(const json& obj, const char* key);
/// A required positive integer field (at most `limit`). Throws via fail() naming the field.
uint64_t required_dim(const json& cfg, const char* key, std::string_view source,
                      uint64_t limit = kMaxLayoutNumel);
/// An optional positive integer field, `fallback` when absent.
uint64_t optional_dim(const json& cfg, const char* key, uint64_t fallback, std::string_view source);
/// An optional boolean field, `fallback` when absent. Throws via fail() for a non-boolean.
bool optional_flag(const json& cfg, const char* key, bool fallback, std::string_view source);

/// Products and sums of config fields, checked: a mistyped config must give an error, not wrap.
class Counter {
 public:
  explicit Counter(std::string_view source) : source_(source) {}

  uint64_t mul(uint64_t a, uint64_t b) const {
    uint64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r) || r > kMaxLayoutNumel) too_large();
    return r;
  }
  uint64_t add(uint64_t a, uint64_t b) const {
    uint64_t r = 0;
    if (__builtin_add_overflow(a, b, &r) || r > kMaxLayoutNumel) too_large();
    return r;
  }

 private:
  [[noreturn]] void too_large() const {
    fail(source_, "the parameter count exceeds the limit of " + std::to_string(kMaxLayoutNumel) +
                      " elements; check the sizes in the config");
  }
  std::string_view source_;
};

/// Builds one unit parameter by parameter, in named_parameters() order: each param's offset is
/// the running sum, and the unit's numel their total (products and sums checked by the Counter).
class UnitBuilder {
 public:
  UnitBuilder(const Counter& c, std::string unit_name) : c_(c) {
    unit_.name = std::move(unit_name);
  }

  UnitBuilder& add(std::string name, std::vector<uint64_t> shape) {
    uint64_t n = 1;
    for (uint64_t d : shape) n = c_.mul(n, d);
    unit_.params.push_back({std::move(name), std::move(shape), unit_.numel});
    unit_.numel = c_.add(unit_.numel, n);
    return *this;
  }
  /// The unit; the builder is left empty.
  FlatParam take() { return std::move(unit_); }

 private:
  const Counter& c_;
  FlatParam unit_;
};

}  // namespace shardaccum::layout_detail
