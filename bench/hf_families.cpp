#include "bench/hf_families.hpp"

#include "bench/hf_decoder.hpp"
#include "bench/hf_layouts.hpp"
#include "bench/layout_fields.hpp"

#include <algorithm>

namespace shardaccum {

namespace layout_detail {
namespace {

/// Gemma3TextConfig's defaults (transformers/models/gemma3/configuration_gemma3.py): Google's
/// multimodal config.json gives only the text_config fields that differ from them.
const json& gemma3_text_defaults() {
  static const json d = {
      {"vocab_size", 262208},    {"hidden_size", 2304},         {"intermediate_size", 9216},
      {"num_hidden_layers", 26}, {"num_attention_heads", 8},    {"num_key_value_heads", 4},
      {"head_dim", 256},         {"tie_word_embeddings", true}, {"attention_bias", false}};
  return d;
}

/// Gemma3ForConditionalGeneration: the language model of its text_config (Gemma3TextConfig
/// defaults for absent fields), named as transformers >= 4.52 does (model.language_model.*,
/// lm_head tied). The vision tower (vision_config, SigLIP) and multi_modal_projector are not
/// laid out: the layout is the text decoder's.
Layout layout_gemma3_multimodal(const json& cfg, std::string name, std::string_view source,
                                const DecoderRules& rules) {
  const json* text = find_field(cfg, "text_config");
  if (text == nullptr || !text->is_object()) {
    fail(source, "model_type \"gemma3\" is the multimodal config: it needs a \"text_config\" "
                 "object (its language model); for a text-only Gemma 3 use model_type "
                 "\"gemma3_text\"");
  }
  json merged = *text;
  for (const auto& [key, value] : gemma3_text_defaults().items())
    if (find_field(merged, key.c_str()) == nullptr) merged[key] = value;
  return layout_decoder(merged, rules, "gemma3", std::move(name), source, "model.language_model.");
}

/// One row per model_type: its decoder rules, or a builder of its own.
struct Family {
  const char* model_type;
  DecoderRules rules;
  Layout (*own)(const json&, std::string, std::string_view) = nullptr;
};

constexpr DecoderRules kLlama{.attn_bias = AttnBias::kFlag, .mlp_bias_flag = true};
constexpr DecoderRules kMixtral{.attn_bias = AttnBias::kNone, .moe = true};
constexpr DecoderRules kQwen2{.attn_bias = AttnBias::kQkvOnly};
constexpr DecoderRules kQwen3{.qk_norm = true, .head_dim_required = true};
constexpr DecoderRules kGemma2{
    .ffw_norms = true, .head_dim_required = true, .tied_by_default = true};
constexpr DecoderRules kGemma3{
    .qk_norm = true, .ffw_norms = true, .head_dim_required = true, .tied_by_default = true};
constexpr DecoderRules kPhi3{.attn_bias = AttnBias::kNone, .fused = true};

const std::vector<Family>& families() {
  static const std::vector<Family> table = {
      {"gpt2", {}, layout_gpt2}, {"gpt_neox", {}, layout_gpt_neox},
      {"llama", kLlama},         {"mistral", kLlama},  // Mistral: Llama with GQA
      {"mixtral", kMixtral},     {"qwen2", kQwen2},
      {"qwen3", kQwen3},         {"gemma2", kGemma2},
      {"gemma3_text", kGemma3},  {"gemma3", kGemma3},  // gemma3: its text_config
      {"phi3", kPhi3},
  };
  return table;
}

/// Heads with other weights than the causal LM's (a score layer, no lm_head) are refused.
void check_architectures(const json& cfg, std::string_view source) {
  const json* arch = find_field(cfg, "architectures");
  if (arch == nullptr) return;
  if (!arch->is_array()) fail(source, "\"architectures\" must be a list, got " + brief_json(*arch));
  for (const json& a : *arch) {
    if (!a.is_string()) fail(source, "\"architectures\" holds " + brief_json(a) + ", not a name");
    const std::string& n = a.get_ref<const std::string&>();
    auto ends = [&](std::string_view tail) {
      return n.size() >= tail.size() && n.compare(n.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (!ends("ForCausalLM") && !ends("LMHeadModel") && n != "Gemma3ForConditionalGeneration") {
      fail(source, "architecture \"" + brief_text(n) +
                       "\" is not laid out: only the causal-LM model (*ForCausalLM, "
                       "*LMHeadModel) is; set \"architectures\" to it or write a layout list");
    }
  }
}

}  // namespace

Layout layout_from_hf_config(const json& cfg, std::string name, std::string_view source) {
  const std::string type = cfg.at("model_type").get<std::string>();
  for (const Family& f : families()) {
    if (type != f.model_type) continue;
    check_architectures(cfg, source);
    if (f.own != nullptr) return f.own(cfg, std::move(name), source);
    if (type == "gemma3") return layout_gemma3_multimodal(cfg, std::move(name), source, f.rules);
    return layout_decoder(cfg, f.rules, type, std::move(name), source, "model.");
  }
  std::string supported;
  for (const std::string& t : supported_model_types())
    supported += (supported.empty() ? "" : ", ") + t;
  fail(source, "unsupported model_type \"" + brief_text(type) +
                   "\"; supported model_types: " + supported +
                   ". For another model, write a layout list "
                   "{\"units\": [{\"name\": ..., \"numel\": ...}]} or use uniform:COUNTxNUMEL");
}

}  // namespace layout_detail

std::vector<std::string> supported_model_types() {
  std::vector<std::string> out;
  for (const layout_detail::Family& f : layout_detail::families()) out.emplace_back(f.model_type);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace shardaccum
