#include "bench/multiprocess_setup.hpp"

#include <cstdint>
#include <cstdio>
#include <fstream>

#include "bench/exit_codes.hpp"
#if defined(SHARDACCUM_HAVE_CUDA)
#include "strategies/backend/cuda_backend.hpp"
#endif

namespace shardaccum {

RendezvousSpec setup_launch(const BenchOptions& opts, const LaunchInfo& launch,
                            BackendChoice& choice) {
  if (launch.launcher != "threads") {
    if (choice.name != "cuda")
      throw CliError(
          "--launcher " + opts.launcher + ": " + launch.launcher + " started " +
          std::to_string(launch.world_size) + (launch.world_size == 1 ? " process" : " processes") +
          ", but one process per GPU needs the cuda backend (backend here: " + choice.name + ", " +
          (choice.why == "requested" ? "--backend " + opts.backend : choice.why) +
          "); for the host backend's simulated ranks run one process with --launcher threads");
    choice.max_world = choice.default_world = launch.world_size;
    return parse_rendezvous(opts.rendezvous, launch);
  }
  if (!opts.rendezvous.empty()) {
    parse_rendezvous(opts.rendezvous, launch);  // a malformed spec is an error even where unused
    std::fprintf(stderr,
                 "shardaccum_bench: note: --rendezvous is used only by a multi-process launch "
                 "(--launcher env); this run is one process\n");
  }
  return {};
}

void check_launch_world_sizes(const MatrixAxes& axes, const LaunchInfo& launch) {
  if (launch.launcher == "threads") return;
  for (int w : axes.world_sizes)
    if (w != launch.world_size)
      throw CliError("--world-size " + std::to_string(w) + ": this " + launch.launcher +
                     " launch has " + std::to_string(launch.world_size) +
                     " processes, one rank each; leave --world-size "
                     "out or give " +
                     std::to_string(launch.world_size));
}

std::string build_hash(const std::vector<std::string>& run_names, const BenchOptions& o,
                       const std::string& reps, const std::map<std::string, std::string>& skips) {
  uint64_t h = 1469598103934665603ull;
  const auto mix = [&](const char* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<uint8_t>(p[i])) * 1099511628211ull;
  };
  std::ifstream exe("/proc/self/exe", std::ios::binary);
  std::vector<char> buf(1 << 20);
  while (exe.read(buf.data(), buf.size()) || exe.gcount() > 0)
    mix(buf.data(), static_cast<size_t>(exe.gcount()));
  std::string settings = "warmup=" + std::to_string(o.warmup) +
                         " steps=" + std::to_string(o.steps) + " check=" + o.check +
                         " reps=" + reps + " seed=" + std::to_string(o.seed) + " gen=" + o.gen +
                         " cupti=" + o.cupti + " ceilings=" + o.ceilings +
                         " trace_steps=" + std::to_string(o.trace_steps) + "\n";
  for (const auto& n : run_names) settings += n + "\n";
  // Cases this process skips as not fitting its host: a process of another host that would run them
  // must not wait for it in their collectives.
  for (const auto& [n, why] : skips) settings += "skip " + n + "\n";
  mix(settings.data(), settings.size());
  char out[64];
  std::snprintf(out, sizeof out, "%016llx/%zu-cases/%zu-skipped",
                static_cast<unsigned long long>(h), run_names.size(), skips.size());
  return out;
}

void join_processes(BackendPool& pool, const RendezvousSpec& rendezvous, const LaunchInfo& launch,
                    const std::string& hash, double timeout_s) {
#if defined(SHARDACCUM_HAVE_CUDA)
  try {
    std::vector<uint8_t> id;
    if (launch.rank == 0) id = nccl_unique_id();
    id = exchange(rendezvous, launch, id, hash, timeout_s);
    const int gpus = cuda_device_count();
    pool.set_process(launch.rank, gpus > 0 ? launch.local_rank % gpus : 0, std::move(id));
  } catch (const std::exception& e) {
    std::string hint;
    if (launch.launcher == "slurm" &&
        std::string(e.what()).find("missing ranks") != std::string::npos)
      hint = "a batch script's own SLURM_* variables look like a launch of SLURM_NTASKS processes; "
             "start the "
             "ranks with srun, or run one process with --launcher threads";
    throw RunFailure(e.what(), "rank " + std::to_string(launch.rank) + ": ", hint);
  }
#else
  (void)pool, (void)rendezvous, (void)launch, (void)hash, (void)timeout_s;
#endif
}

}  // namespace shardaccum
