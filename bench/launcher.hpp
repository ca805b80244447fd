#pragma once
// Reads the environment of a multi-process launcher (torchrun, Slurm, OpenMPI) so that one process
// per GPU can join one world (docs/DESIGN.md §4). Only NCCL's unique id is exchanged between the
// processes (bench/rendezvous.hpp); everything else comes from the launcher's variables.
#include <functional>
#include <optional>
#include <string>

namespace shardaccum {

/// Where this process sits in a multi-process launch.
struct LaunchInfo {
  std::string launcher = "threads";  ///< "threads", "torchrun", "slurm" or "openmpi"
  int rank = 0;                      ///< global rank, 0 <= rank < world_size
  int world_size = 1;                ///< number of processes in the launch
  int local_rank = 0;                ///< rank within this node (picks the GPU), >= 0
  std::string master_addr;           ///< MASTER_ADDR if set (host of rank 0), else empty
  int master_port = 0;               ///< MASTER_PORT if set (1..65535), else 0
  /// TORCHELASTIC_USE_AGENT_STORE is set: torchrun's agent already listens on MASTER_PORT.
  bool agent_store = false;
};

/// Looks a variable up in the process environment (std::getenv); nullptr when unset.
const char* system_getenv(const char* name);

/// Reads the launcher's environment through `getenv`, in this precedence:
///  - torchrun: RANK, WORLD_SIZE, LOCAL_RANK (detected when RANK or WORLD_SIZE is set);
///  - OpenMPI:  OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK
///    (detected when OMPI_COMM_WORLD_RANK is set; before Slurm, whose job variables mpirun's ranks
///    inherit inside a batch job);
///  - Slurm:    SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (detected when SLURM_PROCID is set).
/// MASTER_ADDR and MASTER_PORT are read for every launcher when set (they are optional here; the
/// default tcp rendezvous needs them). An empty value counts as unset.
/// Returns std::nullopt when none of the launchers is detected.
/// Throws std::invalid_argument naming the variable and its value when a detected launcher's
/// variable is missing, is not a decimal integer, or is out of range (0 <= rank < world size,
/// world size >= 1, local rank >= 0, MASTER_PORT in 1..65535).
std::optional<LaunchInfo>
launch_from_env(const std::function<const char*(const char*)>& getenv = system_getenv);

/// Resolves --launcher `mode`:
///  - "threads": a single process (rank 0 of 1; ranks are threads inside it);
///  - "env": requires a launcher environment (launch_from_env), else throws std::invalid_argument
///    naming `--launcher env` and the variables it looked for;
///  - "auto": the environment when one is detected with a world size above 1, else "threads" (a
///    batch script's or a one-task srun's world of 1 keeps every visible GPU in one process).
/// Throws std::invalid_argument naming --launcher for any other mode, and whatever launch_from_env
/// throws for a malformed environment (also under "auto": a half-set environment is an error).
LaunchInfo resolve_launcher(const std::string& mode,
                            const std::function<const char*(const char*)>& getenv = system_getenv);

}  // namespace shardaccum
