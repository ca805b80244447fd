#pragma once
// Model layouts: turn a `--model` value into the flat parameters (FSDP units) a case runs on.
//
// Unit naming (forward order; backward visits them last to first):
//   uniform:COUNTxNUMEL       unit0 .. unit{COUNT-1}, each NUMEL elements
//   GPT-2 family config       wte+wpe, h.0 .. h.{n_layer-1}, ln_f   (+ lm_head only when
//                             tie_word_embeddings is explicitly false; GPT-2 ties it to wte)
//   GPT-NeoX (Pythia) config  embed_in, layers.0 .. layers.{L-1}, final_layer_norm, embed_out
//   Llama-like decoders       embed_tokens, layers.0 .. layers.{L-1}, norm, lm_head
//   (llama, mistral, mixtral, (lm_head omitted when tied: Gemma ties by default)
//   qwen2, qwen3, gemma2,
//   gemma3(_text), phi3)
// The GPT-2 token and position embeddings form one unit because they run together at the start of
// the forward pass, as the Llama family's single embedding unit does. A Mixtral layer (attention,
// router and all its experts) is one unit, as FSDP's usual transformer auto-wrap policy wraps a
// decoder layer. A multimodal Gemma 3 config (model_type gemma3) is laid out from its text_config
// only: its vision tower and projector are not counted (bench/hf_families.hpp).
//
// Each unit also lists its parameters (FlatParam::params: Hugging Face named_parameters() names
// and shapes, offsets the running sum): a uniform unit is one `unit{i}.weight` of shape
// [8192, NUMEL/8192] when 8192 divides NUMEL, else [NUMEL]; a layout list unit one
// `{name}.weight` of shape [numel] unless it gives "params"; configs give the model's tensors.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/layout.hpp"

namespace shardaccum {

/// Largest numel accepted for one unit and for a whole layout: 2^48 elements (1 PiB in fp32).
/// Far above any real model, low enough that byte counts (numel * 8 * K) cannot overflow uint64.
inline constexpr uint64_t kMaxLayoutNumel = uint64_t{1} << 48;

/// Largest number of units in a layout; bounds the memory a mistyped count could ask for.
inline constexpr uint64_t kMaxLayoutUnits = uint64_t{1} << 20;

/// Resolves a `--model` value to a Layout.
///
/// `spec` is one of:
///  - `uniform:COUNTxNUMEL`: COUNT units of NUMEL elements each. NUMEL takes an optional binary
///    suffix K, M or G (1024-based, case-insensitive: `64M` = 67,108,864). Units are `unit0` ..;
///    the layout's name is `spec` itself. Example: `uniform:16x64M` totals 1,073,741,824 elements.
///  - a path to a `.json` file (taken as a path when it ends in `.json` or contains a '/');
///  - a shipped name such as `llama2-7b`, found as `<dir>/llama2-7b.json` in the first directory
///    of `config_dirs` that has it.
/// For files the layout's name is the file stem, and the content is read by layout_from_json.
///
/// Throws std::invalid_argument, with a message naming `--model` and how to fix the value, for: an
/// unknown name (the message lists the shipped names found in `config_dirs`), a missing or
/// unreadable file, malformed JSON (nlohmann's parse error text included), and every error that
/// layout_from_json or the `uniform:` syntax raises (bad or zero count, bad numel or suffix, a
/// count or numel above kMaxLayoutUnits / kMaxLayoutNumel).
Layout load_layout(std::string_view spec, const std::vector<std::string>& config_dirs);

/// Builds a Layout from parsed JSON; `name` becomes the layout's name.
///
/// Accepted shapes:
///  - a layout list: `{"name": "...", "units": [{"name": "...", "numel": N}, ...]}` or a bare
///    array `[{"name": ..., "numel": ...}, ...]`. The optional top-level "name" is used only when
///    `name` is empty. Unit names must be non-empty and unique; numel must be an integer in
///    [1, kMaxLayoutNumel]. A unit may give `"params": [{"name": ..., "shape": [...]}, ...]`
///    (bench/list_params.hpp): shapes that sum to its numel, names unique within the layout.
///  - a Hugging Face `config.json` whose `model_type` is one of supported_model_types()
///    (bench/hf_families.hpp; the table is bench/hf_families.cpp): "gpt2" (n_embd, n_layer,
///    vocab_size, n_positions; n_inner null or absent = 4*n_embd); "gpt_neox" (hidden_size,
///    intermediate_size, num_hidden_layers, vocab_size; attention_bias = true,
///    tie_word_embeddings = false); the Llama-like decoders (bench/hf_decoder.hpp: hidden_size,
///    intermediate_size, num_hidden_layers, num_attention_heads, vocab_size; optional
///    num_key_value_heads = heads, head_dim = hidden/heads (required for gemma* and qwen3),
///    tie_word_embeddings, attention_bias, mlp_bias; num_local_experts for mixtral). Parameter
///    counts match the models' real weights: GPT-2 and GPT-NeoX LayerNorms have weight+bias and
///    their linear layers biases; RMSNorms have a weight only, qwen2 has q/k/v biases, qwen3 and
///    gemma3 q_norm/k_norm weights of head_dim, gemma2/3 four norms a layer, phi3 fused qkv_proj
///    and gate_up_proj. "architectures", when given, must name the causal-LM model.
///
/// Throws std::invalid_argument (message naming `--model`) for an unsupported model_type (the
/// message lists the supported ones), another architecture than the causal LM, a
/// missing, non-integer or non-positive field, a non-boolean flag, a unit with numel 0, negative,
/// fractional or above kMaxLayoutNumel, an empty layout, and totals above kMaxLayoutNumel.
Layout layout_from_json(const nlohmann::json& j, const std::string& name);

/// Stems of the *.json files in `dirs` (unreadable folders skipped), sorted and unique: the shipped
/// names `--model` accepts, and what `--model all` runs.
std::vector<std::string> shipped_model_names(const std::vector<std::string>& dirs);

/// The `--help` phrase for --model's names and files: the shipped names found in `dirs` and the
/// supported model_types, so the help lists what the build really accepts.
std::string model_choices_help(const std::vector<std::string>& dirs);

}  // namespace shardaccum
