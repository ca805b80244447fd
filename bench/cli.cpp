#include "bench/cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>
#include <unistd.h>

#include "bench/benchmark_args.hpp"
#include "bench/cli_suggest.hpp"
#include "bench/cli_values.hpp"
#include "bench/model_layouts.hpp"
#include "common/gemm_shape.hpp"
#include "strategies/default_matrix.hpp"
#include "strategies/preset/preset.hpp"

namespace shardaccum {
namespace {

/// The registered values of an axis, one per line with what it follows (the help's axis section).
template <class Interface>
std::string axis_help(const std::vector<std::string>& defaults) {
  std::string out = "  " + std::string(Interface::kAxis) + ":\n";
  for (const auto& e : AxisRegistry<Interface>::get().entries()) {
    const bool in_default =
        std::find(defaults.begin(), defaults.end(), e.info.name) != defaults.end();
    out += "    " + e.info.name + (in_default ? "" : " (not in the default matrix)") + ": " +
           e.info.description + " [" + e.info.follows + "]\n";
  }
  return out;
}

std::string description() {
  const DefaultMatrix& d = default_matrix();
  std::string presets;
  for (const PresetInfo& p : PresetRegistry::get().entries())
    presets += "    " + p.name + " = " + p.spec.binding + "/" + p.spec.offload + "/" + p.spec.mode +
               (p.spec.division == kDefaultDivision ? "" : "/" + p.spec.division) +
               (p.spec.copy_in == kDefaultCopyIn ? "" : " (copy-in " + p.spec.copy_in + ")") +
               ": " + p.follows +
               (p.refuses_interleaved.empty() ? "" : "; S^K and n^(K-1)S only (others left out)") +
               "\n";
  std::string schedules;
  for (const CanonicalSchedule& c : kCanonicalSchedules)
    schedules += "    " + std::string(c.name) + ": " + c.description + "\n";
  return R"(shardaccum_bench: sharded gradient accumulation, strategy by strategy.

Every case runs one warm-up and --steps measured optimizer steps of K micro-batches on every rank,
checks the result against an exact reference (max_rel_err, correct), and reports per-step counters
beside the analytical model's prediction (model_*). Axes take a comma-separated list, or `all` where
the values are a finite list (not --k; --world-size only on cuda: 1..GPUs); without the flag an axis
takes the default matrix's values, and with no axis flag and no --preset the presets outside it run
after it (the main job). The console prints a line per case; the JSON every counter.

Axes (docs/DESIGN.md §3):
  schedule: n = no-sync micro-batch (gradient stays unsharded), S = sync (reduce-scatter). Literal
    strings ending in S (nnnS, nSnS) or canonical names for --k:
)" + schedules +
         axis_help<Binding>(d.binding) + axis_help<OffloadPolicy>(d.offload) +
         axis_help<ModeTracking>(d.mode) + axis_help<Division>(d.division) +
         axis_help<CopyIn>({kDefaultCopyIn}) + "  preset (replaces the axis flags):\n" + presets +
         R"(  dtype: grad-reduce-accum: fp32-fp32-fp32, bf16-bf16-fp32, bf16-bf16-bf16, and
    bf16-fp32-fp32 with --copy-in chunk-cat (the cast is the copy-in's; `all` leaves it out of
    cases without one).

Google Benchmark flags pass through: --benchmark_filter=REGEX, --benchmark_out=FILE.json
--benchmark_out_format=json, --benchmark_repetitions=N, --benchmark_min_warmup_time, ...)";
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

/// A list flag: one value per occurrence (never the next argument too), repeats add up, and the
/// commas are split by split_list so that an empty element is an error rather than dropped.
CLI::Option* add_list(CLI::App& app, const char* name, std::vector<std::string>& v,
                      const std::string& help) {
  return app.add_option(name, v, help)
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

/// CLI11 takes the argument after a value flag as its value even when it is another flag
/// (`--model --list`): refuse that here, for every value flag, before CLI11 parses.
void check_values_present(const CLI::App& app, const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0 || a.find('=') != std::string::npos) continue;
    const CLI::Option* opt = app.get_option_no_throw(a);
    if (opt == nullptr || opt->get_items_expected_min() == 0) continue;
    if (i + 1 == args.size())
      throw CliError(a + " needs a value: give it after the flag (" + a + " VALUE or " + a +
                     "=VALUE)");
    if (args[i + 1].rfind("--", 0) == 0)
      throw CliError(a + " needs a value but is followed by the flag " + brief(args[i + 1]) +
                     ": give " + a + " VALUE (or " + a + "=VALUE)");
    ++i;  // its value
  }
}

