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

// GPTNeoXForCausalLM (transformers/models/gpt_neox/modeling_gpt_neox.py; Pythia): LayerNorms with
// biases, fused query_key_value [3d, d] and dense with biases iff attention_bias (default true),
// the MLP's dense_h_to_4h / dense_4h_to_h always with biases, embed_out untied unless
// tie_word_embeddings. GPTNeoXLayer registers its two norms before attention and mlp.
Layout layout_gpt_neox(const json& cfg, std::string name, std::string_view source) {
  Counter c(source);
  const uint64_t d = required_dim(cfg, "hidden_size", source);
  const uint64_t inter = required_dim(cfg, "intermediate_size", source);
  const uint64_t layers = required_dim(cfg, "num_hidden_layers", source, kMaxLayoutUnits - 3);
  const uint64_t vocab = required_dim(cfg, "vocab_size", source);
  const bool tied = optional_flag(cfg, "tie_word_embeddings", false, source);
  const bool attn_bias = optional_flag(cfg, "attention_bias", true, source);

  Layout layout{std::move(name), {}, "gpt_neox"};
  layout.units.reserve(layers + 3);
  uint64_t total = 0;
  push_unit(layout, total, c,
            UnitBuilder(c, "embed_in").add("gpt_neox.embed_in.weight", {vocab, d}).take());
  for (uint64_t i = 0; i < layers; ++i) {
    const std::string p = "gpt_neox.layers." + std::to_string(i) + ".";
    UnitBuilder u(c, "layers." + std::to_string(i));
    auto module = [&](const std::string& m, std::vector<uint64_t> weight, bool bias) {
      const uint64_t out = weight.front();
      u.add(p + m + ".weight", std::move(weight));
      if (bias) u.add(p + m + ".bias", {out});
    };
    module("input_layernorm", {d}, true);
    module("post_attention_layernorm", {d}, true);
    module("attention.query_key_value", {c.mul(3, d), d}, attn_bias);
    module("attention.dense", {d, d}, attn_bias);
    module("mlp.dense_h_to_4h", {inter, d}, true);
    module("mlp.dense_4h_to_h", {d, inter}, true);
    push_unit(layout, total, c, u.take());
  }
  push_unit(layout, total, c,
            UnitBuilder(c, "final_layer_norm")
                .add("gpt_neox.final_layer_norm.weight", {d})
                .add("gpt_neox.final_layer_norm.bias", {d})
                .take());
  if (!tied)  // embed_out: nn.Linear(hidden_size, vocab_size, bias=False)
    push_unit(layout, total, c,
              UnitBuilder(c, "embed_out").add("embed_out.weight", {vocab, d}).take());
  return layout;
}

}  // namespace shardaccum::layout_detail
