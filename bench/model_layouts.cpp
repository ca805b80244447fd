#include "bench/model_layouts.hpp"

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

constexpr std::string_view kUniformPrefix = "uniform:";
constexpr std::string_view kForms =
    "use a shipped name, a path to a .json layout or Hugging Face config.json, or "
    "uniform:COUNTxNUMEL (e.g. uniform:16x64M)";

/// Every error names the flag and the value, so a message is actionable wherever it surfaces.
[[noreturn]] void fail(std::string_view source, const std::string &what) {
  // The value is quoted short: a path is rarely longer, a pasted blob would fill the terminal.
  const std::string shown = source.size() <= 200 ? std::string(source) : std::string(source.substr(0, 200)) + "...";
  throw std::invalid_argument("--model '" + shown + "': " + what);
}

/// At most `max` characters of `s`, marked when cut: a file's text is quoted short in messages.
std::string brief_text(std::string_view s, size_t max = 80) {
  return s.size() <= max ? std::string(s) : std::string(s.substr(0, max)) + "...";
}

/// Appends `v` as JSON to `out`, stopping once `out` reaches `max` characters; nesting beyond
/// 4 levels shows as [...] / {...}, so neither the recursion nor the text depends on the input.
void render_brief(const json &v, std::string &out, size_t max, int depth) {
  if (out.size() >= max)
    return;
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
      if (!arr)
        out += json(brief_text(it.key(), max)).dump() + ": ";
      render_brief(*it, out, max, depth + 1);
    }
    out += arr ? ']' : '}';
  } else if (v.is_string()) {
    out += json(brief_text(v.get_ref<const std::string &>(), max)).dump();
  } else {
    out += v.dump(); // a number, a boolean or null: short
  }
}

/// `v` as JSON text of at most about 80 characters ("..." when cut), for messages.
std::string brief_json(const json &v) {
  constexpr size_t kMax = 80;
  std::string out;
  render_brief(v, out, kMax, 0);
  return out.size() <= kMax ? out : out.substr(0, kMax) + "...";
}

/// Products and sums of config fields, checked: a mistyped config must give an error, not wrap.
class Counter {
public:
  explicit Counter(std::string_view source) : source_(source) {}

  uint64_t mul(uint64_t a, uint64_t b) const {
    uint64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r) || r > kMaxLayoutNumel)
      too_large();
    return r;
  }
  uint64_t add(uint64_t a, uint64_t b) const {
    uint64_t r = 0;
    if (__builtin_add_overflow(a, b, &r) || r > kMaxLayoutNumel)
      too_large();
    return r;
  }

private:
  [[noreturn]] void too_large() const {
    fail(source_, "the parameter count exceeds the limit of " + std::to_string(kMaxLayoutNumel) +
                      " elements; check the sizes in the config");
  }
  std::string_view source_;
};

// ---------------------------------------------------------------------------------------------
// JSON field access. const json::operator[] on a missing key is undefined, so only find() is used.

/// A JSON value as an integer in [1, limit]; `what` names it in messages.
uint64_t positive_value(const json &v, std::string_view source, const std::string &what,
                        uint64_t limit) {
  uint64_t x = 0;
  if (v.is_number_unsigned()) {
    x = v.get<uint64_t>();
  } else if (v.is_number_integer()) { // signed storage: negative from the parser, any sign from
                                      // code
    const int64_t s = v.get<int64_t>();
    if (s < 0)
      fail(source, what + " must be positive, got " + std::to_string(s));
    x = static_cast<uint64_t>(s);
  } else if (v.is_number_float()) {
    // Integers beyond uint64 also arrive here, as doubles.
    fail(source, what + " must be a positive integer, got " + brief_json(v) +
                     (v.get<double>() > static_cast<double>(limit) ? " (too large)" : ""));
  } else {
    fail(source,
         what + " must be a positive integer, got " + std::string(v.type_name()) + " " + brief_json(v));
  }
  if (x == 0)
    fail(source, what + " must be positive, got 0");
  if (x > limit) {
    fail(source,
         what + " = " + std::to_string(x) + " is above the limit of " + std::to_string(limit));
  }
  return x;
}

const json *find_field(const json &obj, const char *key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null())
    return nullptr; // HF writes null for "use the default"
  return &*it;
}

