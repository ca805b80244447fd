#pragma once
// The world of the cuda backend (docs/DESIGN.md §4): the ranks of this process, one thread each,
// their communicators, failures and recovery. Internal: strategies see only backend.hpp.
//
// The definitions, by concept: cuda_world.cpp (construction, teardown, the host barrier),
// cuda_context.cpp (the context JSON), cuda_rank_threads.cpp (run_ranks), cuda_comms.cpp (NCCL
// communicators), cuda_watchdog.cpp (watchdog, abandonment), cuda_run.cpp (run, recovery, memory
// release, allgather), cuda_ceilings.cpp (the ceilings), cuda_backend.cpp (the factory).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/ceilings.hpp"
#include "profiling/cupti_collector.hpp"
#include "strategies/backend/backend.hpp"
#include "strategies/backend/cuda_backend.hpp"
#include "strategies/backend/cuda_check.hpp"
#include "strategies/backend/cuda_rank.hpp"
#include "strategies/backend/rank_barrier.hpp"

namespace shardaccum::cuda {

class CudaWorld final : public Backend {
 public:
  explicit CudaWorld(const CudaBackendOptions& opts);
  ~CudaWorld() override;

  std::string name() const override { return "cuda"; }
  int world_size() const override { return opts_.world_size; }
  std::vector<int> local_ranks() const override;
  void allgather(std::vector<std::vector<uint8_t>>& per_rank) override;
  void release_cached_memory() override;
  void run(const std::function<void(RankBackend&)>& fn) override;
  nlohmann::json context() const override;
  bool gpu_times() const override { return true; }
  int host_task_depth() const override { return opts_.host_task_depth; }
  int host_add_threads() const override { return host_threads_; }
  /// The CUPTI collector, or nullptr (--cupti off, or another subscriber such as nsys).
  cupti::CuptiCollector* collector() const { return collector_; }

  /// Ceilings measured on all ranks at once (cuda_ceilings.cpp); also stored for context() and
  /// ceilings().
  nlohmann::json measure_ceilings();
  /// The last measured ceilings: the means written as the context's ceiling_*_gbps keys.
  Ceilings ceilings() const override;

  const CudaBackendOptions& options() const { return opts_; }
  int host_threads() const { return host_threads_; }
  /// The host barrier of this process's ranks (slot: the rank's local index). A timeout throws
  /// WaitTimeout (the communicators are then aborted), a failed peer PeerFailure.
  void host_barrier(const WaitPolicy& policy, const std::string& what);
  bool host_any(int slot, bool mine, const WaitPolicy& policy, const std::string& what);
  /// The last step's gate start stamps of local rank `local` (cuda_gate.cpp: read only between
  /// the two barriers of end_step).
  const std::vector<uint64_t>& gate_starts_of(int local) const {
    return ranks_[local]->published_gate_starts();
  }
  /// Ranks of this process: world_size, or 1 under a multi-process launch.
  int local_count() const { return static_cast<int>(ranks_.size()); }
  /// The global rank of local rank 0 (0, or process_rank).
  int rank_base() const { return std::max(opts_.process_rank, 0); }
  bool multi_process() const { return opts_.process_rank >= 0; }
  /// Under a multi-process launch, after a failure no rank can recover from (a peer process died,
  /// a collective hung): later calls fail at once and teardown calls neither NCCL nor CUDA, since
  /// ncclCommAbort can hang when a peer on the node died (NVIDIA/nccl#863). The caller ends the
  /// process (bench/main.cpp: std::_Exit after writing its results).
  bool abandoned() const override { return abandoned_; }
  /// Every rank of the world waits here: the host barrier, then (across processes) the link.
  void all_ranks_barrier(CudaRank& rank, const WaitPolicy& policy, const std::string& what);
  WaitPolicy policy() const { return {opts_.timeout_s, barrier_.failed_flag(), heartbeat()}; }
  /// The latest poll of any bounded wait of this world's threads (steady_ns): what the watchdog
  /// reads. Waits with their own policy (teardown, recovery) pass it too.
  std::atomic<int64_t>* heartbeat() const { return &last_poll_ns_; }

 private:
  /// Runs fn(i) on one thread per local rank i (device current); returns each one's exception.
  std::vector<std::exception_ptr> run_ranks(const std::function<void(int)>& fn);
  void init_comms();
  /// Finalizes and destroys the communicators, or aborts them (`abort`). Under a multi-process
  /// launch an abort abandons the world instead (see abandoned()).
  void destroy_comms(bool abort, const std::string& why = "") noexcept;
  void abandon(const std::string& why) noexcept;
  /// Under a multi-process launch: ends the process when a call outside the bounded waits makes no
  /// progress for timeout_s + 15 s while ranks are busy (an NCCL or CUDA call stuck on a dead
  /// peer).
  void watchdog_loop();
  /// Marks the ranks busy for the watchdog while alive.
  struct Busy {
    explicit Busy(CudaWorld& w);
    ~Busy();
    CudaWorld& w;
  };
  void recover(const std::vector<std::exception_ptr>& errors);
  /// The devices, versions and options of the context JSON (cuda_context.cpp), once at start.
  void build_static_context();

  CudaBackendOptions opts_;
  cupti::CuptiCollector* collector_ = nullptr;
  int host_threads_ = 1;
  RankBarrier barrier_;
  mutable std::atomic<int64_t> last_poll_ns_{0};  // before ranks_: their teardown waits write it
  std::vector<std::unique_ptr<CudaRank>> ranks_;
  bool comms_ok_ = false;
  bool abandoned_ = false;
  std::string dead_;                       // why the backend can no longer run, when it cannot
  std::atomic<int64_t> busy_since_ns_{0};  // 0: idle
  std::string busy_what_;
  std::atomic<bool> watchdog_stop_{false};
  std::thread watchdog_;
  nlohmann::json static_context_;
  mutable std::mutex ceilings_mutex_;
  nlohmann::json ceilings_ = nlohmann::json::object();
  Ceilings typed_ceilings_;  // the same figures as ceilings_' ceiling_*_gbps keys
};

/// Rethrows the root cause: the first error that is not a PeerFailure, else the first.
[[noreturn]] void rethrow_root(const std::vector<std::exception_ptr>& errors);

}  // namespace shardaccum::cuda
