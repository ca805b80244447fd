// Per-parameter names and shapes of every layout (FlatParam::params): each unit's params fill it
// exactly at running offsets with unique names, the real models' shapes, and layout list "params".
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/layout_json.hpp"
#include "bench/model_layouts.hpp"
#include "tests/cpp/layout_checks.hpp"

namespace shardaccum {
namespace {

using nlohmann::json;
using testing_layouts::expect_params_fill_units;
using Shape = std::vector<uint64_t>;

const std::vector<std::string> kDirs = {SHARDACCUM_CONFIG_DIR};

/// The param named `name` of `l`'s unit `unit`; fails the test when it is not there.
const Param& find_param(const Layout& l, const std::string& unit, const std::string& name) {
  static const Param none{};
  for (const FlatParam& u : l.units)
    if (u.name == unit)
      for (const Param& p : u.params)
        if (p.name == name) return p;
  ADD_FAILURE() << l.name << ": no param " << name << " in unit " << unit;
  return none;
}

std::string write_temp(const std::string& file, const std::string& content) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "shardaccum_test_layout_params";
  std::filesystem::create_directories(dir);
  const std::filesystem::path p = dir / file;
  std::ofstream(p) << content;
  return p.string();
}

TEST(LayoutParams, EveryShippedConfigFillsItsUnits) {
  int configs = 0;
  for (const auto& e : std::filesystem::directory_iterator(SHARDACCUM_CONFIG_DIR)) {
    if (e.path().extension() != ".json") continue;
    const Layout l = load_layout(e.path().stem().string(), kDirs);
    expect_params_fill_units(l);
    EXPECT_NO_THROW(layout_json(l, l.name)) << l.name;
    ++configs;
  }
  EXPECT_GE(configs, 6);  // gpt2, gpt2-xl, llama2-7b, llama3.1-8b, llama3.1-70b, mistral-7b
}

TEST(LayoutParams, Gpt2ShapesAreTheHuggingFaceOnesInOrder) {
  const Layout l = load_layout("gpt2", kDirs);
  EXPECT_EQ(l.family, "gpt2");
  ASSERT_EQ(l.units[0].params.size(), 2u);
  EXPECT_EQ(l.units[0].params[0].name, "transformer.wte.weight");
  EXPECT_EQ(l.units[0].params[0].shape, (Shape{50257, 768}));
  EXPECT_EQ(l.units[0].params[1].name, "transformer.wpe.weight");
  EXPECT_EQ(l.units[0].params[1].shape, (Shape{1024, 768}));
  EXPECT_EQ(l.units[0].params[1].offset, 50257u * 768);
  EXPECT_EQ(find_param(l, "h.0", "transformer.h.0.attn.c_attn.weight").shape, (Shape{768, 2304}));
  EXPECT_EQ(find_param(l, "h.11", "transformer.h.11.mlp.c_fc.weight").shape, (Shape{768, 3072}));
  EXPECT_EQ(find_param(l, "h.11", "transformer.h.11.mlp.c_proj.weight").shape, (Shape{3072, 768}));
  const std::vector<Param>& h0 = l.units[1].params;
  ASSERT_EQ(h0.size(), 12u);
  EXPECT_EQ(h0.front().name, "transformer.h.0.ln_1.weight");
  EXPECT_EQ(h0[2].name, "transformer.h.0.attn.c_attn.weight");
  EXPECT_EQ(h0[2].offset, 2u * 768);  // after ln_1's weight and bias
  EXPECT_EQ(h0.back().name, "transformer.h.0.mlp.c_proj.bias");
  ASSERT_EQ(l.units.back().params.size(), 2u);
  EXPECT_EQ(l.units.back().params[1].name, "transformer.ln_f.bias");
}

TEST(LayoutParams, LlamaAndMistralShapesAreTheHuggingFaceOnes) {
  const Layout l2 = load_layout("llama2-7b", kDirs);
  EXPECT_EQ(l2.family, "llama");
  EXPECT_EQ(find_param(l2, "layers.0", "model.layers.0.mlp.gate_proj.weight").shape,
            (Shape{11008, 4096}));
  EXPECT_EQ(find_param(l2, "layers.31", "model.layers.31.mlp.down_proj.weight").shape,
            (Shape{4096, 11008}));
  EXPECT_EQ(find_param(l2, "lm_head", "lm_head.weight").shape, (Shape{32000, 4096}));
  EXPECT_EQ(find_param(l2, "norm", "model.norm.weight").shape, (Shape{4096}));
  const std::vector<Param>& layer = l2.units[1].params;
  ASSERT_EQ(layer.size(), 9u);
  EXPECT_EQ(layer.front().name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(layer[7].name, "model.layers.0.input_layernorm.weight");
  EXPECT_EQ(layer.back().name, "model.layers.0.post_attention_layernorm.weight");

  const Layout l3 = load_layout("llama3.1-8b", kDirs);  // grouped-query attention: 8 KV heads
  EXPECT_EQ(find_param(l3, "layers.0", "model.layers.0.self_attn.k_proj.weight").shape,
            (Shape{1024, 4096}));
  EXPECT_EQ(find_param(l3, "layers.0", "model.layers.0.self_attn.q_proj.weight").shape,
            (Shape{4096, 4096}));
  EXPECT_EQ(find_param(l3, "embed_tokens", "model.embed_tokens.weight").shape,
            (Shape{128256, 4096}));
  const Layout m = load_layout("mistral-7b", kDirs);
  EXPECT_EQ(m.family, "mistral");
  EXPECT_EQ(find_param(m, "layers.0", "model.layers.0.self_attn.v_proj.weight").shape,
            (Shape{1024, 4096}));
}

TEST(LayoutParams, LlamaBiasesFollowTheirWeights) {
  const json cfg = {{"model_type", "llama"},    {"hidden_size", 8},
                    {"intermediate_size", 16},  {"num_hidden_layers", 1},
                    {"num_attention_heads", 2}, {"num_key_value_heads", 1},
                    {"vocab_size", 10},         {"attention_bias", true},
                    {"mlp_bias", true},         {"tie_word_embeddings", true}};
  const Layout l = layout_from_json(cfg, "m");
  expect_params_fill_units(l);
  std::vector<std::string> names;
  for (const Param& p : l.units[1].params) names.push_back(p.name);
  const std::string p = "model.layers.0.";
  EXPECT_EQ(
      names,
      (std::vector<std::string>{
          p + "self_attn.q_proj.weight", p + "self_attn.q_proj.bias", p + "self_attn.k_proj.weight",
          p + "self_attn.k_proj.bias", p + "self_attn.v_proj.weight", p + "self_attn.v_proj.bias",
          p + "self_attn.o_proj.weight", p + "self_attn.o_proj.bias", p + "mlp.gate_proj.weight",
          p + "mlp.gate_proj.bias", p + "mlp.up_proj.weight", p + "mlp.up_proj.bias",
          p + "mlp.down_proj.weight", p + "mlp.down_proj.bias", p + "input_layernorm.weight",
          p + "post_attention_layernorm.weight"}));
  EXPECT_EQ(find_param(l, "layers.0", p + "self_attn.k_proj.weight").shape, (Shape{4, 8}));
  EXPECT_EQ(find_param(l, "layers.0", p + "self_attn.k_proj.bias").shape, (Shape{4}));
  EXPECT_EQ(l.units.back().name, "norm");  // tied: no lm_head
}

TEST(LayoutParams, UniformIsOneWeightOf8192RowsWhenDivisible) {
  const Layout big = load_layout("uniform:16x64M", kDirs);
  EXPECT_EQ(big.family, "uniform");
  expect_params_fill_units(big);
  ASSERT_EQ(big.units[3].params.size(), 1u);
  EXPECT_EQ(big.units[3].params[0].name, "unit3.weight");
  EXPECT_EQ(big.units[3].params[0].shape, (Shape{8192, 8192}));
  const Layout two = load_layout("uniform:2x16K", kDirs);
  EXPECT_EQ(two.units[1].params[0].shape, (Shape{8192, 2}));
  for (const char* spec : {"uniform:3x1000", "uniform:1x8193", "uniform:2x4K"}) {
    const Layout l = load_layout(spec, kDirs);
    expect_params_fill_units(l);
    EXPECT_EQ(l.units[0].params[0].shape, (Shape{l.units[0].numel})) << spec;
  }
}

TEST(LayoutParams, ListFileUnitsTakeAWeightOrTheirGivenParams) {
  const std::string path = write_temp("with-params.json", R"({"units": [
    {"name": "emb", "numel": 12},
    {"name": "blk", "numel": 10,
     "params": [{"name": "blk.w", "shape": [2, 3]}, {"name": "blk.b", "shape": [4]}]}]})");
  const Layout l = load_layout(path, kDirs);
  EXPECT_EQ(l.family, "list");
  expect_params_fill_units(l);
  ASSERT_EQ(l.units[0].params.size(), 1u);
  EXPECT_EQ(l.units[0].params[0].name, "emb.weight");
  EXPECT_EQ(l.units[0].params[0].shape, (Shape{12}));
  ASSERT_EQ(l.units[1].params.size(), 2u);
  EXPECT_EQ(l.units[1].params[0].shape, (Shape{2, 3}));
  EXPECT_EQ(l.units[1].params[1].name, "blk.b");
  EXPECT_EQ(l.units[1].params[1].offset, 6u);
}

