#pragma once
// The files a run writes (--benchmark_out, --trace): checked and locked before any work, written
// at the end and verified (bench/result_file.hpp holds the policy; this is the run's use of it).
#include <memory>
#include <string>

#include "bench/cli.hpp"
#include "bench/result_file.hpp"
#include "profiling/trace.hpp"

namespace shardaccum {

struct RunOutputs {
  OutputPlan out;                           // --benchmark_out; out.dest empty: none
  std::unique_ptr<ResultFile> result_file;  // its lock (none for a device or a pipe: out.direct)
  std::unique_ptr<ResultFile> trace_lock;   // --trace's lock (none for a link, device or pipe)
};

/// Before any work: plans --benchmark_out (GB is pointed at /dev/null in opts.benchmark_args),
/// refuses an output naming an input or both naming one file, and locks each output file (removing
/// temporaries of killed runs, each named on stderr). On a rank r other than the reporter,
/// opts.trace becomes FILE.rank<r> (before its extension). Throws CliError (exit 2) for bad input
/// or a file another run holds, RunFailure "--benchmark_out: ..." for any other error.
RunOutputs open_outputs(BenchOptions& opts, bool reporter, int rank);

/// Checks `text` is a complete result of its format, then replaces the old result (atomically
/// under the lock, or in place for a device) and says so on stderr. Throws RunFailure
/// "--benchmark_out: ..." with the old result kept.
void commit_results(const RunOutputs& outputs, const std::string& text);

/// Writes the trace to `path` and says so on stderr (events, where to open it). Throws RunFailure
/// "--trace: ...".
void write_trace(const trace::TraceRecorder& recorder, const std::string& path);

}  // namespace shardaccum
