// shardaccum_bench: the benchmark binary. Parses and validates everything before any GPU work,
// registers the case matrix, runs it through Google Benchmark, and writes --benchmark_out through
// bench/result_file.hpp (locked, verified complete, then renamed over the old result).
#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <algorithm>
#include <fstream>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <regex>
#include <cmath>
#include <map>
#include <set>
#include <unistd.h>

#include "bench/bench_cases.hpp"
#include "bench/cli.hpp"
#include "strategies/registry_json.hpp"
#include "bench/launcher.hpp"
#include "bench/memory_fit.hpp"
#include "bench/reporters.hpp"
#include "bench/result_file.hpp"
#include "bench/rendezvous.hpp"
#include "bench/run_id.hpp"
#include "strategies/model.hpp"
#include "profiling/trace.hpp"
#if defined(SHARDACCUM_HAVE_CUDA)
#include "strategies/backend/cuda_backend.hpp"
#endif

using namespace shardaccum;

namespace {

std::string run_git_commit() {
  // A commit the runner names wins: a copy of the tree on a GPU machine may carry stale git
  // metadata (seen: a device copy whose .git still pointed at an older HEAD).
  if (const char* env = std::getenv("SHARDACCUM_GIT_COMMIT"); env && *env) return env;
  std::string out;
  if (FILE* p = popen("git -C " SHARDACCUM_SOURCE_DIR " rev-parse --short=12 HEAD 2>/dev/null", "r")) {
    char buf[64];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (!out.empty()) return out;
  return SHARDACCUM_GIT_COMMIT;  // recorded at configure time
}

std::string flag_value(const std::vector<std::string>& args, const std::string& flag) {
  for (const auto& a : args)
    if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
  return {};
}

/// The ranks of a multi-process launch must run the same binary on the same cases and steps: a
/// hash (FNV-1a, 64 bits) of the executable's bytes, the names of the cases that will run, and the
/// settings that change what a step does. Compared through the rendezvous.
[[maybe_unused]] std::string build_hash(const std::vector<std::string>& run_names, const BenchOptions& o,
                       const std::string& reps, const std::map<std::string, std::string>& skips) {
  uint64_t h = 1469598103934665603ull;
  const auto mix = [&](const char* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<uint8_t>(p[i])) * 1099511628211ull;
  };
  std::ifstream exe("/proc/self/exe", std::ios::binary);
  std::vector<char> buf(1 << 20);
  while (exe.read(buf.data(), buf.size()) || exe.gcount() > 0) mix(buf.data(), static_cast<size_t>(exe.gcount()));
  std::string settings = "warmup=" + std::to_string(o.warmup) + " steps=" + std::to_string(o.steps) + " check=" + o.check +
                         " reps=" + reps + " seed=" + std::to_string(o.seed) + " gen=" + o.gen +
                         " cupti=" + o.cupti + " ceilings=" + o.ceilings + " trace_steps=" +
                         std::to_string(o.trace_steps) + "\n";
  for (const auto& n : run_names) settings += n + "\n";
  // Cases this process skips as not fitting its host: a process of another host that would run them
  // must not wait for it in their collectives.
  for (const auto& [n, why] : skips) settings += "skip " + n + "\n";
  mix(settings.data(), settings.size());
  char out[64];
  std::snprintf(out, sizeof out, "%016llx/%zu-cases/%zu-skipped", static_cast<unsigned long long>(h),
                run_names.size(), skips.size());
  return out;
}

/// Google Benchmark's output on ranks other than 0 of a multi-process launch: rank 0 reports.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

/// Checks before any work that every case can be judged and fits. Throws CliError naming the flag.
void validate_cases(const std::vector<CaseSpec>& cases) {
  if (cases.empty()) throw CliError("no case to run: an axis flag is empty");
  std::set<std::string> names;
  std::map<std::string, const Layout*> layouts;
  for (const auto& c : cases) {
    const auto [it, fresh] = layouts.emplace(c.layout->name, c.layout.get());
    if (!fresh && it->second != c.layout.get())
      throw CliError("--model: two layouts are both named '" + c.layout->name +
                     "' (same file stem); rename one so their cases can be told apart");
    if (!names.insert(c.name()).second)
      throw CliError("case " + c.name() + " is listed twice: remove the repeated value from its axis flag");
    const int k = c.schedule.k();
    if (!oracle_resolves(c.dtypes, c.gen, k, c.world_size))
      throw CliError("--dtype " + c.dtypes.name() + " with --gen " + (c.gen == GenMode::dyadic ? "dyadic" : "random") +
                     ", K=" + std::to_string(k) + ", world size " + std::to_string(c.world_size) +
                     ": the oracle's error bound (" + std::to_string(error_bound(c.dtypes, c.gen, k, c.world_size)) +
                     ") is too loose to tell a lost micro-batch (error about " + std::to_string(std::sqrt(1.0 / k)) +
                     ", or 1/K on a unit of a few elements) from rounding; use --dtype fp32-fp32-fp32, --gen dyadic, or a smaller K x world size");
  }
}

/// The cases that cannot fit this machine by the model (name -> message), decided before any
/// backend exists, so that no arena is pinned for them: host memory, and the devices' free memory
/// with only their primary contexts (one process of every rank; a multi-process launch checks its
/// devices per case, agreed across processes).
/// Each case's device side is checked again once its world has started (bench_cases.cpp).
std::map<std::string, std::string> up_front_fit_skips(const std::vector<CaseSpec>& cases, const BackendChoice& choice,
                                                  bool processes, MemoryBudget& budget) {
  budget.host_available_bytes = host_memory_available();
  budget.host_margin_bytes = host_memory_margin(budget.host_available_bytes);
  budget.host_backend = choice.name == "host";
  budget.host_task_depth = choice.name == "cuda" ? kCudaHostTaskDepth : 0;
  budget.device_margin_bytes = kDeviceMemoryMargin;
#if defined(SHARDACCUM_HAVE_CUDA)
  // The devices' free memory before any world starts (primary contexts only): NCCL and the pool
  // take more later, which each case's own check then sees (bench_cases.cpp).
  // Under a multi-process launch only the per-case check (bench_cases.cpp) reads the devices: its
  // figure is gathered from every process, so all of them skip alike.
  if (choice.name == "cuda" && !processes) {
    int w = 1;
    for (const auto& c : cases) w = std::max(w, c.world_size);
    const int gpus = cuda_device_count();
    uint64_t least = UINT64_MAX;
    for (int d = 0; d < std::min(w, gpus); ++d)
      least = std::min(least, cuda_device_free_bytes(d));
    budget.device_free_bytes = least == UINT64_MAX ? 0 : least;
  }
#endif
  std::map<std::string, std::string> skips;
  for (const auto& c : cases) {
    MemoryBudget b = budget;
    b.ranks_per_process = processes ? 1 : c.world_size;
    if (auto why = fit_problem(c, b)) {
      std::fprintf(stderr, "shardaccum_bench: %s %s\n", c.name().c_str(), why->c_str());
      skips.emplace(c.name(), *why);
    }
  }
  return skips;
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions opts;
  std::vector<CaseSpec> cases;
  size_t matrix_cases = 0;  // the whole matrix, before --part keeps one slice
  BackendChoice choice;
  LaunchInfo launch;
  RendezvousSpec rendezvous;
  try {
    if (!parse_cli(argc, argv, opts)) return 0;
    if (opts.describe_registry) {  // before any backend work: a tool asks what this binary registers
      std::cout << registry_json().dump(2) << std::endl;
      return std::cout ? 0 : 1;
    }
    choice = choose_backend(opts.backend);
    launch = resolve_launcher(opts.launcher);
    if (launch.launcher != "threads") {
      if (choice.name != "cuda")
        throw CliError("--launcher " + opts.launcher + ": " + launch.launcher + " started " +
                       std::to_string(launch.world_size) + (launch.world_size == 1 ? " process" : " processes") +
                       ", but one process per GPU needs the cuda backend (backend here: " + choice.name + ", " +
                       (choice.why == "requested" ? "--backend " + opts.backend : choice.why) +
                       "); for the host backend's simulated ranks run one process with --launcher threads");
      choice.max_world = choice.default_world = launch.world_size;
      rendezvous = parse_rendezvous(opts.rendezvous, launch);
    } else if (!opts.rendezvous.empty()) {
      parse_rendezvous(opts.rendezvous, launch);  // a malformed spec is an error even where unused
      std::fprintf(stderr, "shardaccum_bench: note: --rendezvous is used only by a multi-process launch "
                           "(--launcher env); this run is one process\n");
    }
    const MatrixAxes axes = resolve_axes(opts, choice.default_model, choice.default_world, choice.max_world);
    if (launch.launcher != "threads")
      for (int w : axes.world_sizes)
        if (w != launch.world_size)
          throw CliError("--world-size " + std::to_string(w) + ": this " + launch.launcher + " launch has " +
                         std::to_string(launch.world_size) + " processes, one rank each; leave --world-size "
                         "out or give " + std::to_string(launch.world_size));
    cases = build_matrix(axes);
    validate_cases(cases);
    matrix_cases = cases.size();
    cases = select_part(cases, opts.part_slice);  // the whole matrix was validated: any part finds bad input
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardaccum_bench: %serror: %s\n",
                 launch.rank ? ("rank " + std::to_string(launch.rank) + ": ").c_str() : "", e.what());
    return 2;
  }
  const bool processes = launch.launcher != "threads";
  const bool reporter = launch.rank == 0;  // the process that prints and writes the results
  set_progress_rank(launch.rank);