TEST(LayoutParams, ListParamsThatDoNotFillTheUnitAreAModelError) {
  auto expect_error = [](const std::string& params, const std::string& needle) {
    SCOPED_TRACE(params);
    const json j = json::parse(R"({"units": [{"name": "a", "numel": 6}, {"name": "u", "numel": 6,
                                  "params": )" +
                               params + "}]}");
    try {
      layout_from_json(j, "t");
      ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("--model"), std::string::npos) << msg;
      EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    }
  };
  expect_error(R"([{"name": "w", "shape": [2, 2]}])", "hold 4 elements");
  expect_error(R"([{"name": "w", "shape": [7]}])", "hold 7 elements");
  expect_error(R"([{"name": "w", "shape": [2, 0]}])", "a dimension of \"w\"");
  expect_error(R"([{"name": "w", "shape": [6.5]}])", "a dimension of \"w\"");
  expect_error(R"([{"name": "w", "shape": []}])", "needs a \"shape\"");
  expect_error(R"([{"name": "w"}])", "needs a \"shape\"");
  expect_error(R"([{"shape": [6]}])", "non-empty string \"name\"");
  expect_error(R"([{"name": "w", "shape": [3]}, {"name": "w", "shape": [3]}])", "appears twice");
  expect_error(R"([{"name": "a.weight", "shape": [6]}])", "appears twice");  // unit a's default
  expect_error(R"([])", "non-empty list");
  expect_error(R"({"name": "w"})", "non-empty list");
  expect_error(R"([6])", "must be an object");
  // An "offset" must be the running one (it was silently replaced); the right one is accepted.
  expect_error(R"([{"name": "w", "shape": [3], "offset": 3}, {"name": "b", "shape": [3]}])",
               "\"offset\" 3 is not where it starts, 0");
  expect_error(R"([{"name": "w", "shape": [3]}, {"name": "b", "shape": [3], "offset": -3}])",
               "\"offset\" -3");
  const json ok = json::parse(R"({"units": [{"name": "u", "numel": 6, "params": [
      {"name": "w", "shape": [3], "offset": 0}, {"name": "b", "shape": [3], "offset": 3}]}]})");
  EXPECT_EQ(layout_from_json(ok, "t").units[0].params[1].offset, 3u);
}

