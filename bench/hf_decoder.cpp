#include "bench/hf_decoder.hpp"

#include "bench/layout_fields.hpp"

namespace shardaccum::layout_detail {

namespace {

/// Most experts a MoE layer may have; real models have 8 to 256.
constexpr uint64_t kMaxExperts = 4096;

/// The sizes of one decoder layer, read and checked once.
struct Dims {
  uint64_t d, inter, layers, heads, kv_heads, head_dim, vocab, experts;
};

Dims read_dims(const json& cfg, const DecoderRules& r, std::string_view source) {
  Dims s{};
  s.d = required_dim(cfg, "hidden_size", source);
  s.inter = required_dim(cfg, "intermediate_size", source);
  s.layers = required_dim(cfg, "num_hidden_layers", source, kMaxLayoutUnits - 3);
  s.heads = required_dim(cfg, "num_attention_heads", source);
  s.kv_heads = optional_dim(cfg, "num_key_value_heads", s.heads, source);
  s.vocab = required_dim(cfg, "vocab_size", source);
  // Grouped-query attention shares each K/V head among heads / kv_heads query heads.
  if (s.kv_heads > s.heads || s.heads % s.kv_heads != 0) {
    fail(source, "field \"num_key_value_heads\" (" + std::to_string(s.kv_heads) +
                     ") must divide field \"num_attention_heads\" (" + std::to_string(s.heads) +
                     "); fix one of them");
  }
  // transformers uses floor division when head_dim is not given; where a family's default is
  // another number (Gemma 256, Qwen3 128) the config must say it.
  const json* hd = find_field(cfg, "head_dim");
  if (hd == nullptr && r.head_dim_required) {
    fail(source, "the config has no field \"head_dim\"; this model_type does not derive it from "
                 "hidden_size / num_attention_heads: add it (a positive integer)");
  }
  s.head_dim = hd != nullptr ? positive_value(*hd, source, "field \"head_dim\"", kMaxLayoutNumel)
                             : s.d / s.heads;
  if (s.head_dim == 0) {
    fail(source, "hidden_size " + std::to_string(s.d) + " / num_attention_heads " +
                     std::to_string(s.heads) +
                     " gives head_dim 0; set \"head_dim\" or fix the sizes");
  }
  s.experts = r.moe ? required_dim(cfg, "num_local_experts", source, kMaxExperts) : 0;
  // Each expert is three params: bound what a mistyped count could make the loader allocate.
  if (r.moe && s.layers * s.experts > kMaxLayoutUnits) {
    fail(source, std::to_string(s.layers) + " layers x " + std::to_string(s.experts) +
                     " experts is above the limit of " + std::to_string(kMaxLayoutUnits) +
                     " expert blocks; check \"num_hidden_layers\" and \"num_local_experts\"");
  }
  return s;
}

}  // namespace

// transformers/models/{llama,mistral,mixtral,qwen2,qwen3,gemma2,gemma3,phi3}/modeling_*.py:
// nn.Linear stores weights as [out, in]; RMSNorms have a weight only. Layer order in
// named_parameters(): self_attn, mlp (or block_sparse_moe), input/post-attention norms, then
// Gemma's pre/post-feedforward norms.
Layout layout_decoder(const json& cfg, const DecoderRules& r, std::string family, std::string name,
                      std::string_view source, const std::string& prefix) {
  Counter c(source);
  const Dims s = read_dims(cfg, r, source);
  const bool tied = optional_flag(cfg, "tie_word_embeddings", r.tied_by_default, source);
  const bool attn_flag =
      r.attn_bias == AttnBias::kFlag && optional_flag(cfg, "attention_bias", false, source);
  const bool qkv_bias = attn_flag || r.attn_bias == AttnBias::kQkvOnly;
  const bool mlp_bias = r.mlp_bias_flag && optional_flag(cfg, "mlp_bias", false, source);
  const uint64_t d = s.d, q_out = c.mul(s.heads, s.head_dim),
                 kv_out = c.mul(s.kv_heads, s.head_dim);

  Layout layout{std::move(name), {}, std::move(family)};
  layout.units.reserve(s.layers + 3);
  uint64_t total = 0;
  auto push = [&](FlatParam unit) {
    total = c.add(total, unit.numel);
    layout.units.push_back(std::move(unit));
  };
  push(UnitBuilder(c, "embed_tokens").add(prefix + "embed_tokens.weight", {s.vocab, d}).take());
  for (uint64_t i = 0; i < s.layers; ++i) {
    const std::string p = prefix + "layers." + std::to_string(i) + ".";
    UnitBuilder u(c, "layers." + std::to_string(i));
    auto linear = [&](const std::string& module, uint64_t in, uint64_t out, bool bias) {
      u.add(p + module + ".weight", {out, in});
      if (bias) u.add(p + module + ".bias", {out});
    };
    if (r.fused) {  // Phi3Attention registers o_proj before qkv_proj
      linear("self_attn.o_proj", q_out, d, false);
      linear("self_attn.qkv_proj", d, c.add(q_out, c.mul(2, kv_out)), false);
    } else {
      linear("self_attn.q_proj", d, q_out, qkv_bias);
      linear("self_attn.k_proj", d, kv_out, qkv_bias);
      linear("self_attn.v_proj", d, kv_out, qkv_bias);
      linear("self_attn.o_proj", q_out, d, attn_flag);
    }
    if (r.qk_norm)
      u.add(p + "self_attn.q_norm.weight", {s.head_dim})
          .add(p + "self_attn.k_norm.weight", {s.head_dim});
    if (r.moe) {  // router, then each expert's w1 (gate), w2 (down), w3 (up)
      linear("block_sparse_moe.gate", d, s.experts, false);
      for (uint64_t e = 0; e < s.experts; ++e) {
        const std::string x = "block_sparse_moe.experts." + std::to_string(e);
        linear(x + ".w1", d, s.inter, false);
        linear(x + ".w2", s.inter, d, false);
        linear(x + ".w3", d, s.inter, false);
      }
    } else if (r.fused) {
      linear("mlp.gate_up_proj", d, c.mul(2, s.inter), false);
      linear("mlp.down_proj", s.inter, d, false);
    } else {
      linear("mlp.gate_proj", d, s.inter, mlp_bias);
      linear("mlp.up_proj", d, s.inter, mlp_bias);
      linear("mlp.down_proj", s.inter, d, mlp_bias);
    }
    u.add(p + "input_layernorm.weight", {d}).add(p + "post_attention_layernorm.weight", {d});
    if (r.ffw_norms)
      u.add(p + "pre_feedforward_layernorm.weight", {d})
          .add(p + "post_feedforward_layernorm.weight", {d});
    push(u.take());
  }
  push(UnitBuilder(c, "norm").add(prefix + "norm.weight", {d}).take());
  if (!tied)  // lm_head: nn.Linear(hidden_size, vocab_size, bias=False)
    push(UnitBuilder(c, "lm_head").add("lm_head.weight", {s.vocab, d}).take());
  return layout;
}

}  // namespace shardaccum::layout_detail
