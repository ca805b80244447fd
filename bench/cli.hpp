#pragma once
// The command line of shardaccum_bench: one flag per axis (a list or `all`), the backend, the
// step counts. Google Benchmark's own `--benchmark_*` flags pass through untouched.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/case_matrix.hpp"

namespace shardaccum {

struct BenchOptions {
  std::vector<std::string> models;       // empty: the backend's default
  std::vector<std::string> world_sizes;  // empty: the backend's default
  std::vector<std::string> schedules{"all"};
  std::vector<int> ks{4};  // --k: canonical schedule names expand once per K
  bool k_given = false;    // --k was on the command line: a literal must then match one of ks
  // Strategy axes: empty means the default matrix's values (strategies/default_matrix.hpp).
  std::vector<std::string> bindings, offloads, modes, divisions, presets;
  // --lookahead 0|1|unbounded (a list or all); empty: each strategy's default (strategy.hpp).
  std::vector<std::string> lookaheads;
  // --copy-in (a list or all), applied to every strategy; empty: kDefaultCopyIn.
  std::vector<std::string> copy_ins;
  std::vector<std::string> dtypes{"fp32-fp32-fp32"};
  std::string backend = "auto";  // host | cuda | auto
  int warmup = 1, steps = 3;
  bool warmup_given = false,
       steps_given = false;     // on the command line: the default job keeps them
  std::string check = "every";  // --check every|last: the measured steps the oracle checks
  std::string gen = "dyadic";
  std::string backward = "synthetic";  // --backward synthetic|gemm (docs/DESIGN.md §2)
  uint64_t tokens = 1024;              // --tokens T: the GEMMs' token rows (gemm only)
  bool tokens_given = false;           // an explicit --tokens with synthetic is a flag error
  bool trace_steps_given = false;      // --trace-steps without --trace records nothing: a note
  bool tf32 = false;                   // --tf32: fp32 GEMMs may use TF32 tensor cores
  uint64_t chunk_bytes = kDefaultChunkBytes;  // --chunk-bytes: the pipelined offloads' chunk
  uint64_t seed = 0x5a5a;
  int threads = 0;  // host threads per rank for adds; 0: hardware threads / world size
  /// --host-threads: cpu-add-pageable's CPU add threads; 0: the rank's share; kHostThreadsAuto
  /// (auto, the default): the preset's launcher's (default_host_threads, bench/case_matrix.hpp).
  int host_threads = kHostThreadsAuto;
  /// --param-traffic: "off" or "on" (the offloaded strategies' parameter H2D, ParamTraffic).
  std::string param_traffic = "off";
  /// --grad-accumulation: "in-place" or "autograd" (CasePlan::autograd_accumulation).
  std::string grad_accumulation = "in-place";
  /// --device-add-grid: "auto", "torch" or "two-per-sm" (CasePlan::device_add_grid).
  std::string device_add_grid = "auto";
  /// --comm-priority: "auto", "greatest" or "default" (CasePlan::comm_priority).
  std::string comm_priority = "auto";
  /// --hook-host-us: "auto" (each strategy's default_hook_host_us) or µs 0..100000 as given;
  /// hook_host_us_value holds the number (CasePlan::hook_host_us), nullopt under auto.
  std::string hook_host_us = "auto";
  std::optional<uint32_t> hook_host_us_value;
  bool list = false;
  bool describe_registry = false;  // --describe-registry: print the registry JSON and exit
  bool describe_layout = false;    // --describe-layout: print the --model layout's JSON and exit
  std::string cupti = "on";
  std::string trace;              // --trace FILE.json: the built-in trace; empty: none
  int trace_steps = 0;            // --trace-steps N: measured steps traced per case; 0: all
  std::string ceilings = "on";    // --ceilings off: skip the cuda backend's ceilings
  std::string launcher = "auto";  // threads | env | auto (bench/launcher.hpp)
  std::string rendezvous;         // file:PATH | tcp:HOST:PORT; empty: MASTER_ADDR/PORT
  double timeout_s = 300;         // a rank that never arrives or a stuck collective
  std::vector<std::string> config_dirs;
  std::string part;                         // --part I/N as given; empty: the whole matrix
  MatrixPart part_slice;                    // --part parsed (bench/case_matrix.hpp); 1/1 by default
  std::vector<std::string> benchmark_args;  // argv[0] and every --benchmark_* flag
  std::string command_line;                 // the exact command, for the JSON context
};

/// Thrown for bad input: the message names the flag and the fix. Nothing has run yet.
struct CliError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Parses argv. Returns false when --help was printed (exit 0). Throws CliError; with
/// --describe-layout, for any flag other than --model and --config-dir, and for a --model that is
/// absent or not exactly one value.
bool parse_cli(int argc, char** argv, BenchOptions& out);

/// Where `--model` names are looked up: every --config-dir, then the shipped bench/configs.
std::vector<std::string> model_dirs(const BenchOptions& o);

/// Parses --k's values (a comma-separated list, repeats adding up) into K values 1..4096. Throws
/// CliError naming --k for `all` (K has no finite list of values), an empty element or a bad K.
std::vector<int> parse_k_list(const std::vector<std::string>& values);

/// Resolves the axes (loads layouts, parses schedules and dtypes, expands `all`) for a backend
/// whose default model and world size are given (bench/cli_axes.cpp). Canonical schedule names
/// expand once per K of o.ks; a literal keeps its own K and, with --k given, must match one.
/// World sizes above `max_world`: with `gpu_world` (the cuda backend of one process, max_world its
/// GPUs) skipped with a line in MatrixAxes::notes, and `--world-size all` is 1..max_world; without
/// it (the host backend's cap, a multi-process launch) an error naming 1..max_world, and `all` too
/// (too many to run every one). Throws CliError naming the flag, and when every world size given is
/// above max_world.
MatrixAxes resolve_axes(const BenchOptions& o, const std::string& default_model, int default_world,
                        int max_world, bool gpu_world = false);

}  // namespace shardaccum