  if (opts.list) {
    if (!reporter) return 0;
    for (const auto& c : cases) std::printf("%s\n", c.name().c_str());
    std::fprintf(stderr, "%zu cases on backend %s", cases.size(), choice.name.c_str());
    if (opts.part_slice.count > 1) std::fprintf(stderr, " (part %s of %zu cases)", opts.part_slice.text().c_str(), matrix_cases);
    std::fprintf(stderr, "\n");
    return 0;
  }

  // --benchmark_out: validated, and locked against a second run writing the same file, before
  // any work; Google Benchmark gets /dev/null, the suite writes the file (bench/result_file.hpp).
  OutputPlan out;
  std::unique_ptr<ResultFile> result_file, trace_lock;
  try {
    out = plan_benchmark_out(opts.benchmark_args, reporter);
    const std::vector<std::string> inputs = model_input_files(opts);
    if (!out.dest.empty()) refuse_overwriting_inputs("--benchmark_out=" + out.dest, out.dest, inputs);
    if (!opts.trace.empty()) refuse_overwriting_inputs("--trace " + opts.trace, opts.trace, inputs);
    if (!out.dest.empty() && !opts.trace.empty()) {
      std::error_code ec;
      const auto a = std::filesystem::weakly_canonical(out.dest, ec), b = std::filesystem::weakly_canonical(opts.trace, ec);
      if (!ec && a == b)
        throw CliError("--trace and --benchmark_out name the same file (" + out.dest + "); give two names");
    }
    if (!out.dest.empty() && !out.direct) {
      install_result_cleanup();
      result_file = std::make_unique<ResultFile>(out.dest);
      for (const auto& f : result_file->removed_stale())
        std::fprintf(stderr, "shardaccum_bench: removed %s, left by a run that was killed\n", f.c_str());
    }
    // --trace takes the same lock on the file this process writes (rank r of a launch: FILE.rank<r>),
    // so a second run tracing into it is refused and a killed run's temporary is cleaned; a link, a
    // device or a pipe is written in place by the trace writer, unlocked.
    if (!opts.trace.empty()) {
      if (!reporter) {
        const std::filesystem::path p(opts.trace);
        opts.trace = (p.parent_path() / (p.stem().string() + ".rank" + std::to_string(launch.rank) +
                                         p.extension().string())).string();
      }
      std::error_code ec;
      const auto st = std::filesystem::symlink_status(opts.trace, ec);
      if (!std::filesystem::exists(st) || std::filesystem::is_regular_file(st)) {
        install_result_cleanup();
        trace_lock = std::make_unique<ResultFile>(opts.trace, "--trace ");
        for (const auto& f : trace_lock->removed_stale())
          std::fprintf(stderr, "shardaccum_bench: removed %s, left by a run that was killed\n", f.c_str());
      }
    }
  } catch (const CliError& e) {
    std::fprintf(stderr, "shardaccum_bench: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardaccum_bench: error: --benchmark_out: %s\n", e.what());
    return 1;
  }

