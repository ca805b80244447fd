#pragma once
// Whether a case fits the machine, decided from the analytical model before the case does any GPU
// work: a case that cannot fit is skipped with the figures and what would fit; the others run.
#include <cstdint>
#include <optional>
#include <string>

#include <map>
#include <vector>

#include "bench/backend_select.hpp"
#include "bench/case_matrix.hpp"
#include "bench/case_predictions.hpp"
#include "strategies/backend/backend.hpp"
#include "strategies/model.hpp"

namespace shardaccum {

/// Host memory kept out of a case's reach: the process itself, CUPTI and trace buffers, the page
/// cache others need. 2 GiB plus 5% of what is available.
uint64_t host_memory_margin(uint64_t available_bytes);
/// Device memory kept out of a case's reach per rank: NCCL and CUDA workspaces, the oracle's
/// staging (64 MiB) and the pool's rounding. 2 GiB.
inline constexpr uint64_t kDeviceMemoryMargin = 2ull << 30;

/// What the machine can give one case. 0 for a budget means "not known yet" (not checked).
struct MemoryBudget {
  uint64_t host_available_bytes =
      0;  // /proc/meminfo MemAvailable (not RLIMIT_MEMLOCK: CUDA pins past it)
  uint64_t host_margin_bytes = 0;
  uint64_t device_free_bytes = 0;  // per rank: the least free after the CUDA context and NCCL start
  uint64_t device_margin_bytes = 0;
  int ranks_per_process = 1;  // threads of this process (--launcher threads: the world size)
  bool host_backend = false;  // the host backend keeps "device" memory in host memory too
  int host_task_depth = 0;    // Backend::host_task_depth(): pending CPU adds hold stagings

  uint64_t host_bytes() const {
    return host_available_bytes > host_margin_bytes ? host_available_bytes - host_margin_bytes : 0;
  }
  uint64_t device_bytes() const {
    return device_free_bytes > device_margin_bytes ? device_free_bytes - device_margin_bytes : 0;
  }
};

/// The least free device memory over every rank of `backend` (after its CUDA context, NCCL and
/// pool trim), gathered across the processes of a multi-process launch so they all skip alike.
/// 0 for a backend without device memory. Call between cases, on the main thread.
uint64_t least_device_free(Backend& backend);

/// MemAvailable from /proc/meminfo in bytes; 0 when it cannot be read.
uint64_t host_memory_available();

/// The case's needs by the model (`model`: its Prediction, with b.host_task_depth; the peaks per
/// rank) against `b`. nullopt when it fits;
/// otherwise the message: the figures in GB (1e9 bytes), where they come from, and what would fit
/// by the same model — a larger --world-size (up to 4096), another --offload, a bf16 --dtype.
/// A budget of 0 (device_free_bytes or host_available_bytes) is not checked.
std::optional<std::string> fit_problem(const CaseSpec& c, const Prediction& model,
                                       const MemoryBudget& b);

/// The budget of this run before any backend exists: host memory (MemAvailable and its margin),
/// the backend's pending CPU adds, and on the cuda backend of a one-process run the least free
/// memory of the devices the largest world uses, with only their primary contexts (a multi-process
/// launch checks its devices per case, agreed across processes). ranks_per_process is left at 1.
MemoryBudget run_budget(const std::vector<CaseSpec>& cases, const BackendChoice& choice,
                        bool processes);

/// The cases that cannot fit this machine by the model (name -> message, each also printed to
/// stderr), decided before any backend exists, so that no arena is pinned for them. `processes`:
/// a multi-process launch (one rank per process). Each case's device side is checked again once
/// its world has started (bench_cases.cpp).
std::map<std::string, std::string> up_front_fit_skips(const std::vector<CaseSpec>& cases,
                                                      const CasePredictions& models,
                                                      const MemoryBudget& budget, bool processes);

}  // namespace shardaccum
