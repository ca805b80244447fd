#include "bench/run_outputs.hpp"

#include <cstdio>
#include <filesystem>
#include <vector>

#include "bench/exit_codes.hpp"

namespace shardaccum {

namespace {

void take_lock(std::unique_ptr<ResultFile>& lock, const std::string& path, const char* flag) {
  install_result_cleanup();
  lock = std::make_unique<ResultFile>(path, flag);
  for (const auto& f : lock->removed_stale())
    std::fprintf(stderr, "shardaccum_bench: removed %s, left by a run that was killed\n",
                 f.c_str());
}

RunOutputs open_outputs_or_throw(BenchOptions& opts, bool reporter, int rank) {
  RunOutputs o;
  o.out = plan_benchmark_out(opts.benchmark_args, reporter);
  const OutputPlan& out = o.out;
  const std::vector<std::string> inputs = model_input_files(opts);
  if (!out.dest.empty()) refuse_overwriting_inputs("--benchmark_out=" + out.dest, out.dest, inputs);
  if (!opts.trace.empty()) refuse_overwriting_inputs("--trace " + opts.trace, opts.trace, inputs);
  // Nor the running executable (a path typed one folder off, or a tab completion too far).
  for (const auto& [flag, path] :
       {std::pair{"--benchmark_out=", out.dest}, std::pair{"--trace ", opts.trace}}) {
    std::error_code ec;
    if (!path.empty() && std::filesystem::equivalent(path, "/proc/self/exe", ec) && !ec)
      throw CliError(std::string(flag) + path +
                     " is this shardaccum_bench executable: writing there would destroy it; give "
                     "the output another name");
  }
  if (!out.dest.empty() && !opts.trace.empty() && same_output_file(out.dest, opts.trace)) {
    throw CliError("--trace and --benchmark_out name the same file (" + out.dest +
                   "); give two names");
  }
  if (!out.dest.empty() && !out.direct) take_lock(o.result_file, out.dest, "--benchmark_out=");
  // --trace takes the same lock on the file this process writes (rank r of a launch: FILE.rank<r>),
  // so a second run tracing into it is refused and a killed run's temporary is cleaned; a link, a
  // device or a pipe is written in place by the trace writer, unlocked.
  if (!opts.trace.empty()) {
    if (!reporter) {
      const std::filesystem::path p(opts.trace);
      opts.trace = (p.parent_path() /
                    (p.stem().string() + ".rank" + std::to_string(rank) + p.extension().string()))
                       .string();
    }
    std::error_code ec;
    const auto st = std::filesystem::symlink_status(opts.trace, ec);
    if (!std::filesystem::exists(st) || std::filesystem::is_regular_file(st))
      take_lock(o.trace_lock, opts.trace, "--trace ");
  }
  return o;
}

}  // namespace

RunOutputs open_outputs(BenchOptions& opts, bool reporter, int rank) {
  try {
    return open_outputs_or_throw(opts, reporter, rank);
  } catch (const CliError&) {
    throw;
  } catch (const std::exception& e) {
    throw RunFailure(std::string("--benchmark_out: ") + e.what());
  }
}

void commit_results(const RunOutputs& outputs, const std::string& text) {
  // Google Benchmark's ofstream reports no failed write (a full disk): the suite writes, reads
  // back and compares, and only then replaces the previous result.
  try {
    verify_result_text(outputs.out.format, text);
    if (outputs.result_file)
      outputs.result_file->commit(text);
    else
      write_direct(outputs.out.dest, text);
  } catch (const std::exception& e) {
    throw RunFailure(std::string("--benchmark_out: ") + e.what());
  }
  std::fprintf(stderr, "shardaccum_bench: wrote %s\n", outputs.out.dest.c_str());
}

void write_trace(const trace::TraceRecorder& recorder, const std::string& path) {
  // Under a multi-process launch each process traces its own rank: rank 0 writes FILE, rank r
  // writes FILE with ".rank<r>" before its extension (named when the lock was taken).
  try {
    recorder.write_chrome_trace(path);
  } catch (const std::exception& e) {
    throw RunFailure(std::string("--trace: ") + e.what());
  }
  std::fprintf(stderr, "shardaccum_bench: wrote trace %s (%zu events; open in ui.perfetto.dev)\n",
               path.c_str(), recorder.size());
}

}  // namespace shardaccum
