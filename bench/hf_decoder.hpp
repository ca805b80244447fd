#pragma once
// Decoder-only Hugging Face families that share Llama's skeleton (embed_tokens, layers.*, norm,
// lm_head): each family is a row of rules saying how its decoder layer differs from Llama's
// (bench/hf_families.cpp holds the table). Errors are std::invalid_argument naming --model.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/layout.hpp"

namespace shardaccum::layout_detail {

/// Which attention projections carry a bias (the Linear layers of transformers' *Attention).
enum class AttnBias {
  kFlag,     // q/k/v/o iff the config's "attention_bias" (default false): Llama, Qwen3, Gemma
  kQkvOnly,  // q/k/v always, o never, no config field: Qwen2 / Qwen2.5
  kNone,     // never, no config field: Mixtral, Phi-3
};

/// How one family's decoder layer and head differ from LlamaForCausalLM's.
struct DecoderRules {
  AttnBias attn_bias = AttnBias::kFlag;
  bool mlp_bias_flag = false;  // the MLP has biases iff "mlp_bias" (Llama, Mistral here)
  bool qk_norm = false;        // self_attn.q_norm / k_norm [head_dim] after o_proj (Qwen3, Gemma3)
  bool fused = false;          // Phi-3: self_attn.o_proj then qkv_proj; mlp.gate_up_proj, down_proj
  bool moe = false;            // Mixtral: block_sparse_moe.gate [E, d] + experts.{e}.w1/w2/w3
  bool ffw_norms = false;      // Gemma 2/3: pre_ and post_feedforward_layernorm after the others
  bool head_dim_required = false;  // Gemma, Qwen3: head_dim is not hidden_size / heads there
  bool tied_by_default = false;    // Gemma: tie_word_embeddings defaults to true (no lm_head)
};

/// The Layout of a decoder-only model: units `embed_tokens`, `layers.0` .. `layers.{L-1}`, `norm`,
/// and `lm_head` unless tied; parameter names are `prefix` + the module path ("model." for
/// *ForCausalLM, "model.language_model." for Gemma 3's multimodal model), lm_head.weight at the
/// top. Fields: hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
/// vocab_size (required); num_key_value_heads (= heads), head_dim (= hidden / heads unless
/// rules.head_dim_required), tie_word_embeddings, attention_bias, mlp_bias; num_local_experts
/// (required when rules.moe). A MoE layer (its router and every expert) is one unit, as FSDP's
/// usual auto-wrap policy wraps a decoder layer. Throws std::invalid_argument naming --model and
/// the field for a missing or bad field.
Layout layout_decoder(const nlohmann::json& cfg, const DecoderRules& rules, std::string family,
                      std::string name, std::string_view source, const std::string& prefix);

}  // namespace shardaccum::layout_detail
