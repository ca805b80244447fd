#include "bench/launcher.hpp"

#include <charconv>
#include <cstdlib>
#include <stdexcept>

namespace shardaccum {

const char* system_getenv(const char* name) { return std::getenv(name); }

namespace {

using Getenv = std::function<const char*(const char*)>;

const char* lookup(const Getenv& getenv, const char* name) {
  const char* v = getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

[[noreturn]] void bad(const std::string& launcher, const char* name, const std::string& value,
                      const std::string& why) {
  throw std::invalid_argument(
      launcher + " environment: " + name + "='" + value + "' " + why +
      " (fix the variable, or pass --launcher threads to ignore the launcher's variables)");
}

int parse_int(const std::string& launcher, const char* name, const char* value) {
  const std::string s = value;
  int out = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size())
    bad(launcher, name, s, "is not a decimal integer");
  return out;
}

int required_int(const Getenv& getenv, const std::string& launcher, const char* name) {
  const char* v = lookup(getenv, name);
  if (v == nullptr)
    throw std::invalid_argument(
        launcher + " environment: " + name +
        " is not set (set it, or pass --launcher threads to ignore the launcher's variables)");
  return parse_int(launcher, name, v);
}

struct Names {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local;
};

// OpenMPI before Slurm: mpirun inside a batch job hands its ranks the job's SLURM_* variables too
// (every rank would read SLURM_PROCID=0), while OMPI_COMM_WORLD_* are set by mpirun itself.
constexpr Names kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

bool detected(const Getenv& getenv, const Names& n) {
  if (lookup(getenv, n.rank) != nullptr) return true;
  // torchrun-style scripts sometimes set WORLD_SIZE first; a half-set torchrun env is an error.
  return std::string(n.launcher) == "torchrun" && lookup(getenv, n.size) != nullptr;
}

}  // namespace

std::optional<LaunchInfo> launch_from_env(const Getenv& getenv) {
  for (const Names& n : kLaunchers) {
    if (!detected(getenv, n)) continue;
    LaunchInfo info;
    info.launcher = n.launcher;
    info.rank = required_int(getenv, info.launcher, n.rank);
    info.world_size = required_int(getenv, info.launcher, n.size);
    info.local_rank = required_int(getenv, info.launcher, n.local);
    if (info.world_size < 1)
      bad(info.launcher, n.size, std::to_string(info.world_size), "must be at least 1");
    if (info.rank < 0 || info.rank >= info.world_size)
      bad(info.launcher, n.rank, std::to_string(info.rank),
          "must be in 0.." + std::to_string(info.world_size - 1) + " (" + n.size + "=" +
              std::to_string(info.world_size) + ")");
    if (info.local_rank < 0)
      bad(info.launcher, n.local, std::to_string(info.local_rank), "must not be negative");
    info.agent_store = lookup(getenv, "TORCHELASTIC_USE_AGENT_STORE") != nullptr;
    if (const char* addr = lookup(getenv, "MASTER_ADDR")) info.master_addr = addr;
    if (const char* port = lookup(getenv, "MASTER_PORT")) {
      info.master_port = parse_int(info.launcher, "MASTER_PORT", port);
      if (info.master_port < 1 || info.master_port > 65535)
        bad(info.launcher, "MASTER_PORT", port, "must be a port in 1..65535");
    }
    return info;
  }
  return std::nullopt;
}

LaunchInfo resolve_launcher(const std::string& mode, const Getenv& getenv) {
  if (mode == "threads") return LaunchInfo{};
  if (mode != "env" && mode != "auto")
    throw std::invalid_argument("--launcher '" + mode + "': expected threads, env or auto");
  if (auto info = launch_from_env(getenv)) {
    // A batch script or a one-task srun sets a launcher's variables for a world of 1: auto keeps
    // the threaded mode (every visible GPU) there; env means it.
    if (mode == "auto" && info->world_size == 1) return LaunchInfo{};
    return *info;
  }
  if (mode == "auto") return LaunchInfo{};
  std::string looked;
  for (const Names& n : kLaunchers) {
    looked += looked.empty() ? "" : "; ";
    looked += std::string(n.launcher) + ": " + n.rank + ", " + n.size + ", " + n.local;
  }
  throw std::invalid_argument("--launcher env: no launcher environment found (looked for " +
                              looked +
                              "); start with torchrun, srun or mpirun, or use --launcher threads");
}

}  // namespace shardaccum
