#pragma once
// What the command line of shardaccum_bench resolves to before any work: the options, the backend,
// the launch and its rendezvous, and the cases of this part, all validated.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "bench/backend_select.hpp"
#include "bench/case_matrix.hpp"
#include "bench/cli.hpp"
#include "bench/launcher.hpp"
#include "bench/rendezvous.hpp"

namespace shardaccum {

struct RunSetup {
  BenchOptions opts;
  BackendChoice choice;
  LaunchInfo launch;
  RendezvousSpec rendezvous;          // used by a multi-process launch only
  std::vector<CaseSpec> cases;        // this --part's
  size_t matrix_cases = 0;            // the whole matrix, before --part keeps one slice
  std::vector<LeftOutCase> left_out;  // cases of the axes no configuration of their system runs
  std::vector<std::string> notes;     // what the axes resolved to that the user did not ask for

  /// One process per GPU (--launcher env), not rank threads of one process.
  bool processes() const { return launch.launcher != "threads"; }
  /// The process that prints and writes the results.
  bool reporter() const { return launch.rank == 0; }
};

/// Parses argv, picks the backend and the launcher, checks the launch
/// (bench/multiprocess_setup.hpp), builds the matrix, validates all of it (validate_cases) and
/// keeps this --part. nullopt when
/// --help was printed. Throws UsageError with the message of the CliError or std::invalid_argument
/// that named the bad input, from "rank N: " on a rank other than 0.
std::optional<RunSetup> resolve_run(int argc, char** argv);

/// Prints the setup's notes and its left-out cases on stderr (the reporter only), once the output
/// files are validated: an error in them comes first, not after these.
void print_notices(const RunSetup& s);

/// Applies the backend's default job (default_job of `choice`'s backend and default world size,
/// which a multi-process launch has fixed) to what the command line left out: the default models
/// in `choice`, and, when --model was not given, its --warmup and --steps unless they were.
void apply_default_job(BenchOptions& opts, BackendChoice& choice);

/// Checks before any work that every case can be judged and told apart. Throws CliError naming
/// the flag: no case, two layouts of one name, a case listed twice, or a dtype/gen/K/world size
/// whose oracle bound is too loose to tell a lost micro-batch from rounding.
void validate_cases(const std::vector<CaseSpec>& cases);

}  // namespace shardaccum
