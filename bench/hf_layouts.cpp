#include "bench/hf_layouts.hpp"

#include "bench/layout_fields.hpp"

namespace shardaccum::layout_detail {

namespace {

/// Appends `unit` to `layout`, keeping the layout's total under the limit.
void push_unit(Layout& layout, uint64_t& total, const Counter& c, FlatParam unit) {
  total = c.add(total, unit.numel);
  layout.units.push_back(std::move(unit));
}

}  // namespace

// GPT2LMHeadModel (transformers/models/gpt2/modeling_gpt2.py): Conv1D layers carry biases and
// store weights as [in, out], LayerNorms carry weight and bias, lm_head is tied to wte unless
// tie_word_embeddings is false. Params in named_parameters() order: block = ln_1, attn, ln_2, mlp.
Layout layout_gpt2(const json& cfg, std::string name, std::string_view source) {
  Counter c(source);
  const uint64_t d = required_dim(cfg, "n_embd", source);
  const uint64_t layers = required_dim(cfg, "n_layer", source, kMaxLayoutUnits - 3);
  const uint64_t vocab = required_dim(cfg, "vocab_size", source);
  const uint64_t positions = required_dim(cfg, "n_positions", source);
  const uint64_t inner = optional_dim(cfg, "n_inner", c.mul(4, d), source);
  const bool tied = optional_flag(cfg, "tie_word_embeddings", true, source);

  Layout layout{std::move(name), {}, "gpt2"};
  layout.units.reserve(layers + 3);
  uint64_t total = 0;
  push_unit(layout, total, c,
            UnitBuilder(c, "wte+wpe")
                .add("transformer.wte.weight", {vocab, d})
                .add("transformer.wpe.weight", {positions, d})
                .take());
  for (uint64_t i = 0; i < layers; ++i) {
    const std::string p = "transformer.h." + std::to_string(i) + ".";
    push_unit(layout, total, c,
              UnitBuilder(c, "h." + std::to_string(i))
                  .add(p + "ln_1.weight", {d})
                  .add(p + "ln_1.bias", {d})
                  .add(p + "attn.c_attn.weight", {d, c.mul(3, d)})  // qkv: d -> 3d
                  .add(p + "attn.c_attn.bias", {c.mul(3, d)})
                  .add(p + "attn.c_proj.weight", {d, d})
                  .add(p + "attn.c_proj.bias", {d})
                  .add(p + "ln_2.weight", {d})
                  .add(p + "ln_2.bias", {d})
                  .add(p + "mlp.c_fc.weight", {d, inner})
                  .add(p + "mlp.c_fc.bias", {inner})
                  .add(p + "mlp.c_proj.weight", {inner, d})
                  .add(p + "mlp.c_proj.bias", {d})
                  .take());
  }
  push_unit(layout, total, c,
            UnitBuilder(c, "ln_f")
                .add("transformer.ln_f.weight", {d})
                .add("transformer.ln_f.bias", {d})
                .take());
  if (!tied)  // nn.Linear(n_embd, vocab_size, bias=False)
    push_unit(layout, total, c, UnitBuilder(c, "lm_head").add("lm_head.weight", {vocab, d}).take());
  return layout;
}

// LlamaForCausalLM / MistralForCausalLM (transformers/models/{llama,mistral}/modeling_*.py):
// RMSNorm has a weight only; q/k/v/o carry biases iff attention_bias, the MLP iff mlp_bias.
// nn.Linear stores weights as [out, in]. Layer order: self_attn, mlp, input/post norms.
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
  const std::string family = cfg.at("model_type").get<std::string>();  // llama or mistral

  Layout layout{std::move(name), {}, family};
  layout.units.reserve(layers + 3);
  uint64_t total = 0;
  push_unit(layout, total, c,
            UnitBuilder(c, "embed_tokens").add("model.embed_tokens.weight", {vocab, d}).take());
  for (uint64_t i = 0; i < layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    UnitBuilder u(c, "layers." + std::to_string(i));
    auto linear = [&](const std::string& module, uint64_t in, uint64_t out, bool bias) {
      u.add(p + module + ".weight", {out, in});
      if (bias) u.add(p + module + ".bias", {out});
    };
    linear("self_attn.q_proj", d, q_out, attn_bias);
    linear("self_attn.k_proj", d, kv_out, attn_bias);
    linear("self_attn.v_proj", d, kv_out, attn_bias);
    linear("self_attn.o_proj", q_out, d, attn_bias);
    linear("mlp.gate_proj", d, inter, mlp_bias);
    linear("mlp.up_proj", d, inter, mlp_bias);
    linear("mlp.down_proj", inter, d, mlp_bias);
    u.add(p + "input_layernorm.weight", {d}).add(p + "post_attention_layernorm.weight", {d});
    push_unit(layout, total, c, u.take());
  }
  push_unit(layout, total, c, UnitBuilder(c, "norm").add("model.norm.weight", {d}).take());
  if (!tied)  // lm_head: nn.Linear(hidden_size, vocab_size, bias=False)
    push_unit(layout, total, c, UnitBuilder(c, "lm_head").add("lm_head.weight", {vocab, d}).take());
  return layout;
}

}  // namespace shardaccum::layout_detail
