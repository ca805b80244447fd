#include "bench/hf_layouts.hpp"

#include "bench/layout_fields.hpp"

namespace shardaccum::layout_detail {

// GPT2LMHeadModel (transformers/models/gpt2/modeling_gpt2.py): Conv1D layers carry biases,
// LayerNorms carry weight and bias, lm_head is tied to wte unless tie_word_embeddings is false.
Layout layout_gpt2(const json& cfg, std::string name, std::string_view source) {
  Counter c(source);
  const uint64_t d = required_dim(cfg, "n_embd", source);
  const uint64_t layers = required_dim(cfg, "n_layer", source, kMaxLayoutUnits - 3);
  const uint64_t vocab = required_dim(cfg, "vocab_size", source);
  const uint64_t positions = required_dim(cfg, "n_positions", source);
  const uint64_t inner = optional_dim(cfg, "n_inner", c.mul(4, d), source);
  const bool tied = optional_flag(cfg, "tie_word_embeddings", true, source);

  const uint64_t layer_norm = c.mul(2, d);                            // weight + bias
  const uint64_t c_attn = c.add(c.mul(d, c.mul(3, d)), c.mul(3, d));  // qkv: d -> 3d
  const uint64_t attn_proj = c.add(c.mul(d, d), d);                   // d -> d
  const uint64_t c_fc = c.add(c.mul(d, inner), inner);                // d -> inner
  const uint64_t mlp_proj = c.add(c.mul(inner, d), d);                // inner -> d
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
    const uint64_t head = c.mul(vocab, d);  // nn.Linear(n_embd, vocab_size, bias=False)
    c.add(total, head);
    layout.units.push_back({"lm_head", head});
  }
  return layout;
}

// LlamaForCausalLM / MistralForCausalLM (transformers/models/{llama,mistral}/modeling_*.py):
// RMSNorm has a weight only; q/k/v/o carry biases iff attention_bias, the MLP iff mlp_bias.
Layout layout_llama(const json& cfg, std::string name, std::string_view source) {
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
  const json* hd = find_field(cfg, "head_dim");
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
  const uint64_t block = c.add(c.add(attn, mlp), c.mul(2, d));  // input + post-attention norms
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
    c.add(total, embed);  // lm_head: nn.Linear(hidden_size, vocab_size, bias=False)
    layout.units.push_back({"lm_head", embed});
  }
  return layout;
}

}  // namespace shardaccum::layout_detail
