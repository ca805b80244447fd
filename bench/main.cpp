// shardaccum_bench: the benchmark binary. Parses and validates everything before any GPU work,
// registers the case matrix, runs it through Google Benchmark, and writes --benchmark_out through
// bench/result_file.hpp (locked, verified complete, then renamed over the old result). Every error
// that ends the run is an exception mapped to its exit status in one place (bench/exit_codes.hpp).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_cases.hpp"
#include "bench/benchmark_args.hpp"
#include "bench/cli_values.hpp"
#include "bench/compact_reporter.hpp"
#include "bench/exit_codes.hpp"
#include "bench/multiprocess_setup.hpp"
#include "bench/reporters.hpp"
#include "bench/run_context.hpp"
#include "bench/run_id.hpp"
#include "bench/run_outputs.hpp"
#include "bench/run_setup.hpp"

using namespace shardaccum;

namespace {

/// What outlives the run's own frame: main's error handler still holds them, so a run that lost
/// a peer can end with std::_Exit before anything is torn down (destroyed in reverse order).
struct RunResources {
  RunOutputs outputs;
  std::unique_ptr<BackendPool> pool;
  std::unique_ptr<trace::TraceRecorder> recorder;
};

/// --list: the names of the cases that would run (rank 0), after --benchmark_filter as Google
/// Benchmark applies it, on stdout; their count on stderr.
/// The names of the cases --benchmark_filter keeps; an invalid regular expression is bad input
/// (UsageError), refused before any work, as Google Benchmark would run nothing.
std::vector<std::string> case_names_to_run(const RunSetup& s) {
  try {
    return filtered_case_names(s.cases, s.opts.benchmark_args, registered_suffix(s.opts.steps),
                               /*strict=*/true);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

int list_cases(const RunSetup& s) {
  if (!s.reporter()) return kExitOk;
  const std::vector<std::string> names = case_names_to_run(s);
  for (const auto& n : names) std::printf("%s\n", n.c_str());
  if (std::fflush(stdout) != 0 || std::ferror(stdout))
    throw RunFailure("--list: cannot write the case names to stdout");
  std::fprintf(stderr, "%s on backend %s", count_of(names.size(), "case").c_str(),
               s.choice.name.c_str());
  if (names.size() != s.cases.size())
    std::fprintf(stderr, " (--benchmark_filter keeps %zu of %s)", names.size(),
                 count_of(s.cases.size(), "case").c_str());
  if (s.opts.part_slice.count > 1)
    std::fprintf(stderr, " (part %s of %s)", s.opts.part_slice.text().c_str(),
                 count_of(s.matrix_cases, "case").c_str());
  std::fprintf(stderr, "\n");
  return kExitOk;
}

/// Runs the registered cases; returns the file reporter's text (empty without --benchmark_out).
std::string run_benchmarks(const RunSetup& s, const RunOutputs& o) {
  if (!s.reporter()) {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
    return {};
  }
  // The console: one compact line per case (bench/compact_reporter.hpp); GB's own display for
  // --benchmark_format=json|csv or the counter table. Both print NaN as null / empty / '-'.
  const ReportFormat format = display_format(s.opts.benchmark_args);
  std::unique_ptr<benchmark::BenchmarkReporter> display;
  if (format == ReportFormat::console && !o.out.tabular)
    display = std::make_unique<CompactReporter>(
        s.cases, s.choice.name == "cuda" ? "GPU events" : "host wall-clock");
  else
    display = std::make_unique<FiniteReporter>(benchmark::CreateDefaultDisplayReporter(), format);
  if (o.out.dest.empty()) {
    benchmark::RunSpecifiedBenchmarks(display.get());
    return {};
  }
  // The file keeps every counter, through GB's own reporter of its format.
  FiniteReporter file(o.out.format, o.out.tabular);
  benchmark::RunSpecifiedBenchmarks(display.get(), &file);
  return file.text();
}

int run(int argc, char** argv, RunResources& res) {
  std::optional<RunSetup> setup = resolve_run(argc, argv);
  if (!setup) return kExitOk;  // --help
  RunSetup& s = *setup;
  Progress progress(s.launch.rank);
  if (s.opts.list) {
    print_notices(s);
    return list_cases(s);
  }

  // --benchmark_out and --trace: validated, and locked against a second run writing the same
  // file, before any work; Google Benchmark gets /dev/null, the suite writes the file.
  res.outputs = open_outputs(s.opts, s.reporter(), s.launch.rank);
  print_notices(s);
  std::vector<char*> bargv;
  for (auto& a : s.opts.benchmark_args) bargv.push_back(a.data());
  int bargc = static_cast<int>(bargv.size());
  benchmark::Initialize(&bargc, bargv.data());
  if (benchmark::ReportUnrecognizedArguments(bargc, bargv.data()))
    return kExitUsage;  // GB said why

  // Count what will really run, for the progress line (filter and repetitions applied).
  const std::vector<std::string> run_names = case_names_to_run(s);
  const MemoryBudget budget = run_budget(s.cases, s.choice, s.processes());
  const CasePredictions models = predict_cases(s.cases, budget.host_task_depth);
  std::map<std::string, std::string> skips =
      up_front_fit_skips(s.cases, models, budget, s.processes());
  // Pin, once and up front, what the most demanding case that fits needs (the model's peak, with
  // the cuda backend's pending CPU adds), rather than growing the arena inside a measured step.
  uint64_t pinned_hint = 0;
  for (const auto& c : s.cases)
    if (!skips.contains(c.name()))
      pinned_hint = std::max(pinned_hint, models.at(c.name()).peak_pinned_bytes);
  res.pool = std::make_unique<BackendPool>(s.choice, s.opts.threads, s.opts.cupti,
                                           s.opts.ceilings == "on", pinned_hint);
  BackendPool& pool = *res.pool;
  pool.set_timeout(s.opts.timeout_s);
  pool.set_gemm_ceilings(gemm_grad_dtypes(s.cases), s.opts.tf32, gemm_ceiling_cases(s.cases));
  pool.set_generate_ceilings(generate_ceiling_cases(s.cases));
  if (s.processes())
    join_processes(pool, s.rendezvous, s.launch,
                   build_hash(run_names, s.opts,
                              flag_value(s.opts.benchmark_args, "--benchmark_repetitions"), skips),
                   s.opts.timeout_s);
  // One id per process; the reporting rank's is the JSON's and its trace's (report.py checks them).
  const std::string run_id = make_run_id();
  add_suite_context(s, run_id);
  add_backend_context(s, pool);
  res.recorder = make_trace_recorder(s, run_id);

  SuiteSettings settings;
  settings.warmup = s.opts.warmup;
  settings.steps = s.opts.steps;
  settings.pool = &pool;
  settings.check = parse_check_mode(s.opts.check);
  settings.skip = std::move(skips);
  settings.budget = budget;
  settings.models = models;
  settings.recorder = res.recorder.get();
  register_cases(s.cases, settings, progress);
  progress.set_total(run_names.size(), case_runs(1, s.opts.benchmark_args));
  const std::string results = run_benchmarks(s, res.outputs);
  benchmark::Shutdown();

  // Nothing ran (a filter that matches nothing, --benchmark_list_tests): keep any older result.
  const RunTally tally = progress.tally();
  if (tally.done == 0) {
    if (lists_tests(s.opts.benchmark_args)) return kExitOk;
    const std::string& dest = res.outputs.out.dest;
    std::error_code ec;
    throw UsageError("no case ran (does --benchmark_filter match any name? see --list); " +
                     (dest.empty() || !std::filesystem::exists(dest, ec)
                          ? std::string("nothing written")
                          : "left " + dest + " as it was"));
  }
  if (!res.outputs.out.dest.empty() && s.reporter()) commit_results(res.outputs, results);
  if (res.recorder) write_trace(*res.recorder, s.opts.trace);
  if (tally.failed == tally.done) throw RunFailure("every case ended with an error (see above)");
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  RunResources res;  // outlives the handler below
  int rc = kExitOk;
  bool abandon = false;
  try {
    rc = run(argc, argv, res);
  } catch (const std::exception& e) {
    rc = report_error(e);
    abandon = abandons(e);
  }
  // A multi-process launch that lost a peer ends without tearing NCCL down (it could hang there):
  // results first, then std::_Exit.
  if (abandon || (res.pool && res.pool->abandoned())) {
    std::fflush(nullptr);
    std::_Exit(rc);
  }
  return rc;
}
