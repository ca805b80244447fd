// Model layouts: exact parameter counts of the shipped configs, the uniform: syntax, JSON layout
// lists, and a clear `--model` error for every bad input.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/model_layouts.hpp"
#include "tests/cpp/layout_checks.hpp"

namespace shardaccum {
namespace {

using nlohmann::json;
using testing_layouts::read_config;

const std::vector<std::string> kDirs = {SHARDACCUM_CONFIG_DIR};

/// Writes `content` to a fresh file under the test temp dir and returns its path.
std::string write_temp(const std::string& file, const std::string& content) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "shardaccum_test_layouts";
  std::filesystem::create_directories(dir);
  const std::filesystem::path p = dir / file;
  std::ofstream(p) << content;
  return p.string();
}

/// Runs `f`, which must throw std::invalid_argument naming --model and containing `needle`.
void expect_model_error(const std::function<void()>& f, const std::string& needle,
                        const std::string& label) {
  SCOPED_TRACE(label);
  try {
    f();
    ADD_FAILURE() << "no exception for " << label;
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("--model"), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << "expected '" << needle << "' in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type for " << label << ": " << e.what();
  }
}

void expect_spec_error(const std::string& spec, const std::string& needle) {
  expect_model_error([&] { load_layout(spec, kDirs); }, needle, spec);
}

void expect_json_error(const json& j, const std::string& needle) {
  expect_model_error([&] { layout_from_json(j, "t"); }, needle, j.dump());
}

// ---------------------------------------------------------------------------------------------
// Shipped configs: totals equal the parameter counts of the real Hugging Face models.

TEST(Layouts, Gpt2) {
  const Layout l = load_layout("gpt2", kDirs);
  EXPECT_EQ(l.name, "gpt2");
  EXPECT_EQ(l.total_numel(), 124'439'808u);
  ASSERT_EQ(l.units.size(), 14u);  // wte+wpe, h.0..h.11, ln_f; lm_head is tied to wte
  EXPECT_EQ(l.units.front().name, "wte+wpe");
  EXPECT_EQ(l.units.front().numel, 50257u * 768 + 1024u * 768);
  EXPECT_EQ(l.units[1].name, "h.0");
  EXPECT_EQ(l.units[1].numel, 7'087'872u);  // 12 d^2 + 13 d with d = 768
  EXPECT_EQ(l.units[12].name, "h.11");
  EXPECT_EQ(l.units.back().name, "ln_f");
  EXPECT_EQ(l.units.back().numel, 2u * 768);
}

TEST(Layouts, Gpt2Xl) {
  const Layout l = load_layout("gpt2-xl", kDirs);
  EXPECT_EQ(l.total_numel(), 1'557'611'200u);
  EXPECT_EQ(l.units.size(), 50u);
  EXPECT_EQ(l.units[1].numel, 30'740'800u);
}

TEST(Layouts, Llama2_7b) {
  const Layout l = load_layout("llama2-7b", kDirs);
  EXPECT_EQ(l.name, "llama2-7b");
  EXPECT_EQ(l.total_numel(), 6'738'415'616u);
  ASSERT_EQ(l.units.size(), 35u);  // 32 blocks + embed_tokens + norm + lm_head
  EXPECT_EQ(l.units[0].name, "embed_tokens");
  EXPECT_EQ(l.units[0].numel, 131'072'000u);
  EXPECT_EQ(l.units[1].name, "layers.0");
  EXPECT_EQ(l.units[1].numel, 202'383'360u);
  EXPECT_EQ(l.units[32].name, "layers.31");
  EXPECT_EQ(l.units[33].name, "norm");
  EXPECT_EQ(l.units[33].numel, 4096u);
  EXPECT_EQ(l.units[34].name, "lm_head");
  EXPECT_EQ(l.units[34].numel, 131'072'000u);
}

TEST(Layouts, Llama31_8b) {
  const Layout l = load_layout("llama3.1-8b", kDirs);
  EXPECT_EQ(l.name, "llama3.1-8b");
  EXPECT_EQ(l.total_numel(), 8'030'261'248u);
  EXPECT_EQ(l.units.size(), 35u);
  EXPECT_EQ(l.units[1].numel, 218'112'000u);  // GQA: k and v project to 8 * 128
}

TEST(Layouts, Mistral7b) {
  const Layout l = load_layout("mistral-7b", kDirs);
  EXPECT_EQ(l.total_numel(), 7'241'732'096u);
  EXPECT_EQ(l.units.size(), 35u);
}

TEST(Layouts, DesignExampleBytes) {
  // docs/DESIGN.md §3: llama2-7b, N=2, fp32, sync (K=4, s=4), gpu-add moves D2H s*(P_u/N)*4 and
  // H2D (s-1)*(P_u/N)*4 bytes per rank, summed over units.
  const Layout l = load_layout("llama2-7b", kDirs);
  uint64_t shard_elems = 0;
  for (const FlatParam& u : l.units) shard_elems += shard_numel(u.numel, 2);
  EXPECT_EQ(4 * shard_elems * 4, 53'907'324'928u);
  EXPECT_EQ(3 * shard_elems * 4, 40'430'493'696u);
}

TEST(Layouts, PathAndSearchOrder) {
  const Layout by_path = load_layout(std::string(SHARDACCUM_CONFIG_DIR) + "/gpt2.json", kDirs);
  EXPECT_EQ(by_path.name, "gpt2");
  EXPECT_EQ(by_path.total_numel(), 124'439'808u);

  // The first directory that has the name wins; missing directories are skipped.
  const std::string own = write_temp("gpt2.json", R"([{"name": "only", "numel": 5}])");
  const std::string own_dir = std::filesystem::path(own).parent_path().string();
  const Layout first = load_layout("gpt2", {"/nonexistent/dir", own_dir, SHARDACCUM_CONFIG_DIR});
  EXPECT_EQ(first.total_numel(), 5u);
  EXPECT_EQ(load_layout("gpt2", {SHARDACCUM_CONFIG_DIR, own_dir}).total_numel(), 124'439'808u);
}

// ---------------------------------------------------------------------------------------------
// Config variants: ties and biases change the counts exactly as in the real modules.

TEST(Layouts, LlamaTiedEmbeddings) {
  json cfg = read_config("llama2-7b");
  cfg["tie_word_embeddings"] = true;
  const Layout tied = layout_from_json(cfg, "tied");
  EXPECT_EQ(tied.name, "tied");
  EXPECT_EQ(tied.units.size(), 34u);
  for (const FlatParam& u : tied.units) EXPECT_NE(u.name, "lm_head");
  EXPECT_EQ(tied.units.back().name, "norm");
  EXPECT_EQ(tied.total_numel(), 6'738'415'616u - uint64_t{32000} * 4096u);
}

TEST(Layouts, Gpt2UntiedAndInner) {
  json cfg = read_config("gpt2");
  cfg["tie_word_embeddings"] = false;
  const Layout untied = layout_from_json(cfg, "g");
  ASSERT_EQ(untied.units.size(), 15u);
  EXPECT_EQ(untied.units.back().name, "lm_head");
  EXPECT_EQ(untied.total_numel(), 124'439'808u + 50257u * 768u);

  json small = {{"model_type", "gpt2"}, {"n_embd", 4},      {"n_layer", 1},
                {"vocab_size", 10},     {"n_positions", 3}, {"n_inner", 6}};
  // wte+wpe 40+12; block: ln 8+8, c_attn 48+12, c_proj 16+4, c_fc 24+6, c_proj 24+4; ln_f 8.
  const Layout s = layout_from_json(small, "s");
  ASSERT_EQ(s.units.size(), 3u);
  EXPECT_EQ(s.units[0].numel, 52u);
  EXPECT_EQ(s.units[1].numel, 154u);
  EXPECT_EQ(s.units[2].numel, 8u);
  small["n_inner"] = nullptr;  // null means 4 * n_embd = 16
  EXPECT_EQ(layout_from_json(small, "s").units[1].numel, 16u + 60 + 20 + (64 + 16) + (64 + 4));
}

TEST(Layouts, LlamaSmallByHand) {
  // hidden 8, heads 2 (head_dim 4), kv 1: q 64, k 32, v 32, o 64; MLP 3*8*16 = 384; norms 16.
  json cfg = {{"model_type", "mistral"}, {"hidden_size", 8},         {"intermediate_size", 16},
              {"num_hidden_layers", 2},  {"num_attention_heads", 2}, {"num_key_value_heads", 1},
              {"vocab_size", 10}};
  const Layout l = layout_from_json(cfg, "m");
  ASSERT_EQ(l.units.size(), 5u);
  EXPECT_EQ(l.units[1].numel, 592u);
  EXPECT_EQ(l.units[2].name, "layers.1");
  EXPECT_EQ(l.total_numel(), 80u + 2 * 592 + 8 + 80);

  cfg["model_type"] = "llama";
  cfg["attention_bias"] = true;  // + q 8, k 4, v 4, o 8
  EXPECT_EQ(layout_from_json(cfg, "m").units[1].numel, 592u + 24);
  cfg["mlp_bias"] = true;  // + gate 16, up 16, down 8
  EXPECT_EQ(layout_from_json(cfg, "m").units[1].numel, 592u + 24 + 40);
  cfg["head_dim"] = 2;  // explicit head_dim wins: q 8*4, k 8*2, v 8*2, o 4*8, biases 4+2+2+8
  EXPECT_EQ(layout_from_json(cfg, "m").units[1].numel, 32u + 16 + 16 + 32 + 16 + 384 + 40 + 16);
  cfg.erase("num_key_value_heads");  // defaults to num_attention_heads
  cfg.erase("head_dim");
  cfg["attention_bias"] = false;
  cfg["mlp_bias"] = false;
  EXPECT_EQ(layout_from_json(cfg, "m").units[1].numel, 64u * 4 + 384 + 16);
}

// ---------------------------------------------------------------------------------------------
// uniform:COUNTxNUMEL

TEST(Layouts, Uniform) {
  const Layout l = load_layout("uniform:16x64M", kDirs);
  EXPECT_EQ(l.name, "uniform:16x64M");
  EXPECT_EQ(l.total_numel(), 1'073'741'824u);
  ASSERT_EQ(l.units.size(), 16u);
  EXPECT_EQ(l.units[0].name, "unit0");
  EXPECT_EQ(l.units[15].name, "unit15");
  EXPECT_EQ(l.units[7].numel, 67'108'864u);

  EXPECT_EQ(load_layout("uniform:8x1M", kDirs).total_numel(), 8u * 1'048'576u);
  const Layout small = load_layout("uniform:3x1000", kDirs);
  ASSERT_EQ(small.units.size(), 3u);
  EXPECT_EQ(small.units[2].numel, 1000u);
  EXPECT_EQ(load_layout("uniform:2x7", kDirs).total_numel(), 14u);
  EXPECT_EQ(load_layout("uniform:1x3K", kDirs).total_numel(), 3072u);
  EXPECT_EQ(load_layout("uniform:2x1G", kDirs).total_numel(), 2u << 30);
  EXPECT_EQ(load_layout("uniform:1x2k", {}).total_numel(), 2048u);  // suffixes ignore case
}

TEST(Layouts, UniformErrors) {
  expect_spec_error("uniform:0x5", "COUNT must be at least 1");
  expect_spec_error("uniform:3xabc", "NUMEL 'abc'");
  expect_spec_error("uniform:3x5Q", "NUMEL '5Q'");
  expect_spec_error("uniform:", "missing 'x'");
  expect_spec_error("uniform:3x", "NUMEL ''");
  expect_spec_error("uniform:x5", "COUNT ''");
  expect_spec_error("uniform:3x0", "NUMEL must be at least 1");
  expect_spec_error("uniform:3x0K", "NUMEL must be at least 1");
  expect_spec_error("uniform:-1x5", "COUNT '-1'");
  expect_spec_error("uniform:3x-5", "NUMEL '-5'");
  expect_spec_error("uniform:+3x5", "COUNT '+3'");
  expect_spec_error("uniform:3x5MM", "NUMEL '5MM'");
  expect_spec_error("uniform:3x5 ", "NUMEL '5 '");
  expect_spec_error("uniform:3x5x2", "NUMEL '5x2'");
  expect_spec_error("uniform:99999999999999999999x1", "is not a number");
  expect_spec_error("uniform:2000000x1", "above the limit");
  expect_spec_error("uniform:1x300000G", "exceed the limit");
  expect_spec_error("uniform:1000x1000G", "exceed the limit");
  expect_spec_error("uniform:1x99999999999999999999G", "is not a number");
}

// ---------------------------------------------------------------------------------------------
// JSON layout lists

TEST(Layouts, JsonLayoutList) {
  const json obj = json::parse(
      R"({"name": "mine", "units": [{"name": "a", "numel": 3}, {"name": "b", "numel": 5}]})");
  const Layout l = layout_from_json(obj, "given");
  EXPECT_EQ(l.name, "given");
  ASSERT_EQ(l.units.size(), 2u);
  EXPECT_EQ(l.units[0].name, "a");
  EXPECT_EQ(l.units[1].numel, 5u);
  EXPECT_EQ(l.total_numel(), 8u);
  EXPECT_EQ(layout_from_json(obj, "").name, "mine");  // the file's name fills an empty name

  const Layout bare =
      layout_from_json(json::parse(R"([{"name": "x", "numel": 281474976710656}])"), "b");
  EXPECT_EQ(bare.total_numel(), kMaxLayoutNumel);

  const std::string path =
      write_temp("my-layout.json", R"([{"name": "u0", "numel": 10}, {"name": "u1", "numel": 20}])");
  const Layout from_file = load_layout(path, kDirs);
  EXPECT_EQ(from_file.name, "my-layout");
  EXPECT_EQ(from_file.total_numel(), 30u);
  EXPECT_EQ(from_file.units[1].name, "u1");
}

TEST(Layouts, JsonLayoutListErrors) {
  expect_json_error(json::parse(R"([{"name": "a", "numel": 0}])"), "must be positive, got 0");
  expect_json_error(json::parse(R"([{"name": "a", "numel": -5}])"), "must be positive, got -5");
  expect_json_error(json::parse(R"([{"name": "a", "numel": 1e30}])"), "too large");
  expect_json_error(json::parse(R"([{"name": "a", "numel": 99999999999999999999}])"), "too large");
  expect_json_error(json::parse(R"([{"name": "a", "numel": 281474976710657}])"), "above the limit");
  expect_json_error(json::parse(R"([{"name": "a", "numel": 1.5}])"), "positive integer");
  expect_json_error(json::parse(R"([{"name": "a", "numel": "12"}])"), "positive integer");
  expect_json_error(json::parse(R"([{"name": "a"}])"), "has no \"numel\"");
  expect_json_error(json::parse(R"([{"numel": 4}])"), "non-empty string \"name\"");
  expect_json_error(json::parse(R"([{"name": "", "numel": 4}])"), "non-empty string \"name\"");
  expect_json_error(json::parse(R"([{"name": "a", "numel": 4}, {"name": "a", "numel": 4}])"),
                    "appears twice");
  expect_json_error(json::parse(R"([])"), "no units");
  expect_json_error(json::parse(R"({"units": []})"), "no units");
  expect_json_error(json::parse(R"({"units": {"a": 1}})"), "must be a list");
  expect_json_error(json::parse(R"([5])"), "must be an object");
  expect_json_error(json::parse(R"(42)"), "expected a JSON object or list");
  expect_json_error(json::parse(R"({"layers": 3})"), "neither a layout list");
  // Units fine on their own whose sum passes the limit.
  expect_json_error(json::parse(R"([{"name": "a", "numel": 281474976710656},
                                    {"name": "b", "numel": 1}])"),
                    "exceeds the limit");
  // A layout built in code (signed storage) follows the same rules.
  expect_json_error(json::array({{{"name", "a"}, {"numel", -1}}}), "must be positive, got -1");
}

// ---------------------------------------------------------------------------------------------
// Config and name errors

TEST(Layouts, ConfigErrors) {
  json cfg = read_config("llama2-7b");
  json c = cfg;
  c["model_type"] = "bert";
  expect_json_error(c, "unsupported model_type \"bert\"");
  c["model_type"] = 7;
  expect_json_error(c, "\"model_type\" must be a string");

  c = cfg;
  c.erase("hidden_size");
  expect_json_error(c, "no field \"hidden_size\"");
  c["hidden_size"] = nullptr;
  expect_json_error(c, "no field \"hidden_size\"");
  c["hidden_size"] = 0;
  expect_json_error(c, "must be positive, got 0");
  c["hidden_size"] = -4096;
  expect_json_error(c, "must be positive, got -4096");
  c["hidden_size"] = "4096";
  expect_json_error(c, "positive integer");
  c["hidden_size"] = 4096.5;
  expect_json_error(c, "positive integer");

  c = cfg;
  c["num_attention_heads"] = 8192;  // head_dim = 4096 / 8192 = 0
  expect_json_error(c, "head_dim 0");
  c = cfg;
  c["tie_word_embeddings"] = "yes";
  expect_json_error(c, "must be true or false");
  c = cfg;
  c["num_hidden_layers"] = 10'000'000;
  expect_json_error(c, "above the limit");
  c = cfg;
  c["hidden_size"] = uint64_t{1} << 40;  // each field in range, products are not
  expect_json_error(c, "exceeds the limit");

  json g = read_config("gpt2");
  g.erase("n_positions");
  expect_json_error(g, "no field \"n_positions\"");
}

TEST(Layouts, NameAndFileErrors) {
  // Unknown names list what is shipped, so the user can pick one.
  expect_spec_error("llama9-1t", "unknown model name");
  expect_spec_error("llama9-1t", "llama2-7b");
  expect_spec_error("llama9-1t", "mistral-7b");
  expect_spec_error("uniform", "uniform:COUNTxNUMEL");
  expect_spec_error("", "empty value");
  expect_model_error([] { load_layout("gpt2", {}); }, "(none found)", "no dirs");

  expect_spec_error("/nonexistent/config.json", "not found");
  expect_spec_error("missing.json", "not found");
  expect_spec_error(std::string(SHARDACCUM_CONFIG_DIR), "is a directory");
  const std::filesystem::path xdir =
      std::filesystem::path(::testing::TempDir()) / "shardaccum_test_layouts" / "x.json";
  std::filesystem::create_directories(xdir);
  expect_spec_error(xdir.string(), "is a directory");

  const std::string bad =
      write_temp("bad-config.json", R"({"model_type": "llama", "hidden_size": )");
  expect_spec_error(bad, "is not valid JSON");
  expect_spec_error(bad, "parse error");  // nlohmann's own text
  const std::string empty = write_temp("empty.json", "");
  expect_spec_error(empty, "is not valid JSON");
  const std::string bert = write_temp("bert.json", R"({"model_type": "bert", "hidden_size": 768})");
  expect_spec_error(bert, "unsupported model_type");
}

// Issue 11 item 8: hostile files are refused with a short message, never a crash.
TEST(Layouts, DeepJsonIsRefusedNotACrash) {
  const int n = 100000;
  const std::string deep = write_temp("deep.json", std::string(n, '[') + std::string(n, ']'));
  expect_spec_error(deep, "JSON nested deeper than 64 levels");
  // 64 levels parse; the 65th is refused.
  const std::string ok64 =
      write_temp("ok64.json", "{\"units\":" + std::string(63, '[') + std::string(63, ']') + "}");
  expect_spec_error(ok64, "unit 0 must be an object");  // parsed, then judged as a layout
  const std::string deep65 =
      write_temp("deep65.json", "{\"units\":" + std::string(64, '[') + std::string(64, ']') + "}");
  expect_spec_error(deep65, "deeper than 64");
}

TEST(Layouts, DuplicateKeysAreRefusedNamingTheKey) {
  expect_spec_error(write_temp("dup1.json", R"({"model_type": "gpt2", "model_type": "llama"})"),
                    "duplicate key \"model_type\"");
  expect_spec_error(write_temp("dup2.json", R"([{"name": "a", "numel": 1, "name": "b"}])"),
                    "duplicate key \"name\"");
  // The same key in two different objects is fine.
  const Layout l = load_layout(
      write_temp("nodup.json", R"([{"name": "a", "numel": 1}, {"name": "b", "numel": 2}])"), kDirs);
  EXPECT_EQ(l.total_numel(), 3u);
}

TEST(Layouts, UnitsAndModelTypeTogetherAreRefused) {
  expect_json_error(
      json{{"units", json::array({{{"name", "a"}, {"numel", 1}}})}, {"model_type", "gpt2"}},
      "give either");
}

TEST(Layouts, KvHeadsMustDivideHeads) {
  json cfg = {{"model_type", "llama"},  {"hidden_size", 64}, {"intermediate_size", 128},
              {"num_hidden_layers", 2}, {"vocab_size", 100}, {"num_attention_heads", 4}};
  cfg["num_key_value_heads"] = 8;
  expect_json_error(cfg,
                    "\"num_key_value_heads\" (8) must divide field \"num_attention_heads\" (4)");
  cfg["num_attention_heads"] = 6;
  cfg["num_key_value_heads"] = 4;
  expect_json_error(cfg,
                    "\"num_key_value_heads\" (4) must divide field \"num_attention_heads\" (6)");
  cfg["num_key_value_heads"] = 3;
  EXPECT_EQ(layout_from_json(cfg, "t").units.size(), 5u);  // embed, 2 layers, norm, lm_head
}

TEST(Layouts, MessagesQuoteValuesShort) {
  // A unit given as a long list or a deeply nested value (built in code, not parsed): the message
  // quotes about 80 characters and does not recurse into the whole value.
  // Built and handed over by moves only: nlohmann's copy recurses, and a 100k-deep copy overflows
  // the stack of an ASan build (the code under test copies nothing of it).
  json wide = json::array();
  for (int i = 0; i < 100000; ++i) wide.push_back(i);
  json deep = json::array();
  for (int i = 0; i < 100000; ++i) {
    json outer = json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  json wide_units = json::array(), deep_units = json::array();
  wide_units.push_back(std::move(wide));
  deep_units.push_back(std::move(deep));
  for (const json* units : {&wide_units, &deep_units}) {
    try {
      layout_from_json(*units, "t");
      ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("unit 0 must be an object"), std::string::npos) << msg;
      EXPECT_NE(msg.find("..."), std::string::npos) << msg;
      EXPECT_LT(msg.size(), 300u) << msg;
    }
  }
  const std::string long_type(10000, 'x');
  try {
    layout_from_json(json{{"model_type", long_type}}, "t");
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_LT(std::string(e.what()).size(), 400u);
  }
}

}  // namespace
}  // namespace shardaccum