/// A single-valued flag given twice (`--warmup 1 --warmup 2`): CLI11 would say "At Most 1 required
/// but received 2"; name the flag and both values instead. List flags (TakeAll) add up by design; a
/// switch may repeat as long as it says the same (`--list --list`, not `--list=true --list=false`,
/// where CLI11 would silently keep one). Google Benchmark's own flags keep its rule, the last
/// counts (ListCli.HonoursBenchmarkFilterAsGoogleBenchmarkDoes), but for --benchmark_out, refused
/// twice by plan_benchmark_out.
void check_single_flags_once(const CLI::App& app, const std::vector<std::string>& args) {
  std::map<std::string, std::string> seen;  // the first value given, by flag name
  const auto once = [&](const std::string& name, const std::string& value, bool same_is_ok) {
    const auto [it, first] = seen.emplace(name, value);
    if (!first && !(same_is_ok && it->second == value))
      throw CliError(name + " is given twice (" +
                     brief(it->second.empty() ? "without a value" : it->second) + " and " +
                     brief(value.empty() ? "without a value" : value) +
                     "): it takes one value; give it once");
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() <= 2 || a.rfind("--", 0) != 0) continue;
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const CLI::Option* opt = app.get_option_no_throw(name);
    if (opt == nullptr) continue;
    if (opt->get_items_expected_min() == 0) {  // a switch: `--list` or `--list=VALUE`
      once(name, eq == std::string::npos ? "" : a.substr(eq + 1), true);
      continue;
    }
    const std::string value =
        eq != std::string::npos ? a.substr(eq + 1) : (i + 1 < args.size() ? args[i + 1] : "");
    if (eq == std::string::npos) ++i;  // its value
    if (opt->get_multi_option_policy() == CLI::MultiOptionPolicy::Throw) once(name, value, false);
  }
}

/// A flag neither we nor Google Benchmark read: named with the nearest known one ("did you mean
/// --offload?"), where CLI11 would only say that the arguments were not expected.
void check_known_flags(const CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> known, shorts;
  for (const CLI::Option* opt : app.get_options()) {
    for (const auto& l : opt->get_lnames()) known.push_back("--" + l);
    for (const auto& sn : opt->get_snames()) shorts.push_back("-" + sn);
  }
  const std::vector<std::string>& gb = google_benchmark_flags();
  known.insert(known.end(), gb.begin(), gb.end());
  for (const auto& a : args) {
    const std::string name = a.substr(0, a.find('='));
    // One dash before a name (-k 4): CLI11 would say "not expected: 4 -k". A negative number is a
    // value, and CLI11's own short names (-h) stay its.
    if (a.size() >= 2 && a[0] == '-' && a[1] != '-' &&
        std::isalpha(static_cast<unsigned char>(a[1])) &&
        std::find(shorts.begin(), shorts.end(), name) == shorts.end()) {
      const std::string near = nearest_flag("-" + name, known);
      throw CliError("unknown flag " + name + "; flags take two dashes" +
                     (near.empty() ? "" : ": did you mean " + near + "?") + " (see --help)");
    }
    if (a.size() <= 2 || a.rfind("--", 0) != 0) continue;
    if (std::find(gb.begin(), gb.end(), name) != gb.end())  // --v: Google Benchmark's, no '='
      throw CliError(name +
                     " needs its value after '=' (Google Benchmark's flags are --NAME=VALUE)");
    if (app.get_option_no_throw(name) == nullptr) throw CliError(unknown_flag_message(name, known));
  }
}