TEST(LayoutJson, TheDocumentListsEveryUnitWithItsParams) {
  const Layout l = load_layout("gpt2", kDirs);
  const nlohmann::ordered_json j = layout_json(l, "gpt2");
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"schema", "model", "spec", "family", "total_numel",
                                            "units"}));
  EXPECT_EQ(j.at("schema"), "shardaccum.layout/1");
  EXPECT_EQ(j.at("family"), "gpt2");
  EXPECT_EQ(j.at("total_numel").get<uint64_t>(), l.total_numel());
  ASSERT_EQ(j.at("units").size(), l.units.size());
  const auto& u1 = j.at("units").at(1);
  EXPECT_EQ(u1.at("index"), 1);
  EXPECT_EQ(u1.at("name"), "h.0");
  EXPECT_EQ(u1.at("numel").get<uint64_t>(), l.units[1].numel);
  EXPECT_EQ(u1.at("params").at(2).at("name"), "transformer.h.0.attn.c_attn.weight");
  EXPECT_EQ(u1.at("params").at(2).at("shape"), json::parse("[768, 2304]"));
  EXPECT_EQ(u1.at("params").at(2).at("offset"), 1536);
}

TEST(LayoutJson, AUnitItsParamsDoNotFillIsRefused) {
  Layout hand{"t", {{"u", 4}}};  // a hand-built unit without params
  EXPECT_THROW(layout_json(hand, "t"), std::logic_error);
  hand.units[0].params = {{"u.w", {3}, 0}};
  EXPECT_THROW(layout_json(hand, "t"), std::logic_error);
  hand.units[0].params = {{"u.w", {2}, 0}, {"u.b", {2}, 1}};  // overlapping offsets
  EXPECT_THROW(layout_json(hand, "t"), std::logic_error);
  hand.units[0].params[1].offset = 2;
  EXPECT_NO_THROW(layout_json(hand, "t"));
}

}  // namespace
}  // namespace shardaccum
