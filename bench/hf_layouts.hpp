#pragma once
// Layouts of the Hugging Face families with their own skeleton (GPT-2, GPT-NeoX) from their
// config.json fields (bench/model_layouts.hpp documents the accepted fields); the Llama-like
// decoders are in bench/hf_decoder.hpp. Throw std::invalid_argument naming --model.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/layout.hpp"

namespace shardaccum::layout_detail {

/// GPT2LMHeadModel: wte+wpe, h.0 .. h.{n_layer-1}, ln_f (+ lm_head when untied).
Layout layout_gpt2(const nlohmann::json& cfg, std::string name, std::string_view source);
/// GPTNeoXForCausalLM (Pythia): embed_in, layers.*, final_layer_norm, embed_out (unless tied).
Layout layout_gpt_neox(const nlohmann::json& cfg, std::string name, std::string_view source);

}  // namespace shardaccum::layout_detail
