// Hugging Face configs beyond the shipped ones (bench/hf_families.cpp): a multimodal Gemma 3 counts
// its text_config, an unknown model_type lists the supported ones, only the causal-LM architecture
// is laid out, and fields a family cannot derive are required.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/hf_families.hpp"
#include "bench/model_layouts.hpp"
#include "tests/cpp/layout_checks.hpp"

namespace shardaccum {
namespace {

using nlohmann::json;
using testing_layouts::read_config;

const std::vector<std::string> kDirs = {SHARDACCUM_CONFIG_DIR};

/// `f` must throw std::invalid_argument naming --model and containing every one of `needles`.
template <class F>
void expect_model_error(F f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("--model"), std::string::npos) << msg;
    for (const std::string& n : needles)
      EXPECT_NE(msg.find(n), std::string::npos) << "expected '" << n << "' in: " << msg;
  }
}

// ---------------------------------------------------------------------------------------------
// Multimodal Gemma 3, unknown types and architectures, required fields.

TEST(LayoutHfConfigs, MultimodalGemma3CountsItsTextConfigOnly) {
  // google/gemma-3-4b-it's config.json: the text_config gives only what differs from
  // Gemma3TextConfig's defaults (8 heads, 4 KV heads, head_dim 256, vocab 262,208, tied).
  const json cfg = json::parse(R"({
    "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
    "mm_tokens_per_image": 256,
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                    "sliding_window": 1024},
    "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                      "model_type": "siglip_vision_model", "num_attention_heads": 16,
                      "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": false}})");
  const Layout l = layout_from_json(cfg, "gemma3-4b");
  EXPECT_EQ(l.family, "gemma3");
  ASSERT_EQ(l.units.size(), 36u);  // embed_tokens, 34 layers, norm; lm_head tied
  // Per layer: q 2560*2048, k and v 2560*1024, o 2048*2560, q/k norms 2*256, MLP 3*2560*10240,
  // four norms 4*2560; embed 262208*2560; final norm 2560.
  const uint64_t layer = 2560u * 2048 * 2 + 2560u * 1024 * 2 + 512 + 3u * 2560 * 10240 + 4 * 2560;
  EXPECT_EQ(l.units[1].numel, layer);
  EXPECT_EQ(l.total_numel(), uint64_t{262208} * 2560 + 34 * layer + 2560);
  EXPECT_EQ(l.total_numel(), 3'880'263'168u);  // the published 4.3B less the vision tower
  EXPECT_EQ(l.units[0].params[0].name, "model.language_model.embed_tokens.weight");
  EXPECT_EQ(l.units[1].params[4].name, "model.language_model.layers.0.self_attn.q_norm.weight");
  for (const FlatParam& u : l.units)
    for (const Param& p : u.params) EXPECT_EQ(p.name.find("vision"), std::string::npos) << p.name;

  json no_text = cfg;
  no_text.erase("text_config");
  expect_model_error([&] { layout_from_json(no_text, "g"); }, {"\"text_config\"", "gemma3_text"});
}

TEST(LayoutHfConfigs, AnUnknownModelTypeListsTheSupportedOnes) {
  const std::vector<std::string> types = supported_model_types();
  EXPECT_EQ(types,
            (std::vector<std::string>{"gemma2", "gemma3", "gemma3_text", "gpt2", "gpt_neox",
                                      "llama", "mistral", "mixtral", "phi3", "qwen2", "qwen3"}));
  json cfg = read_config("qwen3-8b");
  cfg["model_type"] = "deepseek_v3";
  std::vector<std::string> needles = {"unsupported model_type \"deepseek_v3\""};
  needles.insert(needles.end(), types.begin(), types.end());
  expect_model_error([&] { layout_from_json(cfg, "d"); }, needles);
}

TEST(LayoutHfConfigs, OnlyTheCausalLmArchitectureIsLaidOut) {
  json cfg = read_config("qwen2.5-7b");
  cfg["architectures"] = {"Qwen2ForSequenceClassification"};  // a score head, no lm_head
  expect_model_error([&] { layout_from_json(cfg, "q"); },
                     {"architecture \"Qwen2ForSequenceClassification\"", "ForCausalLM"});
  cfg["architectures"] = "Qwen2ForCausalLM";
  expect_model_error([&] { layout_from_json(cfg, "q"); }, {"must be a list"});
  cfg.erase("architectures");  // absent: the causal LM is assumed
  EXPECT_EQ(layout_from_json(cfg, "q").total_numel(), 7'615'616'512u);
}

TEST(LayoutHfConfigs, FieldsAFamilyCannotDeriveAreRequired) {
  for (const char* name : {"gemma2-9b", "gemma3-1b", "qwen3-8b"}) {
    json cfg = read_config(name);
    cfg.erase("head_dim");
    SCOPED_TRACE(name);
    expect_model_error([&] { layout_from_json(cfg, "h"); }, {"no field \"head_dim\""});
  }
  json mixtral = read_config("mixtral-8x7b");
  mixtral.erase("num_local_experts");
  expect_model_error([&] { layout_from_json(mixtral, "m"); }, {"no field \"num_local_experts\""});
  mixtral["num_hidden_layers"] = 1000;
  mixtral["num_local_experts"] = 4096;  // within the expert limit; 4,096,000 blocks are not
  expect_model_error([&] { layout_from_json(mixtral, "m"); }, {"1000 layers x 4096 experts"});
  mixtral["num_local_experts"] = 4097;
  expect_model_error([&] { layout_from_json(mixtral, "m"); }, {"above the limit of 4096"});
  json neox = read_config("pythia-6.9b");
  neox.erase("intermediate_size");
  expect_model_error([&] { layout_from_json(neox, "n"); }, {"no field \"intermediate_size\""});
}

TEST(LayoutHfConfigs, TheHelpListsTheShippedNamesAndTheModelTypes) {
  const std::string help = model_choices_help(kDirs);
  for (const std::string& n : shipped_model_names(kDirs))
    EXPECT_NE(help.find(n), std::string::npos) << n;
  for (const std::string& t : supported_model_types())
    EXPECT_NE(help.find(t), std::string::npos) << t;
}

}  // namespace
}  // namespace shardaccum