uint64_t required_dim(const json &cfg, const char *key, std::string_view source,
                      uint64_t limit = kMaxLayoutNumel) {
  const json *v = find_field(cfg, key);
  if (v == nullptr) {
    fail(source, std::string("the config has no field \"") + key +
                     "\"; add it (a positive integer) or use a complete config.json");
  }
  return positive_value(*v, source, std::string("field \"") + key + "\"", limit);
}

uint64_t optional_dim(const json &cfg, const char *key, uint64_t fallback,
                      std::string_view source) {
  const json *v = find_field(cfg, key);
  return v == nullptr
             ? fallback
             : positive_value(*v, source, std::string("field \"") + key + "\"", kMaxLayoutNumel);
}

bool optional_flag(const json &cfg, const char *key, bool fallback, std::string_view source) {
  const json *v = find_field(cfg, key);
  if (v == nullptr)
    return fallback;
  if (!v->is_boolean()) {
    fail(source, std::string("field \"") + key + "\" must be true or false, got " + brief_json(*v));
  }
  return v->get<bool>();
}

// ---------------------------------------------------------------------------------------------
// Layout builders.

Layout layout_from_units(const json &units, std::string name, std::string_view source) {
  if (!units.is_array()) {
    fail(source, "\"units\" must be a list of {\"name\": ..., \"numel\": ...} objects, got " +
                     std::string(units.type_name()));
  }
  if (units.empty())
    fail(source, "the layout has no units; list at least one");
  if (units.size() > kMaxLayoutUnits) {
    fail(source, "the layout has " + std::to_string(units.size()) + " units, above the limit of " +
                     std::to_string(kMaxLayoutUnits));
  }
  Counter count(source);
  Layout layout{std::move(name), {}};
  layout.units.reserve(units.size());
  std::set<std::string> seen;
  uint64_t total = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const json &u = units[i];
    const std::string where = "unit " + std::to_string(i);
    if (!u.is_object()) {
      fail(source, where + " must be an object {\"name\": ..., \"numel\": ...}, got " + brief_json(u));
    }
    auto nm = u.find("name");
    if (nm == u.end() || !nm->is_string() || nm->get<std::string>().empty()) {
      fail(source, where + " needs a non-empty string \"name\"");
    }
    std::string unit_name = nm->get<std::string>();
    if (!seen.insert(unit_name).second) {
      fail(source, "unit name \"" + brief_text(unit_name) + "\" appears twice; unit names must be unique");
    }
    auto ne = u.find("numel");
    if (ne == u.end())
      fail(source, where + " (\"" + brief_text(unit_name) + "\") has no \"numel\"");
    const uint64_t numel =
        positive_value(*ne, source, "numel of unit \"" + brief_text(unit_name) + "\"", kMaxLayoutNumel);
    total = count.add(total, numel);
    layout.units.push_back({std::move(unit_name), numel});
  }
  return layout;
}

// GPT2LMHeadModel (transformers/models/gpt2/modeling_gpt2.py): Conv1D layers carry biases,
// LayerNorms carry weight and bias, lm_head is tied to wte unless tie_word_embeddings is false.
Layout layout_gpt2(const json &cfg, std::string name, std::string_view source) {
  Counter c(source);
  const uint64_t d = required_dim(cfg, "n_embd", source);
  const uint64_t layers = required_dim(cfg, "n_layer", source, kMaxLayoutUnits - 3);
  const uint64_t vocab = required_dim(cfg, "vocab_size", source);
  const uint64_t positions = required_dim(cfg, "n_positions", source);
  const uint64_t inner = optional_dim(cfg, "n_inner", c.mul(4, d), source);
  const bool tied = optional_flag(cfg, "tie_word_embeddings", true, source);

  const uint64_t layer_norm = c.mul(2, d);                           // weight + bias
  const uint64_t c_attn = c.add(c.mul(d, c.mul(3, d)), c.mul(3, d)); // qkv: d -> 3d
  const uint64_t attn_proj = c.add(c.mul(d, d), d);                  // d -> d
  const uint64_t c_fc = c.add(c.mul(d, inner), inner);               // d -> inner
  const uint64_t mlp_proj = c.add(c.mul(inner, d), d);               // inner -> d
  const uint64_t block =
      c.add(c.add(c.add(c.mul(2, layer_norm), c_attn), attn_proj), c.add(c_fc, mlp_proj));
  const uint64_t embed = c.add(c.mul(vocab, d), c.mul(positions, d));

  Layout layout{std::move(name), {}};
  layout.units.reserve(layers + 3);
  layout.units.push_back({"wte+wpe", embed});
  uint64_t total = embed;
  for (uint64_t i = 0; i < layers; ++i) {
    total = c.add(total, block);
    layout.units.push_back({"h." + std::to_string(i), block});
  }
  total = c.add(total, layer_norm);
  layout.units.push_back({"ln_f", layer_norm});
  if (!tied) {
    const uint64_t head = c.mul(vocab, d); // nn.Linear(n_embd, vocab_size, bias=False)
    c.add(total, head);
    layout.units.push_back({"lm_head", head});
  }
  return layout;
}

