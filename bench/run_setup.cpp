#include "bench/run_setup.hpp"

#include <iostream>
#include <map>
#include <set>

#include "bench/cli_values.hpp"
#include "bench/exit_codes.hpp"
#include "bench/layout_json.hpp"
#include "bench/model_layouts.hpp"
#include "bench/multiprocess_setup.hpp"
#include "strategies/oracle.hpp"
#include "strategies/preset/preset.hpp"
#include "strategies/registry_json.hpp"

namespace shardaccum {

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
      throw CliError("case " + c.name() +
                     " is listed twice: remove the repeated value from its axis flag");
    try {
      validate(c.strategy, c.dtypes);  // a grad != reduce triple without a copy-in that casts
    } catch (const std::invalid_argument& e) {
      throw CliError(e.what());
    }
    const int k = c.schedule.k();
    const DivisionSteps div = division_steps(c.strategy.division, c.world_size);
    if (!oracle_resolves(c.dtypes, c.gen, k, c.world_size, div)) {
      const std::string& d = c.strategy.division;
      // A preset fixes its division (--preset refuses --division): its own axes are the way to
      // another one. Name the division only where it is not the default: its roundings loosened it.
      const PresetInfo* preset = PresetRegistry::get().of(c.strategy);
      const std::string division =
          d == kDefaultDivision ? "" : ", division " + d + (preset ? " (the preset's)" : "");
      std::string fixes = "use --dtype fp32-fp32-fp32";
      if (d != kDefaultDivision)
        fixes += preset ? ", the preset's axes with --division " + std::string(kDefaultDivision) +
                              " (--binding " + c.strategy.binding + " --offload " +
                              c.strategy.offload + " --mode " + c.strategy.mode +
                              " instead of --preset " + preset->name + ")"
                        : ", --division " + std::string(kDefaultDivision);
      if (c.gen != GenMode::dyadic) fixes += ", --gen dyadic";
      fixes += d != kDefaultDivision
                   ? ", a smaller --k, or a world size that is a power of two (it divides exactly)"
                   : ", or a smaller --k or world size";
      const double threshold = oracle_threshold(c.dtypes, c.gen, k, c.world_size);
      throw CliError("--dtype " + c.dtypes.name() + " with --gen " +
                     (c.gen == GenMode::dyadic ? "dyadic" : "random") + ", K=" + std::to_string(k) +
                     ", world size " + std::to_string(c.world_size) + division + " (case " +
                     c.name() + "): the oracle's error bound (" +
                     std::to_string(error_bound(c.dtypes, c.gen, k, c.world_size, div)) +
                     ") is not below " + std::to_string(threshold) +
                     ", so it cannot tell a lost micro-batch from rounding; " + fixes);
    }
  }
}

void apply_default_job(BenchOptions& opts, BackendChoice& choice) {
  const DefaultJob job = default_job(choice.name, choice.default_world);
  choice.default_model = job.models;
  if (!opts.models.empty()) return;  // the user's models: the user's (or the usual) step counts
  if (!opts.warmup_given) opts.warmup = job.warmup;
  if (!opts.steps_given) opts.steps = job.steps;
}

/// --describe-layout: the one --model value's layout as JSON on stdout; no backend, no GPU.
void print_layout(const BenchOptions& opts) {
  const std::string spec = split_list(opts.models, "--model").front();
  std::cout << layout_json(load_layout(spec, model_dirs(opts)), spec).dump(2) << std::endl;
  if (!std::cout) throw RunFailure("--describe-layout: cannot write to stdout");
}

std::optional<RunSetup> resolve_run(int argc, char** argv) {
  RunSetup s;
  try {
    if (!parse_cli(argc, argv, s.opts)) return std::nullopt;
    if (s.opts.describe_registry) {  // before any backend work: a tool asks what this binary
                                     // registers
      std::cout << registry_json().dump(2) << std::endl;
      if (!std::cout) throw RunFailure("--describe-registry: cannot write to stdout");
      return std::nullopt;
    }
    if (s.opts.describe_layout) {  // a tool asks for a model's tensors: before any backend work
      print_layout(s.opts);
      return std::nullopt;
    }
    s.choice = choose_backend(s.opts.backend);
    if (s.opts.backward == "gemm" && s.choice.name != "cuda")
      throw CliError("--backward gemm runs cuBLAS GEMMs and needs the cuda backend (this run's "
                     "backend is " +
                     s.choice.name + "); use --backend cuda on a GPU, or --backward synthetic");
    s.launch = resolve_launcher(s.opts.launcher);
    s.rendezvous = setup_launch(s.opts, s.launch, s.choice);
    apply_default_job(s.opts, s.choice);
    // One process with a GPU per rank: a world size above the GPUs is skipped, the rest run. A
    // multi-process launch fixes its world size (check_launch_world_sizes): there it is an error.
    const bool gpu_world = s.choice.name == "cuda" && !s.processes();
    const MatrixAxes axes = resolve_axes(s.opts, s.choice.default_model, s.choice.default_world,
                                         s.choice.max_world, gpu_world);
    s.notes = axes.notes;
    check_launch_world_sizes(axes, s.launch);
    s.cases = build_matrix(axes);
    s.left_out = leave_out_unrunnable(s.cases);
    if (s.cases.empty() && !s.left_out.empty())
      throw CliError("no case left to run: " + s.left_out.front().reason +
                     "; give --schedule sync or no-sync (S^K, n^(K-1)S), or another --preset");
    validate_cases(s.cases);
    s.matrix_cases = s.cases.size();
    s.cases = select_part(
        s.cases, s.opts.part_slice);  // the whole matrix was validated: any part finds bad input
  } catch (const RunFailure&) {
    throw;  // an output that failed (stdout), not bad input
  } catch (const std::exception& e) {
    throw UsageError(e.what(), s.launch.rank ? "rank " + std::to_string(s.launch.rank) + ": " : "");
  }
  return s;
}

void print_notices(const RunSetup& s) {
  if (!s.reporter()) return;
  for (const auto& n : s.notes) std::cerr << "shardaccum_bench: " << n << "\n";
  for (const auto& l : s.left_out)
    std::cerr << "shardaccum_bench: " << l.name << ": left out: " << l.reason << "\n";
}

}  // namespace shardaccum
