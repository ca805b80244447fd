// Hugging Face model families (bench/hf_families.cpp): every shipped config's total equals the
// model's published parameter count, each family's units are filled by uniquely named params in
// named_parameters() order with the family's shapes (other configs: test_layout_hf_configs.cpp).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <fstream>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/model_layouts.hpp"
#include "tests/cpp/layout_checks.hpp"

namespace shardaccum {
namespace {

using nlohmann::json;
using testing_layouts::read_config;
using Shape = std::vector<uint64_t>;

const std::vector<std::string> kDirs = {SHARDACCUM_CONFIG_DIR};

/// The names of the params of `l`'s unit `unit`, in order.
std::vector<std::string> param_names(const Layout& l, size_t unit) {
  std::vector<std::string> out;
  for (const Param& p : l.units.at(unit).params) out.push_back(p.name);
  return out;
}

/// The shape of param `name` anywhere in `l` (empty when absent, which fails the comparison).
Shape shape_of(const Layout& l, const std::string& name) {
  for (const FlatParam& u : l.units)
    for (const Param& p : u.params)
      if (p.name == name) return p.shape;
  ADD_FAILURE() << l.name << ": no param " << name;
  return {};
}

// ---------------------------------------------------------------------------------------------
// Published totals: one case per shipped config.

struct Published {
  const char* config;     // bench/configs/NAME.json
  const char* family;     // Layout::family
  uint64_t total;         // the published parameter count of the Hugging Face model
  size_t units;           // embedding, layers, final norm, and the head unless tied
  const char* last_unit;  // lm_head, or the final norm when the head is tied
};

const Published kPublished[] = {
    {"llama2-7b", "llama", 6'738'415'616u, 35, "lm_head"},
    {"llama3.1-8b", "llama", 8'030'261'248u, 35, "lm_head"},
    {"llama3.1-70b", "llama", 70'553'706'496u, 83, "lm_head"},
    {"mistral-7b", "mistral", 7'241'732'096u, 35, "lm_head"},
    {"mixtral-8x7b", "mixtral", 46'702'792'704u, 35, "lm_head"},
    {"qwen2.5-7b", "qwen2", 7'615'616'512u, 31, "lm_head"},
    {"qwen3-8b", "qwen3", 8'190'735'360u, 39, "lm_head"},
    {"gemma2-9b", "gemma2", 9'241'705'984u, 44, "norm"},
    {"gemma2-2b", "gemma2", 2'614'341'888u, 28, "norm"},
    {"gemma3-1b", "gemma3_text", 999'885'952u, 28, "norm"},
    {"phi3-mini-4k", "phi3", 3'821'079'552u, 35, "lm_head"},
    {"pythia-6.9b", "gpt_neox", 6'857'302'016u, 35, "embed_out"},
    {"gpt2", "gpt2", 124'439'808u, 14, "ln_f"},
    {"gpt2-xl", "gpt2", 1'557'611'200u, 50, "ln_f"},
};

/// gtest prints a failing case by its config name rather than its bytes.
void PrintTo(const Published& m, std::ostream* os) { *os << m.config; }

class PublishedTotal : public ::testing::TestWithParam<Published> {};

TEST_P(PublishedTotal, EqualsTheModelsParameterCount) {
  const Published& m = GetParam();
  const Layout l = load_layout(m.config, kDirs);
  EXPECT_EQ(l.name, m.config);
  EXPECT_EQ(l.family, m.family);
  EXPECT_EQ(l.total_numel(), m.total);
  ASSERT_EQ(l.units.size(), m.units);
  EXPECT_EQ(l.units.back().name, m.last_unit);
}

// The bench/real/ contract, per family: params at running offsets fill each unit exactly, every
// dimension >= 1, names unique across the layout.
TEST_P(PublishedTotal, ParamsFillEachUnitWithUniqueNames) {
  testing_layouts::expect_params_fill_units(load_layout(GetParam().config, kDirs));
}

INSTANTIATE_TEST_SUITE_P(ShippedConfigs, PublishedTotal, ::testing::ValuesIn(kPublished),
                         [](const auto& info) {
                           std::string n = info.param.config;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(LayoutFamilies, EveryShippedConfigHasItsPublishedTotal) {
  std::set<std::string> listed;
  for (const Published& m : kPublished) listed.insert(m.config);
  const std::vector<std::string> shipped = shipped_model_names(kDirs);
  EXPECT_EQ(std::set<std::string>(shipped.begin(), shipped.end()), listed);
}

// ---------------------------------------------------------------------------------------------
// Each family's layer: the Hugging Face names in named_parameters() order, and their shapes.

TEST(LayoutFamilies, MixtralLayerIsAttentionRouterAndEveryExpert) {
  const Layout l = load_layout("mixtral-8x7b", kDirs);
  const std::vector<std::string> names = param_names(l, 1);
  const std::string p = "model.layers.0.";
  ASSERT_EQ(names.size(), 4u + 1 + 8 * 3 + 2);
  EXPECT_EQ(names[3], p + "self_attn.o_proj.weight");
  EXPECT_EQ(names[4], p + "block_sparse_moe.gate.weight");
  EXPECT_EQ(names[5], p + "block_sparse_moe.experts.0.w1.weight");
  EXPECT_EQ(names[6], p + "block_sparse_moe.experts.0.w2.weight");
  EXPECT_EQ(names[28], p + "block_sparse_moe.experts.7.w3.weight");
  EXPECT_EQ(names.back(), p + "post_attention_layernorm.weight");
  EXPECT_EQ(shape_of(l, p + "block_sparse_moe.gate.weight"), (Shape{8, 4096}));
  EXPECT_EQ(shape_of(l, p + "block_sparse_moe.experts.3.w2.weight"), (Shape{4096, 14336}));
  EXPECT_EQ(shape_of(l, p + "block_sparse_moe.experts.3.w3.weight"), (Shape{14336, 4096}));
}

TEST(LayoutFamilies, Qwen2HasQkvBiasesAndNoOutputBias) {
  const Layout l = load_layout("qwen2.5-7b", kDirs);
  const std::string p = "model.layers.0.self_attn.";
  EXPECT_EQ(param_names(l, 1),
            (std::vector<std::string>{
                p + "q_proj.weight", p + "q_proj.bias", p + "k_proj.weight", p + "k_proj.bias",
                p + "v_proj.weight", p + "v_proj.bias", p + "o_proj.weight",
                "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight",
                "model.layers.0.mlp.down_proj.weight", "model.layers.0.input_layernorm.weight",
                "model.layers.0.post_attention_layernorm.weight"}));
  EXPECT_EQ(shape_of(l, p + "k_proj.bias"), (Shape{512}));  // 4 KV heads of 128
  EXPECT_EQ(shape_of(l, p + "q_proj.bias"), (Shape{3584}));
}

TEST(LayoutFamilies, Qwen3HasQkNormOfHeadDimAndNoBiases) {
  const Layout l = load_layout("qwen3-8b", kDirs);
  const std::vector<std::string> names = param_names(l, 1);
  ASSERT_EQ(names.size(), 4u + 2 + 3 + 2);
  const std::string p = "model.layers.0.self_attn.";
  EXPECT_EQ(names[3], p + "o_proj.weight");
  EXPECT_EQ(names[4], p + "q_norm.weight");
  EXPECT_EQ(names[5], p + "k_norm.weight");
  EXPECT_EQ(shape_of(l, p + "q_norm.weight"), (Shape{128}));
  EXPECT_EQ(shape_of(l, p + "q_proj.weight"), (Shape{4096, 4096}));  // 32 heads of 128
  for (const std::string& n : names) EXPECT_EQ(n.find(".bias"), std::string::npos) << n;
}

TEST(LayoutFamilies, GemmaTiesTheHeadAndHasFourNormsALayer) {
  const Layout g2 = load_layout("gemma2-2b", kDirs);
  const std::vector<std::string> n2 = param_names(g2, 1);
  ASSERT_EQ(n2.size(), 4u + 3 + 4);
  const std::string p = "model.layers.0.";
  EXPECT_EQ(std::vector<std::string>(n2.end() - 4, n2.end()),
            (std::vector<std::string>{
                p + "input_layernorm.weight", p + "post_attention_layernorm.weight",
                p + "pre_feedforward_layernorm.weight", p + "post_feedforward_layernorm.weight"}));
  // head_dim 256 is explicit: 8 heads * 256 = 2048, not hidden_size 2304.
  EXPECT_EQ(shape_of(g2, p + "self_attn.q_proj.weight"), (Shape{2048, 2304}));
  EXPECT_EQ(shape_of(g2, p + "self_attn.o_proj.weight"), (Shape{2304, 2048}));
  for (const FlatParam& u : g2.units) EXPECT_NE(u.name, "lm_head");

  const Layout g3 = load_layout("gemma3-1b", kDirs);
  const std::vector<std::string> n3 = param_names(g3, 1);
  ASSERT_EQ(n3.size(), 4u + 2 + 3 + 4);
  EXPECT_EQ(n3[4], p + "self_attn.q_norm.weight");
  EXPECT_EQ(shape_of(g3, p + "self_attn.k_norm.weight"), (Shape{256}));
  EXPECT_EQ(shape_of(g3, p + "self_attn.k_proj.weight"), (Shape{256, 1152}));  // 1 KV head

  json untied = read_config("gemma2-2b");
  untied["tie_word_embeddings"] = false;
  const Layout u = layout_from_json(untied, "u");
  EXPECT_EQ(u.units.back().name, "lm_head");
  EXPECT_EQ(u.total_numel(), 2'614'341'888u + uint64_t{256000} * 2304);
}

TEST(LayoutFamilies, Phi3FusesQkvAndGateUp) {
  const Layout l = load_layout("phi3-mini-4k", kDirs);
  const std::string p = "model.layers.0.";
  EXPECT_EQ(param_names(l, 1),
            (std::vector<std::string>{
                p + "self_attn.o_proj.weight", p + "self_attn.qkv_proj.weight",
                p + "mlp.gate_up_proj.weight", p + "mlp.down_proj.weight",
                p + "input_layernorm.weight", p + "post_attention_layernorm.weight"}));
  EXPECT_EQ(shape_of(l, p + "self_attn.qkv_proj.weight"), (Shape{3 * 3072, 3072}));
  EXPECT_EQ(shape_of(l, p + "mlp.gate_up_proj.weight"), (Shape{2 * 8192, 3072}));
  EXPECT_EQ(shape_of(l, p + "mlp.down_proj.weight"), (Shape{3072, 8192}));
}

TEST(LayoutFamilies, GptNeoxHasBiasedFusedAttentionAndAnUntiedEmbedOut) {
  const Layout l = load_layout("pythia-6.9b", kDirs);
  EXPECT_EQ(l.units.front().name, "embed_in");
  EXPECT_EQ(param_names(l, 0), (std::vector<std::string>{"gpt_neox.embed_in.weight"}));
  const std::string p = "gpt_neox.layers.0.";
  EXPECT_EQ(param_names(l, 1),
            (std::vector<std::string>{
                p + "input_layernorm.weight", p + "input_layernorm.bias",
                p + "post_attention_layernorm.weight", p + "post_attention_layernorm.bias",
                p + "attention.query_key_value.weight", p + "attention.query_key_value.bias",
                p + "attention.dense.weight", p + "attention.dense.bias",
                p + "mlp.dense_h_to_4h.weight", p + "mlp.dense_h_to_4h.bias",
                p + "mlp.dense_4h_to_h.weight", p + "mlp.dense_4h_to_h.bias"}));
  EXPECT_EQ(shape_of(l, p + "attention.query_key_value.weight"), (Shape{3 * 4096, 4096}));
  EXPECT_EQ(shape_of(l, p + "mlp.dense_h_to_4h.bias"), (Shape{16384}));
  EXPECT_EQ(param_names(l, 33), (std::vector<std::string>{"gpt_neox.final_layer_norm.weight",
                                                          "gpt_neox.final_layer_norm.bias"}));
  EXPECT_EQ(shape_of(l, "embed_out.weight"), (Shape{50432, 4096}));

  json no_bias = read_config("pythia-6.9b");
  no_bias["attention_bias"] = false;  // - qkv bias 3d, dense bias d, per layer
  EXPECT_EQ(layout_from_json(no_bias, "n").total_numel(), 6'857'302'016u - 32u * 4 * 4096);
}

}  // namespace
}  // namespace shardaccum
