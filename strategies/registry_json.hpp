#pragma once
// The registry as JSON (schema 1): every axis with its values, descriptions, the systems they
// follow and the default matrix; the presets; the canonical schedules as rules; the dtype triples.
// Written into the benchmark JSON's context (`registry`) and by `shardaccum_bench
// --describe-registry`; the Python tools (scripts/shardaccum_report/registry.py) read it, so they
// hold no copy of the value lists. The format: docs/DESIGN.md §7.
#include <nlohmann/json.hpp>

namespace shardaccum {

inline constexpr int kRegistrySchema = 1;

nlohmann::json registry_json();

}  // namespace shardaccum