// LlamaForCausalLM / MistralForCausalLM (transformers/models/{llama,mistral}/modeling_*.py):
// RMSNorm has a weight only; q/k/v/o carry biases iff attention_bias, the MLP iff mlp_bias.
Layout layout_llama(const json &cfg, std::string name, std::string_view source) {
  Counter c(source);
  const uint64_t d = required_dim(cfg, "hidden_size", source);
  const uint64_t inter = required_dim(cfg, "intermediate_size", source);
  const uint64_t layers = required_dim(cfg, "num_hidden_layers", source, kMaxLayoutUnits - 3);
  const uint64_t heads = required_dim(cfg, "num_attention_heads", source);
  const uint64_t kv_heads = optional_dim(cfg, "num_key_value_heads", heads, source);
  const uint64_t vocab = required_dim(cfg, "vocab_size", source);
  // Grouped-query attention shares each K/V head among heads / kv_heads query heads.
  if (kv_heads > heads || heads % kv_heads != 0) {
    fail(source, "field \"num_key_value_heads\" (" + std::to_string(kv_heads) +
                     ") must divide field \"num_attention_heads\" (" + std::to_string(heads) +
                     "); fix one of them");
  }
  // transformers uses floor division when head_dim is not given.
  const json *hd = find_field(cfg, "head_dim");
  const uint64_t head_dim = hd != nullptr
                                ? positive_value(*hd, source, "field \"head_dim\"", kMaxLayoutNumel)
                                : d / heads;
  if (head_dim == 0) {
    fail(source, "hidden_size " + std::to_string(d) + " / num_attention_heads " +
                     std::to_string(heads) +
                     " gives head_dim 0; set \"head_dim\" or fix the sizes");
  }
  const bool tied = optional_flag(cfg, "tie_word_embeddings", false, source);
  const bool attn_bias = optional_flag(cfg, "attention_bias", false, source);
  const bool mlp_bias = optional_flag(cfg, "mlp_bias", false, source);

  const uint64_t q_out = c.mul(heads, head_dim);
  const uint64_t kv_out = c.mul(kv_heads, head_dim);
  auto linear = [&](uint64_t in, uint64_t out, bool bias) {
    return c.add(c.mul(in, out), bias ? out : 0);
  };
  const uint64_t attn =
      c.add(c.add(linear(d, q_out, attn_bias), c.mul(2, linear(d, kv_out, attn_bias))),
            linear(q_out, d, attn_bias));
  const uint64_t mlp = c.add(c.mul(2, linear(d, inter, mlp_bias)), linear(inter, d, mlp_bias));
  const uint64_t block = c.add(c.add(attn, mlp), c.mul(2, d)); // input + post-attention norms
  const uint64_t embed = c.mul(vocab, d);

  Layout layout{std::move(name), {}};
  layout.units.reserve(layers + 3);
  layout.units.push_back({"embed_tokens", embed});
  uint64_t total = embed;
  for (uint64_t i = 0; i < layers; ++i) {
    total = c.add(total, block);
    layout.units.push_back({"layers." + std::to_string(i), block});
  }
  total = c.add(total, d);
  layout.units.push_back({"norm", d});
  if (!tied) {
    c.add(total, embed); // lm_head: nn.Linear(hidden_size, vocab_size, bias=False)
    layout.units.push_back({"lm_head", embed});
  }
  return layout;
}