/// --describe-layout prints one layout: --model (exactly one value) and --config-dir (where its
/// name is found) are all it reads, so any other flag would be silently ignored: refuse it.
void check_describe_layout(const CLI::App& app, const BenchOptions& o) {
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->count() == 0 || opt->get_lnames().empty()) continue;
    const std::string name = "--" + opt->get_lnames().front();
    if (name != "--describe-layout" && name != "--model" && name != "--config-dir")
      throw CliError("--describe-layout takes only --model (and --config-dir): it prints a layout "
                     "and exits, so " +
                     name + " would be ignored; leave it out");
  }
  if (o.benchmark_args.size() > 1)
    throw CliError("--describe-layout takes only --model (and --config-dir): leave out " +
                   brief(o.benchmark_args[1]));
  if (o.models.empty())
    throw CliError("--describe-layout needs --model: give the layout to describe, e.g. "
                   "--describe-layout --model gpt2");
  const std::vector<std::string> models = split_list(o.models, "--model");
  if (models.size() != 1)
    throw CliError("--describe-layout: --model takes exactly one value here, got " +
                   std::to_string(models.size()) + " (" + brief(joined(models)) +
                   "); run it once per model");
}

}  // namespace

std::vector<std::string> model_dirs(const BenchOptions& o) {
  std::vector<std::string> dirs = o.config_dirs;
  dirs.emplace_back(SHARDACCUM_CONFIG_DIR);
  return dirs;
}

