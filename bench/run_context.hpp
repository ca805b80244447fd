#pragma once
// What a run records about itself: Google Benchmark's JSON context (the suite's keys, then the
// backend's) and the --trace recorder's metadata. docs/DESIGN.md §7 lists the keys.
#include <memory>
#include <string>

#include "bench/backend_select.hpp"
#include "bench/run_setup.hpp"
#include "profiling/trace.hpp"

namespace shardaccum {

/// The commit of the source: SHARDACCUM_GIT_COMMIT from the environment when set (a copy of the
/// tree may carry stale git metadata), else `git rev-parse` in the source tree, else the commit
/// recorded at configure time.
std::string run_git_commit();

/// Adds the suite's keys (run_id, backend, time domain, commit, command, launch, steps, the axes'
/// distinct values, gen, seed, part, matrix_cases) to GB's context.
void add_suite_context(const RunSetup& s, const std::string& run_id);

/// Adds the backend's keys. Host backend: the machine, "bytes_source" and a note on stderr that
/// every time is host wall-clock. Cuda backend: starts the largest world (measuring its ceilings)
/// and adds its context(), keys the suite already set prefixed "backend_". Throws RunFailure
/// "cuda backend: ..." (from "rank N: " under a multi-process launch, which then must not tear the
/// world down: RunError::abandon).
void add_backend_context(const RunSetup& s, BackendPool& pool);

/// The --trace recorder of the run with its metadata (backend, time domain, command, commit,
/// run_id); it records the measured steps only (from --warmup on, --trace-steps of them).
/// nullptr without --trace.
std::unique_ptr<trace::TraceRecorder> make_trace_recorder(const RunSetup& s,
                                                          const std::string& run_id);

}  // namespace shardaccum
