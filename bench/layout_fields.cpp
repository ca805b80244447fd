#include "bench/layout_fields.hpp"

#include <stdexcept>

namespace shardaccum::layout_detail {

/// Every error names the flag and the value, so a message is actionable wherever it surfaces.
[[noreturn]] void fail(std::string_view source, const std::string& what) {
  // The value is quoted short: a path is rarely longer, a pasted blob would fill the terminal.
  const std::string shown =
      source.size() <= 200 ? std::string(source) : std::string(source.substr(0, 200)) + "...";
  throw std::invalid_argument("--model '" + shown + "': " + what);
}

/// At most `max` characters of `s`, marked when cut: a file's text is quoted short in messages.
std::string brief_text(std::string_view s, size_t max) {
  return s.size() <= max ? std::string(s) : std::string(s.substr(0, max)) + "...";
}

/// Appends `v` as JSON to `out`, stopping once `out` reaches `max` characters; nesting beyond
/// 4 levels shows as [...] / {...}, so neither the recursion nor the text depends on the input.
void render_brief(const json& v, std::string& out, size_t max, int depth) {
  if (out.size() >= max) return;
  if (v.is_array() || v.is_object()) {
    const bool arr = v.is_array();
    if (depth >= 4 && !v.empty()) {
      out += arr ? "[...]" : "{...}";
      return;
    }
    out += arr ? '[' : '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() < max; ++it) {
      out += first ? "" : ", ";
      first = false;
      if (!arr) out += json(brief_text(it.key(), max)).dump() + ": ";
      render_brief(*it, out, max, depth + 1);
    }
    out += arr ? ']' : '}';
  } else if (v.is_string()) {
    out += json(brief_text(v.get_ref<const std::string&>(), max)).dump();
  } else {
    out += v.dump();  // a number, a boolean or null: short
  }
}

/// `v` as JSON text of at most about 80 characters ("..." when cut), for messages.
std::string brief_json(const json& v) {
  constexpr size_t kMax = 80;
  std::string out;
  render_brief(v, out, kMax, 0);
  return out.size() <= kMax ? out : out.substr(0, kMax) + "...";
}

// ---------------------------------------------------------------------------------------------
// JSON field access. const json::operator[] on a missing key is undefined, so only find() is used.

/// A JSON value as an integer in [1, limit]; `what` names it in messages.
uint64_t positive_value(const json& v, std::string_view source, const std::string& what,
                        uint64_t limit) {
  uint64_t x = 0;
  if (v.is_number_unsigned()) {
    x = v.get<uint64_t>();
  } else if (v.is_number_integer()) {  // signed storage: negative from the parser, any sign from
                                       // code
    const int64_t s = v.get<int64_t>();
    if (s < 0) fail(source, what + " must be positive, got " + std::to_string(s));
    x = static_cast<uint64_t>(s);
  } else if (v.is_number_float()) {
    // Integers beyond uint64 also arrive here, as doubles.
    fail(source, what + " must be a positive integer, got " + brief_json(v) +
                     (v.get<double>() > static_cast<double>(limit) ? " (too large)" : ""));
  } else {
    fail(source, what + " must be a positive integer, got " + std::string(v.type_name()) + " " +
                     brief_json(v));
  }
  if (x == 0) fail(source, what + " must be positive, got 0");
  if (x > limit) {
    fail(source,
         what + " = " + std::to_string(x) + " is above the limit of " + std::to_string(limit));
  }
  return x;
}

const json* find_field(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;  // HF writes null for "use the default"
  return &*it;
}

uint64_t required_dim(const json& cfg, const char* key, std::string_view source, uint64_t limit) {
  const json* v = find_field(cfg, key);
  if (v == nullptr) {
    fail(source, std::string("the config has no field \"") + key +
                     "\"; add it (a positive integer) or use a complete config.json");
  }
  return positive_value(*v, source, std::string("field \"") + key + "\"", limit);
}

uint64_t optional_dim(const json& cfg, const char* key, uint64_t fallback,
                      std::string_view source) {
  const json* v = find_field(cfg, key);
  return v == nullptr
             ? fallback
             : positive_value(*v, source, std::string("field \"") + key + "\"", kMaxLayoutNumel);
}

bool optional_flag(const json& cfg, const char* key, bool fallback, std::string_view source) {
  const json* v = find_field(cfg, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) {
    fail(source, std::string("field \"") + key + "\" must be true or false, got " + brief_json(*v));
  }
  return v->get<bool>();
}

}  // namespace shardaccum::layout_detail