  std::vector<char*> bargv;
  for (auto& a : opts.benchmark_args) bargv.push_back(a.data());
  int bargc = static_cast<int>(bargv.size());
  benchmark::Initialize(&bargc, bargv.data());
  if (benchmark::ReportUnrecognizedArguments(bargc, bargv.data())) return 2;

  // Count what will really run, for the progress line (filter and repetitions applied).
  std::vector<std::string> run_names;
  try {
    std::string filter = flag_value(opts.benchmark_args, "--benchmark_filter");
    const bool negate = !filter.empty() && filter[0] == '-';
    if (negate) filter.erase(0, 1);
    const std::regex re(filter.empty() || filter == "all" ? "." : filter);
    for (const auto& c : cases)
      if (std::regex_search(c.name(), re) != negate) run_names.push_back(c.name());
  } catch (const std::regex_error&) {
    for (const auto& c : cases) run_names.push_back(c.name());
  }
  size_t to_run = run_names.size();
  const std::string reps = flag_value(opts.benchmark_args, "--benchmark_repetitions");
  if (!reps.empty()) to_run *= std::max(1, std::atoi(reps.c_str()));

  MemoryBudget budget;
  std::map<std::string, std::string> skips = up_front_fit_skips(cases, choice, processes, budget);
  // Pin, once and up front, what the most demanding case that fits needs (the model's peak, with
  // the cuda backend's pending CPU adds), rather than growing the arena inside a measured step.
  uint64_t pinned_hint = 0;
  for (const auto& c : cases)
    if (!skips.count(c.name()))
      pinned_hint = std::max(pinned_hint, predict(c.plan(), c.world_size, budget.host_task_depth).peak_pinned_bytes);
  BackendPool pool(choice, opts.threads, opts.cupti, opts.ceilings == "on", pinned_hint);
  pool.set_timeout(opts.timeout_s);
  if (processes) {
    // Every rank checks, before any GPU work, that all run this build on these cases, and gets
    // NCCL's unique id from rank 0 (bench/rendezvous.hpp); nothing else is exchanged here.
#if defined(SHARDACCUM_HAVE_CUDA)
    try {
      std::vector<uint8_t> id;
      if (launch.rank == 0) id = nccl_unique_id();
      id = exchange(rendezvous, launch, id, build_hash(run_names, opts, reps, skips), opts.timeout_s);
      const int gpus = cuda_device_count();
      pool.set_process(launch.rank, gpus > 0 ? launch.local_rank % gpus : 0, std::move(id));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "shardaccum_bench: rank %d: error: %s\n", launch.rank, e.what());
      if (launch.launcher == "slurm" && std::string(e.what()).find("missing ranks") != std::string::npos)
        std::fprintf(stderr, "shardaccum_bench: hint: a batch script's own SLURM_* variables look like a launch "
                             "of SLURM_NTASKS processes; start the ranks with srun, or run one process with "
                             "--launcher threads\n");
      return 1;
    }
#endif
  }
  // One id per process; the reporting rank's is the JSON's and its trace's (report.py checks them).
  const std::string run_id = make_run_id();
  benchmark::AddCustomContext("run_id", run_id);
  // Every axis value, preset and canonical schedule, for the Python tools (docs/DESIGN.md §7).
  benchmark::AddCustomContext("registry", registry_json().dump());
  benchmark::AddCustomContext("backend", choice.name);
  benchmark::AddCustomContext("backend_choice", choice.why);
  benchmark::AddCustomContext("time_domain", choice.name == "cuda" ? "gpu events" : "host wall-clock");
  benchmark::AddCustomContext("git_commit", run_git_commit());
  benchmark::AddCustomContext("command", opts.command_line);
  benchmark::AddCustomContext("launcher", processes ? launch.launcher + ": one process per GPU" : "threads: one process");
  benchmark::AddCustomContext("processes", std::to_string(processes ? launch.world_size : 1));
  if (processes) benchmark::AddCustomContext("rendezvous", to_string(rendezvous));
  benchmark::AddCustomContext("warmup_steps", std::to_string(opts.warmup));
  benchmark::AddCustomContext("measured_steps", std::to_string(opts.steps));
  benchmark::AddCustomContext("check", opts.check);  // which measured steps the oracle checked
  // The distinct values of the axes the report names in its header, in first-seen order.
  std::vector<std::string> models, worlds, ks;
  const auto note = [](std::vector<std::string>& v, const std::string& x) {
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
  };
  for (const auto& c : cases) {
    note(models, c.layout->name);
    note(worlds, std::to_string(c.world_size));
    note(ks, std::to_string(c.schedule.k()));
  }
  const auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
    return s;
  };
  benchmark::AddCustomContext("model", joined(models));
  benchmark::AddCustomContext("world_size", joined(worlds));
  benchmark::AddCustomContext("k", joined(ks));
  benchmark::AddCustomContext("gen", opts.gen);
  benchmark::AddCustomContext("seed", std::to_string(opts.seed));
  benchmark::AddCustomContext("part", opts.part_slice.text());  // scripts/merge.py joins parts 1..N
  benchmark::AddCustomContext("matrix_cases", std::to_string(matrix_cases));
  if (choice.name == "host") {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    benchmark::AddCustomContext("machine", std::string(host) + " (no GPU; host backend)");
    benchmark::AddCustomContext("bytes_source", "backend accounting");
    std::fprintf(stderr,
                 "shardaccum_bench: backend: host (%s). Every time below is HOST WALL-CLOCK time of the "
                 "reference backend, not GPU time.\n", choice.why.c_str());
  } else {
    // The cuda backend measures its ceilings when its world is created: do it now for the
    // largest world so the context can carry them.
    try {
      int w = 0;
      for (const auto& c : cases) w = std::max(w, c.world_size);
      const nlohmann::json ctx = pool.get(w).context();
      if (ctx.contains("devices") && ctx["devices"].is_array() && !ctx["devices"].empty()) {
        std::vector<std::string> hosts;
        for (const auto& d : ctx["devices"]) note(hosts, d.value("host", std::string("?")));
        benchmark::AddCustomContext("machine", std::to_string(ctx["devices"].size()) + "x " +
                                                   ctx["devices"][0].value("name", std::string("GPU")) +
                                                   " (" + joined(hosts) + ")");
      }
      // Keys the suite already set (time_domain, world_size, ...) keep the suite's value.
      static const std::set<std::string> suite_keys = {"backend", "backend_choice", "time_domain", "git_commit",
                                                       "command", "k", "warmup_steps", "measured_steps", "check",
                                                       "model", "world_size", "machine"};
      for (const auto& [k, v] : ctx.items())
        benchmark::AddCustomContext(suite_keys.count(k) ? "backend_" + k : k,
                                    v.is_string() ? v.get<std::string>() : v.dump());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "shardaccum_bench: %serror: cuda backend: %s\n",
                   processes ? ("rank " + std::to_string(launch.rank) + ": ").c_str() : "", e.what());
      if (processes) {  // a peer may be gone: no teardown that could wait for it
        std::fflush(nullptr);
        std::_Exit(1);
      }
      return 1;
    }
  }

  // --trace: one recorder for the whole run; the case runner opens a scope per rank thread for
  // every measured step (warm-up steps are numbered below opts.warmup and are not recorded).
  std::unique_ptr<trace::TraceRecorder> recorder;
  if (!opts.trace.empty()) {
    recorder = std::make_unique<trace::TraceRecorder>();
    recorder->set_first_recorded_step(static_cast<uint32_t>(opts.warmup));
    recorder->set_recorded_step_count(static_cast<uint32_t>(opts.trace_steps));
    recorder->set_metadata("backend", choice.name);
    recorder->set_metadata("time_domain",
                           choice.name == "cuda" ? "host steady clock (NVTX phases, host work); GPU "
                                                   "activity from CUPTI mapped onto it"
                                                 : "host wall-clock");
    recorder->set_metadata("events", "measured steps only (no warm-up, no oracle, no ceilings)");
    recorder->set_metadata("time_unit", "ts and dur in microseconds from the start of the run");
    recorder->set_metadata("command", opts.command_line);
    recorder->set_metadata("git_commit", run_git_commit());
    recorder->set_metadata("run_id", run_id);
    trace::install_process_recorder(recorder.get());
  }

  SuiteSettings settings;
  settings.warmup = opts.warmup;
  settings.steps = opts.steps;
  settings.pool = &pool;
  settings.check = parse_check_mode(opts.check);
  settings.skip = std::move(skips);
  settings.budget = budget;
  register_cases(cases, settings);
  set_progress_total(to_run);
  std::unique_ptr<FiniteReporter> file_reporter;
  if (reporter) {
    // Both reporters print NaN (a constant counter's _cv) as null / an empty field / '-'.
    FiniteReporter display(benchmark::CreateDefaultDisplayReporter(), display_format(opts.benchmark_args));
    if (out.dest.empty()) {
      benchmark::RunSpecifiedBenchmarks(&display);
    } else {
      file_reporter = std::make_unique<FiniteReporter>(out.format, out.tabular);
      benchmark::RunSpecifiedBenchmarks(&display, file_reporter.get());
    }
  } else {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  // A multi-process launch that lost a peer ends without tearing NCCL down (it could hang there):
  // results first, then std::_Exit.
  const auto end = [&](int rc) {
    if (pool.abandoned()) {
      std::fflush(nullptr);
      std::_Exit(rc);
    }
    return rc;
  };

  // Nothing ran (a filter that matches nothing, --benchmark_list_tests): keep any older result.
  const RunTally tally = run_tally();
  if (tally.done == 0) {
    const bool listing = flag_value(opts.benchmark_args, "--benchmark_list_tests") == "true" ||
                         std::find(opts.benchmark_args.begin(), opts.benchmark_args.end(),
                                   "--benchmark_list_tests") != opts.benchmark_args.end();
    if (listing) return end(0);
    std::fprintf(stderr, "shardaccum_bench: error: no case ran (does --benchmark_filter match any name? see "
                         "--list); %s\n", out.dest.empty() ? "nothing written" : ("left " + out.dest + " as it was").c_str());
    return end(2);
  }
  if (file_reporter) {
    // Google Benchmark's ofstream reports no failed write (a full disk): the suite writes, reads
    // back and compares, and only then replaces the previous result.
    try {
      verify_result_text(out.format, file_reporter->text());
      if (result_file) result_file->commit(file_reporter->text());
      else write_direct(out.dest, file_reporter->text());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "shardaccum_bench: error: --benchmark_out: %s\n", e.what());
      return end(1);
    }
    std::fprintf(stderr, "shardaccum_bench: wrote %s\n", out.dest.c_str());
  }
  if (recorder) {
    trace::install_process_recorder(nullptr);
    // Under a multi-process launch each process traces its own rank: rank 0 writes FILE, rank r
    // writes FILE with ".rank<r>" before its extension (named when the lock was taken, above).
    try {
      recorder->write_chrome_trace(opts.trace);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "shardaccum_bench: error: --trace: %s\n", e.what());
      return end(1);
    }
    std::fprintf(stderr, "shardaccum_bench: wrote trace %s (%zu events; open in ui.perfetto.dev)\n",
                 opts.trace.c_str(), recorder->size());
  }
  if (tally.failed == tally.done) {
    std::fprintf(stderr, "shardaccum_bench: error: every case ended with an error (see above)\n");
    return end(1);
  }
  return end(0);
}
