// The axes of shardaccum_bench's command line resolved into values (bench/cli.hpp): models, world
// sizes, K and schedules, strategies and dtypes, each a list or `all` where a finite list exists.
#include <algorithm>
#include <climits>

#include "bench/cli.hpp"
#include "bench/cli_suggest.hpp"
#include "bench/cli_values.hpp"
#include "bench/model_layouts.hpp"
#include "strategies/backend/device_add_grid.hpp"
#include "strategies/default_matrix.hpp"
#include "strategies/preset/preset.hpp"

namespace shardaccum {
namespace {

/// A CliError when the value just parsed (the last of `values`, spelled `spelling`) is an
/// earlier one: 4 and 04 are one K (split_list sees two spellings).
void reject_repeat(const std::vector<int>& values, const std::string& spelling, const char* flag) {
  if (std::count(values.begin(), values.end(), values.back()) > 1)
    throw CliError(std::string(flag) + " '" + spelling + "' is given twice (as " +
                   std::to_string(values.back()) + "): give each value once");
}

std::string joined(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

/// Refuses `all` next to other values: `all,fsdp2` could mean all or a typo; every axis flag alike.
void check_all_alone(const std::vector<std::string>& v, const char* flag) {
  if (v.size() > 1 && std::find(v.begin(), v.end(), "all") != v.end())
    throw CliError(
        std::string(flag) + " '" + brief(joined(v, ",")) +
        "': `all` cannot be combined with other values; give all alone or list the values");
}

/// An axis flag's values: the default matrix's when not given, every registered value for `all`.
std::vector<std::string> expand(const std::vector<std::string>& values,
                                const std::vector<std::string>& registered,
                                const std::vector<std::string>& defaults, const char* flag) {
  if (values.empty()) return defaults;
  std::vector<std::string> v = split_list(values, flag);
  if (v.empty()) throw CliError(std::string(flag) + " is empty: give a value or `all`");
  check_all_alone(v, flag);
  if (v[0] == "all") return registered;
  for (const auto& x : v)
    if (std::find(registered.begin(), registered.end(), x) == registered.end()) {
      // A typo's value, as a flag's; a tie names each ("fsdp3": fsdp1 or fsdp2).
      const std::vector<std::string> near = nearest_all(x, registered);
      std::string guess;
      for (size_t i = 0; i < near.size(); ++i) guess += (i ? " or " : "; did you mean ") + near[i];
      throw CliError(std::string(flag) + ": unknown value '" + brief(x) + "'" +
                     (guess.empty() ? "" : guess + "?") + " (expected " + joined(registered) +
                     " or all)");
    }
  return v;
}

/// `--model all`: the stems of the *.json files in the config directories, sorted, each once
/// (the names `--model` accepts; bench/model_layouts.hpp looks them up in the same directories).
std::vector<std::string> every_model_name(const std::vector<std::string>& dirs) {
  std::vector<std::string> names = shipped_model_names(dirs);
  if (names.empty()) throw CliError("--model all: no NAME.json config found in " + joined(dirs));
  return names;
}

std::vector<int> world_sizes(const BenchOptions& o, int default_world, int max_world,
                             bool gpu_world, std::vector<std::string>& notes) {
  if (o.world_sizes.empty()) return {default_world};
  const std::vector<std::string> given = split_list(o.world_sizes, "--world-size");
  check_all_alone(given, "--world-size");
  std::vector<int> out;
  if (given == std::vector<std::string>{"all"}) {
    if (!gpu_world)
      throw CliError("--world-size all: `all` is 1..GPUs, for the cuda backend's one GPU per rank; "
                     "here (the host backend simulates 1.." +
                     std::to_string(max_world) +
                     " ranks, too many to run every one; a multi-process launch has its own) give "
                     "a list such as --world-size 1,2,4");
    for (int n = 1; n <= max_world; ++n) out.push_back(n);
    return out;
  }
  std::vector<std::string> skipped;
  std::vector<int> seen;  // 2 and 02 are one world size (split_list sees two spellings)
  // Off the GPU world the backend's limit is the top of the range, so a value past it (even past
  // int64) names that limit rather than INT_MAX; on cuda a larger world is skipped with a note.
  const int64_t top = gpu_world ? INT_MAX : max_world;
  const std::string give =
      gpu_world ? "at least 1 rank"
                : "1.." + std::to_string(max_world) +
                      " ranks (this backend's limit here: the host backend's, or under a "
                      "multi-process launch the GPUs, one per rank)";
  for (const auto& w : given) {
    const int n = static_cast<int>(parse_int_flag(w, "--world-size", 1, top, give));
    seen.push_back(n);
    reject_repeat(seen, w, "--world-size");
    if (n <= max_world) {
      out.push_back(n);
      continue;
    }
    skipped.push_back(w);
  }
  const std::string gpus =
      std::to_string(max_world) + (max_world == 1 ? " GPU is" : " GPUs are") + " visible";
  if (out.empty())
    throw CliError("--world-size " + joined(given, ",") + ": every world size is above the " +
                   std::to_string(max_world) + " ranks this machine can run (" + gpus +
                   ", one per rank on cuda); give at most " + std::to_string(max_world) +
                   ", or --backend host to simulate more ranks");
  // One GPU per rank: a larger world cannot start here, but the others can still run.
  for (const auto& w : skipped)
    notes.push_back("--world-size " + w + ": skipped, only " + gpus +
                    " (one GPU per rank on cuda); its cases are not run");
  return out;
}

/// The schedules of every K: canonical names once per K of o.ks (in --k's order), a literal at its
/// own K. With --k given a literal whose length is none of them is an error naming both flags.
std::vector<Schedule> schedules(const BenchOptions& o) {
  const auto specs = split_list(o.schedules, "--schedule");
  if (specs.empty()) throw CliError("--schedule is empty: give n/S letters ending in S or `all`");
  check_all_alone(specs, "--schedule");
  std::vector<std::string> names;  // `all`: the four canonical names
  for (const auto& s : specs)
    if (s == "all")
      for (const CanonicalSchedule& c : kCanonicalSchedules) names.emplace_back(c.name);
    else
      names.push_back(s);
  // `all` (the default) is the canonical schedules, which need K >= 3: an error that names --k,
  // not a schedule the user may never have typed.
  if (specs == std::vector<std::string>{"all"})
    for (const int k : o.ks)
      if (k < kCanonicalMinK)
        throw CliError("--k " + std::to_string(k) + ": --schedule all (the default) runs the " +
                       "canonical schedules, which need --k >= " + std::to_string(kCanonicalMinK) +
                       "; give --k 3 or more, or literal schedules such as --schedule nS,SS");
  const auto is_literal = [](const std::string& s) {
    return s.find_first_not_of("nS") == std::string::npos;
  };
  std::vector<Schedule> out;
  std::vector<bool> matched(names.size(), false);
  for (const int k : o.ks)
    for (size_t i = 0; i < names.size(); ++i) {
      try {
        const Schedule sc = parse_schedule(names[i], k);  // a literal: checked, its own K
        // Without --k a literal runs at its own length; with --k, only at a K of the list.
        if (is_literal(names[i]) && (o.k_given ? sc.k() != k : matched[i])) continue;
        matched[i] = true;
        out.push_back(sc);
      } catch (const std::invalid_argument& e) {
        throw CliError(e.what());
      }
    }
  for (size_t i = 0; i < names.size(); ++i)
    if (!matched[i]) {
      std::vector<std::string> ks;
      for (const int k : o.ks) ks.push_back(std::to_string(k));
      throw CliError("--schedule " + brief(names[i]) + " has " + std::to_string(names[i].size()) +
                     " micro-batches but --k " + joined(ks, ",") +
                     " does not list that K: a literal schedule fixes its own K; add " +
                     std::to_string(names[i].size()) +
                     " to --k, leave --k out, or give a literal "
                     "of one of those lengths");
    }
  return out;
}

}  // namespace

std::vector<int> parse_k_list(const std::vector<std::string>& values) {
  const std::vector<std::string> given = split_list(values, "--k");
  if (std::find(given.begin(), given.end(), "all") != given.end())
    throw CliError("--k all: K has no finite list of values (any 1.." +
                   std::to_string(kMaxMicroBatches) +
                   " micro-batches per step); give a comma-separated list such as --k 2,4,8");
  std::vector<int> ks;
  for (const auto& k : given) {
    ks.push_back(static_cast<int>(
        parse_int_flag(k, "--k", 1, kMaxMicroBatches,
                       "1.." + std::to_string(kMaxMicroBatches) + " micro-batches")));
    reject_repeat(ks, k, "--k");
  }
  return ks;
}

MatrixAxes resolve_axes(const BenchOptions& o, const std::string& default_model, int default_world,
                        int max_world, bool gpu_world) {
  MatrixAxes a;
  const std::vector<std::string> dirs = model_dirs(o);
  // The default may be a list too (the one-GPU default job: bench/backend_select.hpp).
  auto models =
      split_list(o.models.empty() ? std::vector<std::string>{default_model} : o.models, "--model");
  check_all_alone(models, "--model");
  if (models == std::vector<std::string>{"all"}) models = every_model_name(dirs);
  for (const auto& m : models) {
    try {
      a.models.push_back(std::make_shared<const Layout>(load_layout(m, dirs)));
    } catch (const std::invalid_argument& e) {
      throw CliError(e.what());
    }
  }
  a.world_sizes = world_sizes(o, default_world, max_world, gpu_world, a.notes);
  a.schedules = schedules(o);
  const bool axes_given =
      !o.bindings.empty() || !o.offloads.empty() || !o.modes.empty() || !o.divisions.empty();
  if (!o.presets.empty() && axes_given)
    throw CliError(
        "--preset replaces --binding/--offload/--mode/--division: give either presets or the axes");
  if (!o.presets.empty()) {
    for (const auto& p : expand(o.presets, PresetRegistry::get().names(), {}, "--preset"))
      a.strategies.push_back(preset(p));
  } else if (!axes_given) {
    a.strategies = main_strategies();  // the idealised strategies and the presets
  } else {
    const DefaultMatrix& d = default_matrix();
    a.strategies = strategy_product(
        expand(o.bindings, BindingRegistry::get().names(), d.binding, "--binding"),
        expand(o.offloads, OffloadRegistry::get().names(), d.offload, "--offload"),
        expand(o.modes, ModeRegistry::get().names(), d.mode, "--mode"),
        expand(o.divisions, DivisionRegistry::get().names(), d.division, "--division"));
  }
  if (!o.copy_ins.empty()) {  // each strategy (a preset's too) once per copy-in given
    std::vector<StrategySpec> each;
    for (const auto& st : a.strategies)
      for (const auto& c : expand(o.copy_ins, CopyInRegistry::get().names(), {}, "--copy-in")) {
        StrategySpec v = st;
        v.copy_in = c;
        each.push_back(v);
      }
    a.strategies = std::move(each);
  }
  if (!o.lookaheads.empty()) {  // each strategy once per lookahead given
    std::vector<std::string> all;
    for (Lookahead l : kLookaheads) all.emplace_back(lookahead_name(l));
    std::vector<StrategySpec> each;
    for (const auto& st : a.strategies)
      for (const auto& l : expand(o.lookaheads, all, {}, "--lookahead")) {
        StrategySpec v = st;
        v.lookahead = parse_lookahead(l);
        each.push_back(v);
      }
    a.strategies = std::move(each);
  }
  std::vector<std::string> dtypes = split_list(o.dtypes, "--dtype");
  check_all_alone(dtypes, "--dtype");
  if (dtypes == std::vector<std::string>{"all"}) {
    dtypes.assign(std::begin(kDtypeTriples), std::end(kDtypeTriples));
    a.dtypes_all = true;  // build_matrix leaves out the triples a strategy cannot cast
  }
  for (const auto& d : dtypes) {
    try {
      a.dtypes.push_back(parse_dtype_triple(d));
    } catch (const std::invalid_argument& e) {
      throw CliError(e.what());
    }
  }
  if (a.dtypes.empty()) throw CliError("--dtype is empty: e.g. fp32-fp32-fp32");
  a.gen = o.gen == "random" ? GenMode::random : GenMode::dyadic;
  a.seed = o.seed;
  a.chunk_bytes = o.chunk_bytes;
  a.host_threads = o.host_threads;
  a.param_traffic = o.param_traffic == "on";
  a.autograd_accumulation = o.grad_accumulation == "autograd";
  if (o.device_add_grid != "auto") a.device_add_grid = parse_device_add_grid(o.device_add_grid);
  if (o.comm_priority != "auto") a.comm_priority = parse_comm_priority(o.comm_priority);
  a.hook_host_us = o.hook_host_us_value;
  // On applies where there is a parameter path to model (param_traffic_applies); a run with
  // none would run nothing it asked for: only NO_SHARD without offload, at world size 1.
  const auto applies = [&](const StrategySpec& st) {
    return std::any_of(a.world_sizes.begin(), a.world_sizes.end(),
                       [&](int w) { return param_traffic_applies(st, w); });
  };
  if (a.param_traffic && std::none_of(a.strategies.begin(), a.strategies.end(), applies))
    throw CliError("--param-traffic on: no case of this run has a parameter path to model (copy-in "
                   "no-shard at world size 1 without offload keeps its parameters whole on the "
                   "device); add --offload with another value, another --copy-in or --world-size, "
                   "or leave --param-traffic out");
  // --host-threads sets one offload's CPU add only: given to a run without it, it does nothing.
  const auto takes_threads = [](const StrategySpec& st) {
    return OffloadRegistry::get().make(st.offload, AxisArgs{})->takes_host_threads();
  };
  if (o.host_threads != kHostThreadsAuto &&
      std::none_of(a.strategies.begin(), a.strategies.end(), takes_threads))
    a.notes.push_back("--host-threads " + host_threads_text(o.host_threads) +
                      ": no case of this run has offload cpu-add-pageable (the fsdp2 preset's), "
                      "whose CPU add it sets; it changes nothing here");
  if (o.trace_steps_given && o.trace.empty())
    a.notes.push_back(
        "--trace-steps " + std::to_string(o.trace_steps) +
        ": no --trace FILE is given, so no step is recorded; it changes nothing here");
  else if (o.trace_steps > o.steps)
    a.notes.push_back("--trace-steps " + std::to_string(o.trace_steps) + " is more than the " +
                      std::to_string(o.steps) +
                      " measured steps of a case (--steps): every measured step is recorded, as "
                      "with --trace-steps 0");
  if (o.backward == "gemm") {
    a.backward = Backward::gemm;
    a.tokens = o.tokens;
    a.tf32 = o.tf32;
  }
  return a;
}

}  // namespace shardaccum
