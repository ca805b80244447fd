#include "bench/run_context.hpp"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "bench/exit_codes.hpp"
#include "strategies/registry_json.hpp"

namespace shardaccum {

namespace {

/// Appends `x` unless `v` has it: distinct values in first-seen order.
void note(std::vector<std::string>& v, const std::string& x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

}  // namespace

std::string run_git_commit() {
  // A commit the runner names wins: a copy of the tree on a GPU machine may carry stale git
  // metadata (seen: a device copy whose .git still pointed at an older HEAD).
  if (const char* env = std::getenv("SHARDACCUM_GIT_COMMIT"); env && *env) return env;
  std::string out;
  if (FILE* p =
          popen("git -C " SHARDACCUM_SOURCE_DIR " rev-parse --short=12 HEAD 2>/dev/null", "r")) {
    char buf[64];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (!out.empty()) return out;
  return SHARDACCUM_GIT_COMMIT;  // recorded at configure time
}

void add_suite_context(const RunSetup& s, const std::string& run_id) {
  const BenchOptions& opts = s.opts;
  const bool processes = s.processes();
  benchmark::AddCustomContext("run_id", run_id);
  // Every axis value, preset and canonical schedule, for the Python tools (docs/DESIGN.md §7).
  benchmark::AddCustomContext("registry", registry_json().dump());
  benchmark::AddCustomContext("backend", s.choice.name);
  benchmark::AddCustomContext("backend_choice", s.choice.why);
  benchmark::AddCustomContext("time_domain",
                              s.choice.name == "cuda" ? "gpu events" : "host wall-clock");
  benchmark::AddCustomContext("git_commit", run_git_commit());
  benchmark::AddCustomContext("command", opts.command_line);
  benchmark::AddCustomContext("launcher", processes ? s.launch.launcher + ": one process per GPU"
                                                    : "threads: one process");
  benchmark::AddCustomContext("processes", std::to_string(processes ? s.launch.world_size : 1));
  if (processes) benchmark::AddCustomContext("rendezvous", to_string(s.rendezvous));
  benchmark::AddCustomContext("warmup_steps", std::to_string(opts.warmup));
  benchmark::AddCustomContext("measured_steps", std::to_string(opts.steps));
  benchmark::AddCustomContext("check", opts.check);  // which measured steps the oracle checked
  // Cases of the axes that no configuration of their system runs (leave_out_unrunnable): a JSON
  // list of {case, reason}, so that a report can say why a preset has no cell there.
  if (!s.left_out.empty()) {
    nlohmann::json left = nlohmann::json::array();
    for (const auto& l : s.left_out) left.push_back({{"case", l.name}, {"reason", l.reason}});
    benchmark::AddCustomContext("left_out_cases", left.dump());
  }
  // The distinct values of the axes the report names in its header, in first-seen order.
  std::vector<std::string> models, worlds, ks;
  for (const auto& c : s.cases) {
    note(models, c.layout->name);
    note(worlds, std::to_string(c.world_size));
    note(ks, std::to_string(c.schedule.k()));
  }
  benchmark::AddCustomContext("model", joined(models));
  benchmark::AddCustomContext("world_size", joined(worlds));
  benchmark::AddCustomContext("k", joined(ks));
  benchmark::AddCustomContext("gen", opts.gen);
  benchmark::AddCustomContext("seed", std::to_string(opts.seed));
  // --backward (docs/DESIGN.md §2): tokens 0 and tf32 false with the synthetic backward.
  benchmark::AddCustomContext("backward", opts.backward);
  benchmark::AddCustomContext("tokens", std::to_string(opts.backward == "gemm" ? opts.tokens : 0));
  benchmark::AddCustomContext("tf32", opts.tf32 ? "true" : "false");
  // The pipelined offloads' chunk (docs/DESIGN.md §3); the other values ignore it.
  benchmark::AddCustomContext("chunk_bytes", std::to_string(opts.chunk_bytes));
  benchmark::AddCustomContext("host_threads", host_threads_text(opts.host_threads));
  benchmark::AddCustomContext("param_traffic", opts.param_traffic);  // param_traffic_applies
  benchmark::AddCustomContext("grad_accumulation", opts.grad_accumulation);
  benchmark::AddCustomContext("device_add_grid", opts.device_add_grid);
  benchmark::AddCustomContext("comm_priority", opts.comm_priority);
  // "auto" or the µs as parsed ("0290" and "290" are one setting: scripts/merge.py compares them).
  benchmark::AddCustomContext("hook_host_us", opts.hook_host_us_value
                                                  ? std::to_string(*opts.hook_host_us_value)
                                                  : std::string("auto"));
  benchmark::AddCustomContext("part", opts.part_slice.text());  // scripts/merge.py joins parts 1..N
  benchmark::AddCustomContext("matrix_cases", std::to_string(s.matrix_cases));
}

void add_backend_context(const RunSetup& s, BackendPool& pool) {
  if (s.choice.name == "host") {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    benchmark::AddCustomContext("machine", std::string(host) + " (no GPU; host backend)");
    benchmark::AddCustomContext("bytes_source", "backend accounting");
    // What explains a copy or host-add figure (THP, NUMA) and how collective time was taken.
    int w = 1;  // the world the cases will use: the pool keeps it
    for (const auto& c : s.cases) w = std::max(w, c.world_size);
    const nlohmann::json ctx = pool.get(w).context();
    for (const char* k : {"machine_facts", "nccl_time_method"})
      if (ctx.contains(k))
        benchmark::AddCustomContext(k,
                                    ctx[k].is_string() ? ctx[k].get<std::string>() : ctx[k].dump());
    std::fprintf(
        stderr,
        "shardaccum_bench: backend: host (%s). Every time below is HOST WALL-CLOCK time of the "
        "reference backend, not GPU time.\n",
        s.choice.why.c_str());
    return;
  }
  // The cuda backend measures its ceilings when its world is created: do it now for the
  // largest world so the context can carry them.
  try {
    int w = 0;
    for (const auto& c : s.cases) w = std::max(w, c.world_size);
    const nlohmann::json ctx = pool.get(w).context();
    if (ctx.contains("devices") && ctx["devices"].is_array() && !ctx["devices"].empty()) {
      std::vector<std::string> hosts;
      for (const auto& d : ctx["devices"]) note(hosts, d.value("host", std::string("?")));
      benchmark::AddCustomContext("machine",
                                  std::to_string(ctx["devices"].size()) + "x " +
                                      ctx["devices"][0].value("name", std::string("GPU")) + " (" +
                                      joined(hosts) + ")");
    }
    // Keys the suite already set (time_domain, world_size, ...) keep the suite's value.
    const std::set<std::string> suite_keys = {
        "backend",      "backend_choice", "time_domain", "git_commit", "command",    "k",
        "warmup_steps", "measured_steps", "check",       "model",      "world_size", "machine"};
    for (const auto& [k, v] : ctx.items())
      benchmark::AddCustomContext(suite_keys.contains(k) ? "backend_" + k : k,
                                  v.is_string() ? v.get<std::string>() : v.dump());
  } catch (const std::exception& e) {
    // A peer may be gone: the process ends without a teardown that could wait for it.
    const bool processes = s.processes();
    throw RunFailure(std::string("cuda backend: ") + e.what(),
                     processes ? "rank " + std::to_string(s.launch.rank) + ": " : "", {},
                     processes);
  }
}

std::unique_ptr<trace::TraceRecorder> make_trace_recorder(const RunSetup& s,
                                                          const std::string& run_id) {
  if (s.opts.trace.empty()) return nullptr;
  // The case runner opens a scope per rank thread for every measured step (warm-up steps are
  // numbered below opts.warmup and are not recorded).
  auto recorder = std::make_unique<trace::TraceRecorder>();
  recorder->set_first_recorded_step(static_cast<uint32_t>(s.opts.warmup));
  recorder->set_recorded_step_count(static_cast<uint32_t>(s.opts.trace_steps));
  recorder->set_metadata("backend", s.choice.name);
  recorder->set_metadata("time_domain", s.choice.name == "cuda"
                                            ? "host steady clock (NVTX phases, host work); GPU "
                                              "activity from CUPTI mapped onto it"
                                            : "host wall-clock");
  recorder->set_metadata("events", "measured steps only (no warm-up, no oracle, no ceilings)");
  recorder->set_metadata("time_unit", "ts and dur in microseconds from the start of the run");
  recorder->set_metadata("command", s.opts.command_line);
  recorder->set_metadata("git_commit", run_git_commit());
  recorder->set_metadata("run_id", run_id);
  return recorder;
}

}  // namespace shardaccum
