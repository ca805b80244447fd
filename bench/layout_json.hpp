#pragma once
// `shardaccum_bench --describe-layout --model M`: the layout a `--model` value resolves to, as
// JSON, so that tools outside the suite (bench/real/) build the same model without re-deriving it.
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/layout.hpp"

namespace shardaccum {

/// Schema name of the document, bumped when a key changes meaning.
inline constexpr const char* kLayoutSchema = "shardaccum.layout/1";

/// The document: {"schema", "model" (Layout::name), "spec" (`spec`, the --model value as given),
/// "family", "total_numel", "units": [{"index", "name", "numel", "params": [{"name", "shape",
/// "offset"}]}]}, keys in that order. Element j (row-major) of a param is unit element
/// offset + j; the params of a unit fill it exactly. Throws std::logic_error for a unit whose
/// params do not (a hand-built layout: the loaders always fill them).
nlohmann::ordered_json layout_json(const Layout& layout, std::string_view spec);

}  // namespace shardaccum