Layout from_json(const json &j, std::string name, std::string_view source) {
  if (j.is_array())
    return layout_from_units(j, std::move(name), source);
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
      if (auto nm = j.find("name"); nm != j.end() && nm->is_string())
        name = nm->get<std::string>();
    }
    return layout_from_units(*units, std::move(name), source);
  }
  auto mt = j.find("model_type");
  if (mt == j.end()) {
    fail(source, "the JSON is neither a layout list (no \"units\") nor a Hugging Face config.json "
                 "(no \"model_type\"); " +
                     std::string(kForms));
  }
  if (!mt->is_string())
    fail(source, "\"model_type\" must be a string, got " + brief_json(*mt));
  const std::string type = mt->get<std::string>();
  if (type == "gpt2")
    return layout_gpt2(j, std::move(name), source);
  if (type == "llama" || type == "mistral")
    return layout_llama(j, std::move(name), source);
  fail(source, "unsupported model_type \"" + brief_text(type) +
                   "\"; supported: gpt2, llama, mistral. For another model, write a layout list "
                   "{\"units\": [{\"name\": ..., \"numel\": ...}]} or use uniform:COUNTxNUMEL");
}

// ---------------------------------------------------------------------------------------------
// uniform:COUNTxNUMEL

/// Parses all of `digits` as a decimal number; false on anything else (sign, space, overflow).
bool parse_decimal(std::string_view digits, uint64_t &out) {
  if (digits.empty())
    return false;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  return ec == std::errc() && end == digits.data() + digits.size();
}

Layout layout_uniform(std::string_view spec) {
  const std::string how = "; write uniform:COUNTxNUMEL with COUNT a positive integer and NUMEL a "
                          "positive integer with an optional K, M or G suffix (1024-based), "
                          "e.g. uniform:16x64M";
  const std::string_view body = spec.substr(kUniformPrefix.size());
  const size_t x = body.find('x');
  if (x == std::string_view::npos)
    fail(spec, "missing 'x' between COUNT and NUMEL" + how);
  const std::string_view count_s = body.substr(0, x);
  std::string_view numel_s = body.substr(x + 1);

  uint64_t count = 0;
  if (!parse_decimal(count_s, count))
    fail(spec, "COUNT '" + std::string(count_s) + "' is not a number" + how);
  if (count == 0)
    fail(spec, "COUNT must be at least 1" + how);
  if (count > kMaxLayoutUnits) {
    fail(spec, "COUNT " + std::to_string(count) + " is above the limit of " +
                   std::to_string(kMaxLayoutUnits) + " units; use fewer, larger units");
  }

  uint64_t scale = 1;
  if (!numel_s.empty()) {
    switch (numel_s.back()) {
    case 'K':
    case 'k':
      scale = uint64_t{1} << 10;
      break;
    case 'M':
    case 'm':
      scale = uint64_t{1} << 20;
      break;
    case 'G':
    case 'g':
      scale = uint64_t{1} << 30;
      break;
    default:
      break;
    }
    if (scale != 1)
      numel_s.remove_suffix(1);
  }
  uint64_t base = 0;
  if (!parse_decimal(numel_s, base)) {
    fail(spec, "NUMEL '" + std::string(body.substr(x + 1)) +
                   "' is not a number with an optional "
                   "K/M/G suffix" +
                   how);
  }
  if (base == 0)
    fail(spec, "NUMEL must be at least 1" + how);
  uint64_t numel = 0, total = 0;
  if (__builtin_mul_overflow(base, scale, &numel) || numel > kMaxLayoutNumel ||
      __builtin_mul_overflow(numel, count, &total) || total > kMaxLayoutNumel) {
    fail(spec, "the layout would exceed the limit of " + std::to_string(kMaxLayoutNumel) +
                   " elements; use a smaller COUNT or NUMEL");
  }

  Layout layout{std::string(spec), {}};
  layout.units.reserve(count);
  for (uint64_t i = 0; i < count; ++i)
    layout.units.push_back({"unit" + std::to_string(i), numel});
  return layout;
}

// ---------------------------------------------------------------------------------------------
// Files.

