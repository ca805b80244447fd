#pragma once
// The keys of a result JSON's "context" that Google Benchmark, the suite and its backends write
// (docs/DESIGN.md §7), so that --benchmark_context=KEY=VALUE cannot replace one. GB keeps the first
// value given for a key (benchmark.cc AddCustomContext emplaces, and warns on a second), and its
// user context comes first: a user's "backend=cuda" would make a host run's JSON claim GPU time,
// and a user's "date" would write that key twice, which strict JSON readers refuse.
#include <string>

namespace shardaccum {

/// Whether `key` is one a run writes itself: GB's reporter keys (date, host_name, executable, ...),
/// the suite's (run_id, backend, time_domain, git_commit, the axes' values, ...), the host and cuda
/// backends' (machine, bytes_source, devices, the ceilings, every "ceiling_*"), or a
/// "backend_*" name (a cuda key renamed beside the suite's). Case-sensitive, as JSON keys are.
bool reserved_context_key(const std::string& key);

}  // namespace shardaccum
