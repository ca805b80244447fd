#pragma once
// Layouts of Hugging Face model families from their config.json fields (bench/model_layouts.hpp
// documents the accepted fields). Throw std::invalid_argument naming --model.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/layout.hpp"

namespace shardaccum::layout_detail {

/// GPT2LMHeadModel: wte+wpe, h.0 .. h.{n_layer-1}, ln_f (+ lm_head when untied).
Layout layout_gpt2(const nlohmann::json& cfg, std::string name, std::string_view source);
/// LlamaForCausalLM / MistralForCausalLM: embed_tokens, layers.*, norm, lm_head (unless tied).
Layout layout_llama(const nlohmann::json& cfg, std::string name, std::string_view source);

}  // namespace shardaccum::layout_detail