/// Stems of the *.json files in `dirs`, sorted and unique: the names `--model` accepts.
std::vector<std::string> shipped_names(const std::vector<std::string> &dirs) {
  std::set<std::string> names;
  for (const std::string &dir : dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path &p = it->path();
      std::error_code ec2;
      if (p.extension() == ".json" && it->is_regular_file(ec2))
        names.insert(p.stem().string());
    }
  }
  return {names.begin(), names.end()};
}

/// Deepest JSON nesting a model file may have; real configs use 2 or 3 levels.
constexpr int kMaxJsonDepth = 64;

/// A parser callback that refuses nesting deeper than kMaxJsonDepth (nothing later has to recurse
/// deeply) and a key repeated within one object (nlohmann would keep the last one silently).
json::parser_callback_t bounded_parse(std::string_view spec, const fs::path &path) {
  auto keys = std::make_shared<std::vector<std::set<std::string>>>(); // one set per open object
  return [keys, spec = std::string(spec), file = path.string()](int depth, json::parse_event_t event,
                                                                json &parsed) {
    switch (event) {
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start:
      if (depth >= kMaxJsonDepth) {
        fail(spec, "'" + file + "': JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                       " levels; a layout or config.json needs 3");
      }
      if (event == json::parse_event_t::object_start)
        keys->emplace_back();
      break;
    case json::parse_event_t::object_end:
      keys->pop_back();
      break;
    case json::parse_event_t::key: {
      const std::string &k = parsed.get_ref<const std::string &>();
      if (!keys->back().insert(k).second) {
        fail(spec, "'" + file + "': duplicate key \"" + brief_text(k) +
                       "\" in one object; keep one of them");
      }
      break;
    }
    default:
      break;
    }
    return true;
  };
}

Layout layout_from_file(const fs::path &path, std::string_view spec) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    fail(spec, "'" + path.string() + "' is a directory; give the path of a .json file");
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))  // a FIFO, a device: never read it
    fail(spec, "'" + path.string() + "' is not a regular file (a device, a pipe or a socket); give the path of "
                   "a .json file");
  if (!fs::is_regular_file(path, ec)) {
    fail(spec, "file '" + path.string() +
                   "' not found; check the path (relative paths start at "
                   "the working directory)");
  }
  std::ifstream in(path);
  if (!in)
    fail(spec, "cannot open '" + path.string() + "'; check its permissions");
  json j;
  try {
    j = json::parse(in, bounded_parse(spec, path));
  } catch (const json::exception &e) {
    // nlohmann's text quotes the last token read, which a hostile file can make long.
    fail(spec, "'" + path.string() + "' is not valid JSON: " + brief_text(e.what(), 200) +
                   "; fix the file or download config.json again");
  }
  return from_json(j, path.stem().string(), spec);
}

} // namespace

Layout layout_from_json(const nlohmann::json &j, const std::string &name) {
  return from_json(j, name, name);
}

Layout load_layout(std::string_view spec, const std::vector<std::string> &config_dirs) {
  if (spec.substr(0, kUniformPrefix.size()) == kUniformPrefix)
    return layout_uniform(spec);
  if (spec.empty())
    fail(spec, "empty value; " + std::string(kForms));

  const bool is_path = spec.find('/') != std::string_view::npos ||
                       (spec.size() >= 5 && spec.substr(spec.size() - 5) == ".json");
  if (is_path)
    return layout_from_file(fs::path(spec), spec);

  for (const std::string &dir : config_dirs) {
    const fs::path candidate = fs::path(dir) / (std::string(spec) + ".json");
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec))
      return layout_from_file(candidate, spec);
  }
  std::string known;
  for (const std::string &n : shipped_names(config_dirs))
    known += (known.empty() ? "" : ", ") + n;
  std::string searched;
  for (const std::string &d : config_dirs)
    searched += (searched.empty() ? "" : ", ") + d;
  fail(spec, "unknown model name. Shipped models: " + (known.empty() ? "(none found)" : known) +
                 " (searched: " + (searched.empty() ? "no directories" : searched) +
                 "); otherwise pass a path to a .json layout or Hugging Face config.json, or "
                 "uniform:COUNTxNUMEL (e.g. uniform:16x64M)");
}

} // namespace shardaccum
