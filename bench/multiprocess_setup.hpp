#pragma once
// A multi-process launch (--launcher env: one process per GPU): its checks before any work, the
// hash every rank must agree on, and the rendezvous that joins the processes
// (bench/rendezvous.hpp).
#include <map>
#include <string>
#include <vector>

#include "bench/backend_select.hpp"
#include "bench/case_matrix.hpp"
#include "bench/cli.hpp"
#include "bench/launcher.hpp"
#include "bench/rendezvous.hpp"

namespace shardaccum {

/// For a launch of several processes: checks that it runs the cuda backend (CliError naming
/// --launcher otherwise), makes `choice`'s world the launch's and parses --rendezvous. For one
/// process: a given --rendezvous is still parsed (a malformed spec is an error even where unused)
/// and a note says it is unused. Returns the spec (default for one process). Throws CliError or
/// std::invalid_argument naming the flag.
RendezvousSpec setup_launch(const BenchOptions& opts, const LaunchInfo& launch,
                            BackendChoice& choice);

/// Under a multi-process launch every --world-size must be its process count (one rank each).
/// Throws CliError naming --world-size.
void check_launch_world_sizes(const MatrixAxes& axes, const LaunchInfo& launch);

/// The ranks of a multi-process launch must run the same binary on the same cases and steps: a
/// hash (FNV-1a, 64 bits) of the executable's bytes, the names of the cases that will run, the
/// settings that change what a step does (`reps`: --benchmark_repetitions as given) and the cases
/// this process skips as not fitting (`skips`). "HASH/N-cases/M-skipped".
std::string build_hash(const std::vector<std::string>& run_names, const BenchOptions& o,
                       const std::string& reps, const std::map<std::string, std::string>& skips);

/// Before any GPU work: every rank checks through the rendezvous that all run `hash`, and gets
/// NCCL's unique id from rank 0; the pool then joins the world as this process's rank, on its
/// local GPU. Nothing else is exchanged. Throws RunFailure ("rank N: " + the rendezvous's message,
/// with a hint for a Slurm batch script that is no launch). A no-op without CUDA.
void join_processes(BackendPool& pool, const RendezvousSpec& rendezvous, const LaunchInfo& launch,
                    const std::string& hash, double timeout_s);

}  // namespace shardaccum
