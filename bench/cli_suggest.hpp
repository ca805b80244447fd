#pragma once
// "did you mean --offload?": the nearest known flag to a mistyped one, by edit distance, over
// shardaccum_bench's own flags and the flags Google Benchmark reads (bench/cli.cpp asks).
#include <string>
#include <string_view>
#include <vector>

namespace shardaccum {

/// The flags Google Benchmark 1.7.1 and 1.8.3 read (benchmark.cc's BM_DEFINE_*), with "--".
const std::vector<std::string>& google_benchmark_flags();

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
/// adjacent characters (the usual typos) each cost 1.
size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate nearest to `flag` (its name before any '='; an axis value is looked up the same
/// way, bench/cli_axes.cpp), or empty when none is within
/// max(2, a third of its length) edits: a guess for a typo, not for an unrelated word. Ties go
/// to the first candidate.
std::string nearest_flag(std::string_view flag, const std::vector<std::string>& candidates);

/// Every candidate at nearest_flag's distance, in their order (empty as nearest_flag): an axis
/// value names them all ("fsdp3": fsdp1 or fsdp2), not the first of a tie.
std::vector<std::string> nearest_all(std::string_view flag,
                                     const std::vector<std::string>& candidates);

/// "unknown flag --ofload; did you mean --offload? (see --help)", or without the question when
/// nearest_flag finds nothing.
std::string unknown_flag_message(std::string_view flag, const std::vector<std::string>& candidates);

}  // namespace shardaccum