bool parse_cli(int argc, char** argv, BenchOptions& o) {
  o.benchmark_args = {argv[0]};
  std::vector<std::string> rest;
  // Shell-quoted, so that a path with a space stays one argument when read back.
  for (int i = 0; i < argc; ++i) o.command_line += (i ? " " : "") + shell_quote(argv[i]);
  // Google Benchmark's flags are split off first so that CLI11 sees only ours.
  std::vector<std::string> ours;
  for (int i = argc - 1; i >= 1; --i) {
    const std::string a = argv[i];
    const std::vector<std::string>& gb = google_benchmark_flags();
    if (a.rfind("--benchmark_", 0) == 0 &&
        std::find(gb.begin(), gb.end(), a.substr(0, a.find('='))) == gb.end())
      throw CliError(unknown_flag_message(a, gb));  // before GB, with a suggestion
    if (a.rfind("--benchmark_", 0) == 0 && a.find('=') == std::string::npos &&
        a != "--benchmark_list_tests" && a != "--benchmark_counters_tabular" &&
        a != "--benchmark_report_aggregates_only" && a != "--benchmark_display_aggregates_only" &&
        a != "--benchmark_enable_random_interleaving")
      throw CliError(
          a + " needs its value after '=' (Google Benchmark's flags are --benchmark_NAME=VALUE)");
    if (const std::string bad = benchmark_flag_error(a); !bad.empty()) throw CliError(bad);
    // CLI11 reads `--flag=` as "the value is the next argument": an empty value is an error here.
    if (a.size() > 3 && a.rfind("--", 0) == 0 && a.back() == '=' && a.find('=') == a.size() - 1)
      throw CliError(a + " has an empty value: give one after '=' (or leave the flag out)");
    // The same for `--flag ""`: an empty argument is never a value of this suite (--trace "" ran
    // the cases and wrote no trace, silently).
    if (a.empty() && i > 1 && std::string_view(argv[i - 1]).rfind("--", 0) == 0)
      throw CliError(std::string(argv[i - 1]) +
                     " has an empty value: give one (or leave the flag out)");
    if (a.rfind("--benchmark_", 0) == 0 || a.rfind("--v=", 0) == 0)
      o.benchmark_args.insert(o.benchmark_args.begin() + 1, a);
    else
      ours.push_back(a);  // reversed: CLI11's parse(vector) expects the arguments last first
  }

  CLI::App app{description(), "shardaccum_bench"};
  app.get_formatter()->column_width(34);
  // Integer and seconds flags are read as text and parsed by cli_values.hpp: decimal only, one
  // syntax for all (CLI11 alone would take hex for some, wrap -1 into a uint64 seed, ...).
  std::string warmup_s = std::to_string(o.warmup), steps_s = std::to_string(o.steps),
              seed_s = std::to_string(o.seed), threads_s = std::to_string(o.threads),
              trace_steps_s = std::to_string(o.trace_steps), tokens_s = std::to_string(o.tokens),
              timeout_str = std::to_string(static_cast<int>(o.timeout_s)),
              chunk_s = std::to_string(o.chunk_bytes),
              host_threads_s = host_threads_text(o.host_threads);
  add_list(app, "--model", o.models,
           "Layouts: uniform:COUNTxNUMEL (e.g. uniform:16x64M), " +
               model_choices_help({SHARDACCUM_CONFIG_DIR}) +
               ". Default: uniform:8x1M on the host "
               "backend, llama2-7b on cuda with 2+ GPUs, and on one GPU (world size 1) the "
               "single-GPU reference job uniform:16x64M,gpt2-xl (with --warmup 1 --steps 2 unless "
               "given)");
  add_list(
      app, "--world-size", o.world_sizes,
      "Ranks, a list (one GPU each on cuda, where a size above the GPUs is skipped and `all` is "
      "1..GPUs). Default: 2 on host, every visible GPU on cuda");
  add_list(app, "--schedule", o.schedules, "Schedules, e.g. nnnS,sync or all (the four canonical)")
      ->capture_default_str();
  std::vector<std::string> k_list;
  add_list(app, "--k", k_list,
           "Micro-batches per step, a list (e.g. 2,4,8; no `all`: any 1.." +
               std::to_string(kMaxMicroBatches) +
               "): canonical schedule names expand per K, a literal schedule must match one. "
               "Default: 4");
  const DefaultMatrix& dm = default_matrix();
  add_list(app, "--binding", o.bindings,
           joined(BindingRegistry::get().names()) + " or all. Default: " + joined(dm.binding));
  add_list(app, "--offload", o.offloads,
           joined(OffloadRegistry::get().names()) + " or all. Default: " + joined(dm.offload));
  add_list(app, "--mode", o.modes,
           joined(ModeRegistry::get().names()) + " or all. Default: " + joined(dm.mode));
  add_list(app, "--division", o.divisions,
           joined(DivisionRegistry::get().names()) + " or all. Default: " + joined(dm.division));
  add_list(app, "--copy-in", o.copy_ins,
           joined(CopyInRegistry::get().names()) +
               " or all. Default: a preset's own (fsdp2 chunk-cat, fsdp1 and fairscale no-shard), "
               "else " +
               std::string(kDefaultCopyIn) + "; given, it replaces the presets' own too");
  add_list(app, "--lookahead", o.lookaheads,
           "Reduce-scatters in flight as the backward goes on: 0, 1, unbounded, buckets "
           "(DeepSpeed ZeRO-3's reduce buckets of 5e8 elements) or all. Default: a preset's own "
           "(fsdp2 1; fsdp1, fairscale unbounded; zero3 buckets), else 1");
  add_list(app, "--preset", o.presets,
           joined(PresetRegistry::get().names()) + " or all (instead of the axes)");
  add_list(app, "--dtype", o.dtypes, "Dtype triples grad-reduce-accum or all (the four supported)")
      ->capture_default_str();
  app.add_option("--backend", o.backend, "host, cuda or auto (cuda when a GPU is visible)")
      ->capture_default_str();
  app.add_option("--warmup", warmup_s, "Unmeasured steps before the measured ones")
      ->capture_default_str()
      ->type_name("INT");
  app.add_option("--steps", steps_s,
                 "Measured steps per case (2 in the one-GPU default job, see --model)")
      ->capture_default_str()
      ->type_name("INT");
  app.add_option("--check", o.check,
                 "Measured steps the oracle checks (outside the timed window): every or last")
      ->capture_default_str();
  app.add_option("--gen", o.gen, "Gradient values: dyadic (exact sums) or random (full mantissa)")
      ->capture_default_str();
  app.add_option("--backward", o.backward,
                 "synthetic: the generator kernel alone; gemm: cuBLAS GEMMs on every unit's "
                 "parameter shapes first (4*T*numel FLOPs, the cuda backend only)")
      ->capture_default_str();
  app.add_option("--tokens", tokens_s, "T, the token rows of --backward gemm's GEMMs (1..65536)")
      ->capture_default_str()
      ->type_name("INT");
  app.add_flag("--tf32", o.tf32, "--backward gemm: let fp32 GEMMs use TF32 tensor cores");
  app.add_option("--chunk-bytes", chunk_s,
                 "The chunk of the -pipelined offloads in bytes (4..2^40; others ignore it)")
      ->capture_default_str()
      ->type_name("INT");
  app.add_option("--seed", seed_s, "Seed of the gradient generator (decimal, 0..2^64-1)")
      ->capture_default_str()
      ->type_name("UINT");
  app.add_option("--threads", threads_s,
                 "Host threads per rank for CPU adds (0: cores / world size)")
      ->capture_default_str()
      ->type_name("INT");
  // torchrun sets OMP_NUM_THREADS=1 when nproc_per_node > 1 (torch/distributed/run.py).
  app.add_option("--host-threads", host_threads_s,
                 "Intra-op threads of offload:cpu-add-pageable's CPU add: auto (the combination of "
                 "a preset launched by torchrun, fsdp2's with any --copy-in as for "
                 "--device-add-grid auto, gets torchrun's 1 when more than one rank shares the "
                 "node; anything else --threads' share), 0 (--threads' share) or N")
      ->capture_default_str()
      ->type_name("auto|INT");
  app.add_option("--param-traffic", o.param_traffic,
                 "on or off (one value). on: each unit's unsharded parameter is held from its "
                 "unshard to its reshard in the forward and the backward, and offloaded "
                 "strategies copy the unit's shard H2D into the unsharded parameter (FSDP's CPU "
                 "offload; param_h2d_bytes; case name /param-traffic:on); with copy-in chunk-cat "
                 "(FSDP2) each unshard also copies the all-gather output into the unsharded "
                 "parameter on the compute stream (param_d2d_bytes). off: none. Cases of copy-in "
                 "no-shard at world size 1 without offload ignore it; a run of only such cases is "
                 "refused")
      ->capture_default_str();
  app.add_option("--grad-accumulation", o.grad_accumulation,
                 "in-place: a backward that adds into the unit's existing gradient (after an n "
                 "micro-batch; under copy-in no-shard at world size 1 after any) writes straight "
                 "into it (fused, as Megatron's gradient_accumulation_fusion); autograd: it writes "
                 "a fresh gradient, adds it in and frees it, as autograd's AccumulateGrad does "
                 "under FSDP1 and FSDP2 (one gradient more at the peak, one add more; case name "
                 "/grad-accumulation:autograd)")
      ->capture_default_str();
  app.add_option(
         "--device-add-grid", o.device_add_grid,
         "How the device adds (dst += src on the GPU) launch, one value. torch: every SM "
         "until the add's last wave, as PyTorch's elementwise kernels; on the "
         "reduce-scatter stream (the greatest priority) such an add holds back the compute "
         "stream beside it, as FSDP2's `+=` does. two-per-sm: at most two blocks per SM, "
         "leaving SMs to the backward beside it (the suite's idealised add). auto: torch "
         "for every strategy with the binding, offload, mode and division of fsdp1, fsdp2, "
         "fairscale or zero3, whatever its copy-in and lookahead (the system it follows, as "
         "for the lookahead's default), two-per-sm otherwise, ideal included (case name "
         "unchanged; the label says which). torch or two-per-sm named adds "
         "/device-add-grid:G. The host backend records it and runs its adds as before")
      ->capture_default_str();
  app.add_option(
         "--comm-priority", o.comm_priority,
         "The CUDA priority of the stream the reduce-scatters run on (and, by strategy, the "
         "bucket copies, divisions and offload copies with them), one value per run. greatest: "
         "the device's greatest, above the other streams at 0, as FSDP2's reduce-scatter stream "
         "(priority -1) is above its compute stream: its kernels are dispatched before the "
         "backward's queued blocks. default: priority 0, as FSDP1's "
         "post-backward stream, FairScale's and DeepSpeed ZeRO-3's reduce_and_partition_stream. "
         "auto: default for every strategy with the binding, offload, mode and division of "
         "fsdp1, fairscale or zero3, greatest otherwise, fsdp2 and ideal included (case name "
         "unchanged; the label says which). greatest or default named adds /comm-priority:P. "
         "The host backend records it and runs as before")
      ->capture_default_str();
  app.add_option(
         "--hook-host-us", o.hook_host_us,
         "Host time in microseconds that the issuing thread spends before each unit's backward, "
         "as a real system's Python hooks do (FSDP1: the rest of _post_backward_hook, the next "
         "unit's _pre_backward_hook, autograd's engine). The GPU waits for it only where the "
         "host cannot run ahead: after a blocking copy (fsdp1's NO_SHARD D2H at world size 1). "
         "auto: the measured value of the preset whose binding, offload, mode and division the "
         "strategy has (fsdp1: 185, docs/PRESETS.md H1), 0 otherwise (case name unchanged; the "
         "label says it). N (0..100000) for every case adds /hook-host-us:N. Both backends "
         "spend it")
      ->capture_default_str()
      ->type_name("auto|INT");
  app.add_option("--cupti", o.cupti,
                 "on: CUPTI's MEMCPY records give the H2D/D2H bytes; kernels: also kernel records "
                 "(slows NCCL "
                 "kernels, see README); off: the backend's own accounting (cuda)")
      ->capture_default_str();
  app.add_option(
         "--trace-steps", trace_steps_s,
         "Measured steps per case that --trace records (0: all; 1: the step the report draws)")
      ->capture_default_str()
      ->type_name("INT");
  app.add_option("--trace", o.trace,
                 "Write a Perfetto/Chrome trace JSON of every case's measured steps (NVTX "
                 "phases per rank, the backend's ops per stream) to this file");
  app.add_option("--ceilings", o.ceilings,
                 "on or off: measure the copy/NCCL/add ceilings at backend start (cuda; off "
                 "under scripts/profile.sh so that nsys sees only the cases' copies)")
      ->capture_default_str();
  app.add_option(
         "--launcher", o.launcher,
         "threads: one process, a thread per GPU; env: one process per GPU from torchrun, srun or "
         "mpirun (RANK/WORLD_SIZE/LOCAL_RANK, SLURM_*, OMPI_COMM_WORLD_*); auto: env when such a "
         "launch of 2+ processes is detected")
      ->capture_default_str();
  app.add_option(
      "--rendezvous", o.rendezvous,
      "How the processes of --launcher env get NCCL's unique id: file:PATH (a fresh path on a "
      "shared file system) or tcp:HOST:PORT (rank 0 listens). Default: tcp at MASTER_ADDR and "
      "MASTER_PORT (MASTER_PORT+1 under torchrun, whose store holds MASTER_PORT)");
  app.add_option(
         "--timeout", timeout_str,
         "Seconds before a rank that never arrives, a dead peer or a stuck collective ends the run "
         "with an error")
      ->capture_default_str()
      ->type_name("FLOAT");
  app.add_option("--config-dir", o.config_dirs, "Extra directories searched for model configs")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option(
      "--part", o.part,
      "I/N: run only the I-th of N contiguous, near-equal slices of the case matrix (a long job "
      "over several commands; join the JSON with scripts/merge.py)");
  app.add_flag("--list", o.list, "List the cases that would run, then exit");
  app.add_flag("--describe-registry", o.describe_registry,
               "Print the registry (axis values, presets, canonical schedules) as JSON, then exit");
  app.add_flag("--describe-layout", o.describe_layout,
               "With --model M (one value): print its layout as JSON (units, their parameters' "
               "names, shapes and offsets; schema shardaccum.layout/1), then exit. No backend");

  const std::vector<std::string> in_order(ours.rbegin(), ours.rend());  // CLI11 holds them reversed
  check_values_present(app, in_order);
  check_known_flags(app, ours);
  check_single_flags_once(app, in_order);
  const size_t our_args = ours.size();  // app.parse consumes the vector
  try {
    app.parse(ours);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help() << std::endl;
    return false;
  } catch (const CLI::ParseError& e) {
    throw CliError(std::string(e.what()) + " (see --help)");
  }
  // It describes the binary, not a run: any other flag would be silently ignored, so refuse it.
  if (o.describe_registry && (our_args > 1 || o.benchmark_args.size() > 1))
    throw CliError("--describe-registry takes no other flag: it prints what this binary registers "
                   "and exits (run it alone)");
  if (o.describe_layout) check_describe_layout(app, o);
  o.warmup_given = app.count("--warmup") > 0;
  o.steps_given = app.count("--steps") > 0;
  o.k_given = app.count("--k") > 0;
  if (o.k_given) o.ks = parse_k_list(k_list);
  o.steps = static_cast<int>(parse_int_flag(steps_s, "--steps", 1, 1000, "1..1000 measured steps"));
  o.warmup = static_cast<int>(parse_int_flag(warmup_s, "--warmup", 0, 1000, "0..1000"));
  o.seed = parse_u64_flag(seed_s, "--seed", "0..18446744073709551615 (2^64-1) in decimal");
  o.chunk_bytes = static_cast<uint64_t>(
      parse_int_flag(chunk_s, "--chunk-bytes", 4, int64_t{1} << 40, "4..2^40 bytes in decimal"));
  o.trace_steps = static_cast<int>(parse_int_flag(trace_steps_s, "--trace-steps", 0, INT_MAX,
                                                  "0 (every measured step) or more"));
  o.timeout_s = parse_seconds_flag(timeout_str, "--timeout", "1..86400 seconds");
  if (o.backend != "host" && o.backend != "cuda" && o.backend != "auto")
    throw CliError("--backend '" + brief(o.backend) + "': expected host, cuda or auto");
  if (o.check != "every" && o.check != "last")
    throw CliError("--check '" + brief(o.check) +
                   "': expected every (each measured step) or last (the last one)");
  if (o.gen != "dyadic" && o.gen != "random")
    throw CliError("--gen '" + brief(o.gen) + "': expected dyadic or random");
  if (o.backward != "synthetic" && o.backward != "gemm")
    throw CliError("--backward '" + brief(o.backward) + "': expected synthetic or gemm");
  o.tokens_given = app.count("--tokens") > 0;
  o.trace_steps_given = app.count("--trace-steps") > 0;
  // 65536 keeps every GEMM's sums of products exact in fp32 (launch_gemm_operands, cuda_gemm.hpp).
  o.tokens = static_cast<uint64_t>(
      parse_int_flag(tokens_s, "--tokens", 1, static_cast<int64_t>(kMaxGemmTokens),
                     "1.." + std::to_string(kMaxGemmTokens) + " token rows"));
  if (o.backward == "synthetic" && (o.tokens_given || o.tf32))
    throw CliError(std::string(o.tokens_given ? "--tokens" : "--tf32") +
                   " is for --backward gemm only (the synthetic backward runs no GEMM); add "
                   "--backward gemm or leave it out");
  if (o.param_traffic != "on" && o.param_traffic != "off")
    throw CliError("--param-traffic '" + brief(o.param_traffic) + "': expected on or off");
  if (o.grad_accumulation != "in-place" && o.grad_accumulation != "autograd")
    throw CliError("--grad-accumulation '" + brief(o.grad_accumulation) +
                   "': expected in-place or autograd");
  if (o.device_add_grid != "auto" && o.device_add_grid != "torch" &&
      o.device_add_grid != "two-per-sm")
    throw CliError("--device-add-grid '" + brief(o.device_add_grid) +
                   "': expected auto, torch or two-per-sm");
  if (o.comm_priority != "auto" && o.comm_priority != "greatest" && o.comm_priority != "default")
    throw CliError("--comm-priority '" + brief(o.comm_priority) +
                   "': expected auto, greatest or default");
  if (o.hook_host_us != "auto")
    o.hook_host_us_value = static_cast<uint32_t>(parse_int_flag(
        o.hook_host_us, "--hook-host-us", 0, 100000, "auto, or 0..100000 microseconds per unit"));
  if (o.cupti != "on" && o.cupti != "off" && o.cupti != "kernels")
    throw CliError("--cupti '" + brief(o.cupti) + "': expected on, kernels or off");
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o.threads =
      static_cast<int>(parse_int_flag(threads_s, "--threads", 0, int64_t{4} * hw,
                                      "0 (cores / world size) to " + std::to_string(4 * hw) +
                                          " (4x the " + std::to_string(hw) + " hardware threads)"));
  o.host_threads = host_threads_s == "auto"
                       ? kHostThreadsAuto
                       : static_cast<int>(parse_int_flag(
                             host_threads_s, "--host-threads", 0, int64_t{4} * hw,
                             "auto, or 0 (the rank's share) to " + std::to_string(4 * hw) +
                                 " (4x the " + std::to_string(hw) + " hardware threads)"));
  if (o.launcher != "threads" && o.launcher != "env" && o.launcher != "auto")
    throw CliError("--launcher '" + brief(o.launcher) + "': expected threads, env or auto");
  if (!(o.timeout_s >= 1) || o.timeout_s > 86400) {
    char v[32];
    std::snprintf(v, sizeof v, "%g", o.timeout_s);
    throw CliError(std::string("--timeout ") + v + ": give 1..86400 seconds");
  }
  if (!o.part.empty()) try {
      o.part_slice = parse_part(o.part);
    } catch (const std::invalid_argument& e) {
      throw CliError(e.what());
    }
  for (const auto& d : o.config_dirs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(d, ec))
      throw CliError("--config-dir " + brief(d) +
                     ": not a directory; give an existing directory of model "
                     "configs (NAME.json)");
  }
  if (o.ceilings != "on" && o.ceilings != "off")
    throw CliError("--ceilings '" + brief(o.ceilings) + "': expected on or off");
  if (!o.trace.empty()) try {
      namespace fs = std::filesystem;
      const fs::path p(o.trace);
      const fs::path dir = p.parent_path();
      if (!dir.empty() && !fs::is_directory(dir))
        throw CliError("--trace " + o.trace + ": directory '" + dir.string() +
                       "' does not exist (create it first)");
      if (fs::is_directory(p) || p.filename().empty())
        throw CliError("--trace " + o.trace +
                       ": is a directory; give a file name such as trace.json");
      if (access(dir.empty() ? "." : dir.c_str(), W_OK) != 0)
        throw CliError("--trace " + o.trace + ": directory '" + (dir.empty() ? "." : dir.string()) +
                       "' is not writable");
    } catch (const std::filesystem::filesystem_error& e) {  // permissions, a link loop
      throw CliError("--trace " + o.trace + ": cannot use that path: " + e.what());
    }
  return true;
}

}  // namespace shardaccum
