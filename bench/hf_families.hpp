#pragma once
// The Hugging Face families `--model` reads from a config.json, chosen by its model_type (one
// table, bench/hf_families.cpp); bench/model_layouts.hpp documents the fields and unit names.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/layout.hpp"

namespace shardaccum {

/// The model_type values a Hugging Face config.json may have, sorted: gemma2, gemma3 (the
/// multimodal config: its text_config only), gemma3_text, gpt2, gpt_neox, llama, mistral,
/// mixtral, phi3, qwen2, qwen3.
std::vector<std::string> supported_model_types();

namespace layout_detail {

/// The Layout of a Hugging Face config.json `cfg` (an object with a string "model_type").
/// "architectures", when given, must name only causal-LM models (*ForCausalLM, *LMHeadModel, and
/// Gemma3ForConditionalGeneration): another head (a classifier, a bare *Model) has other weights.
/// Throws std::invalid_argument naming --model: an unknown model_type (listing
/// supported_model_types()), another architecture, and the family's field errors.
Layout layout_from_hf_config(const nlohmann::json& cfg, std::string name, std::string_view source);

}  // namespace layout_detail
}  // namespace shardaccum
