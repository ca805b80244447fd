#pragma once
// Model layouts: turn a `--model` value into the flat parameters (FSDP units) a case runs on.
//
// Unit naming (forward order; backward visits them last to first):
//   uniform:COUNTxNUMEL       unit0 .. unit{COUNT-1}, each NUMEL elements
//   GPT-2 family config       wte+wpe, h.0 .. h.{n_layer-1}, ln_f   (+ lm_head only when
//                             tie_word_embeddings is explicitly false; GPT-2 ties it to wte)
//   Llama / Mistral config    embed_tokens, layers.0 .. layers.{L-1}, norm, lm_head
//                             (lm_head omitted when tie_word_embeddings is true)
// The GPT-2 token and position embeddings form one unit because they run together at the start of
// the forward pass, as the Llama family's single embedding unit does.
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
///  - a Hugging Face `config.json` with `model_type` "gpt2" (n_embd, n_layer, vocab_size,
///    n_positions; n_inner null or absent = 4*n_embd), or "llama" / "mistral" (hidden_size,
///    intermediate_size, num_hidden_layers, num_attention_heads, vocab_size; optional
///    num_key_value_heads = heads, head_dim = hidden/heads, tie_word_embeddings = false,
///    attention_bias = false, mlp_bias = false). Parameter counts match the models' real weights:
///    GPT-2 LayerNorms have weight+bias and its Conv1D layers have biases; Llama RMSNorms have a
///    weight only and its Linear layers have biases only when the *_bias flags say so.
///
/// Throws std::invalid_argument (message naming `--model`) for an unsupported model_type, a
/// missing, non-integer or non-positive field, a non-boolean flag, a unit with numel 0, negative,
/// fractional or above kMaxLayoutNumel, an empty layout, and totals above kMaxLayoutNumel.
Layout layout_from_json(const nlohmann::json& j, const std::string& name);

}  // namespace shardaccum
