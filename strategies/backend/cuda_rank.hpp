#pragma once
// One rank of the cuda backend (docs/DESIGN.md §4): its streams, memory, communicator, and the
// worker thread of its host tasks. Internal: strategies see only backend.hpp.
//
// Ordering. Every operation is issued on one of the rank's four streams (compute, comm, copy and
// h2d, the second copy stream). Besides the events the strategies record and wait on, the backend
// orders each operation after the last write of every operand on another stream (and a write after
// the other streams' reads), using the end event of those operations: a strategy that forgets a
// wait cannot produce a race, only less overlap. Views (Buffer::view) of one buffer are the
// exception: they are ordered among themselves by the strategy's events (cuda_hazards.cpp).
// A buffer is freed on the stream that used it last, after the others' uses of it.
//
// The definitions, by concept: cuda_rank.cpp (construction, validation), cuda_hazards.cpp
// (cross-stream ordering, host loops), cuda_host_tasks.cpp (the worker), cuda_memory.cpp (pool,
// pinned arena, deferred frees), cuda_operations.cpp, cuda_rank_events.cpp (events, any_rank),
// cuda_step.cpp (step timing, CUPTI and trace), cuda_gate.cpp (the reduce-scatter's gate and
// stamps), cuda_oracle_check.cpp (check_shard).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "strategies/backend/backend.hpp"
#include "strategies/backend/cuda_check.hpp"
#include "strategies/backend/cuda_event_pool.hpp"
#include "strategies/backend/cuda_gemm.hpp"
#include "strategies/backend/cuda_handles.hpp"
#include "strategies/backend/cuda_kernels.hpp"
#include "strategies/backend/cuda_pinned_arena.hpp"
#include "strategies/backend/cuda_process_link.hpp"

namespace shardaccum::cuda {

/// Whether ops' streams are held until the host has issued them (CudaRank::hold_stream,
/// docs/DESIGN.md §6): SHARDACCUM_HOLD_OPS=0 off, any other non-empty value on, unset or empty
/// kHoldOpsDefault; and only where `device` supports 64-bit stream memory operations. Reads the
/// environment on each call; never throws.
inline constexpr bool kHoldOpsDefault = false;
bool op_holds_on(int device);
/// SHARDACCUM_HOLD_OPS (or kHoldOpsDefault) alone, without asking the device.
bool holds_wanted();

class CudaWorld;

/// One rank: its streams, memory, communicator, and a worker thread for host tasks.
///
/// Threads. The rank's thread issues everything; host tasks (the CPU adds and pinned scales the
/// strategies queue with host_task) run in order on the worker thread, so the rank's thread goes
/// on issuing the next units' copies meanwhile. `mu_` guards the bookkeeping both share; no wait
/// and no host loop runs under it. A task may touch pinned buffers that existed when it was
/// queued, so the rank's thread waits for the queued tasks before it uses or frees such a buffer
/// (`task_epoch`); buffers allocated later (the next units' stagings) do not wait.
class CudaRank final : public RankBackend {
 public:
  CudaRank(CudaWorld& world, int rank, int device);
  ~CudaRank() override;

  int rank() const override { return rank_; }
  int world_size() const override;
  Buffer allocate(MemSpace space, DType dtype, uint64_t numel, Stream s) override;
  /// Pinned from the arena, counted at cached_host_bytes (PyTorch's power-of-two host blocks).
  Buffer allocate_host_cached(DType dtype, uint64_t numel, Stream s,
                              std::span<const uint64_t> pieces) override;
  Buffer allocate_pinned_counted(DType dtype, uint64_t numel, Stream s, uint64_t counted) override;
  void set_cpu_add_threads(int threads) override { add_threads_ = threads; }
  void set_cpu_add_split(CpuAddSplit split) override { add_split_ = split; }
  void set_device_add_grid(DeviceAddGrid grid) override { add_grid_ = grid; }
  /// Swaps the comm stream for the one of priority `p` (two are made at start), after the comm
  /// stream's work so far has finished. Throws BackendError inside a step.
  void set_comm_priority(CommPriority p) override;
  void copy(Buffer& dst, const Buffer& src, Stream s) override;
  /// As copy, counted in param_h2d_bytes (H2D) or param_d2d_bytes (device to device, the
  /// backward phase) (--param-traffic on); into the device only.
  void copy_param(Buffer& dst, const Buffer& src, Stream s) override;
  void add(Buffer& dst, const Buffer& src, MemSpace space, Stream s) override;
  void convert(Buffer& dst, const Buffer& src, Stream s) override;
  void scale(Buffer& dst, double factor, Stream s) override;
  void generate(Buffer& grad, const GradKey& key, bool accumulate, Stream s) override;
  void gemm_backward(Buffer& grad, const FlatParam& unit, uint64_t tokens, bool tf32,
                     Buffer& workspace, Stream s) override;  // cuda_gemm.cpp
  void reduce_scatter(Buffer& out, const Buffer& in, ReduceOp op = ReduceOp::sum) override;
  Event record(Stream s) override;
  void wait(Stream waiter, Event e) override;
  void host_wait(Event e) override;
  bool host_ready(Event e) override;
  void host_task(Event e, std::function<void()> task) override;
  void near_device(const std::function<void()>& fn) override;  // cuda_placement.cpp
  bool any_rank(bool mine) override;
  ShardCheck check_shard(const Buffer& shard, const OracleKey& key) override;
  void begin_step() override;
  StepMetrics end_step() override;
  void release(Buffer& b) noexcept override;
  MemorySnapshot memory_snapshot() override;
  /// cudaStreamSynchronize on every stream once all are idle (drained): lets the pool reuse and
  /// trim what was freed on another stream. Caller holds mu_ or is the rank's only thread.
  void observe_idle_streams();

  // ---- for the world and the ceilings ----
  int device() const { return device_; }
  cudaStream_t stream(Stream s) const { return streams_[static_cast<int>(s)].get(); }
  cudaMemPool_t pool() const { return pool_.get(); }
  ncclComm_t comm() const { return comm_.get(); }
  /// A new communicator (init_comms): the count of collectives starts again.
  void set_comm(UniqueComm c) {
    comm_ = std::move(c);
    collectives_ = 0;
  }
  /// Takes the communicator out for teardown (cuda_comms.cpp); the rank has none afterwards.
  UniqueComm take_comm() {
    collectives_ = 0;
    return std::move(comm_);
  }
  /// Under a multi-process launch: the link to the other processes' ranks, else nullptr.
  ProcessLink* link() const { return link_.get(); }
  void set_link(std::unique_ptr<ProcessLink> l) { link_ = std::move(l); }
  /// This rank's index among the ranks of this process (the host barrier's slot).
  int local_index() const;
  uint64_t collectives_issued() const { return collectives_; }
  WaitPolicy policy() const;
  /// Waits for the queued host tasks (skipping those not started with `cancel`); returns the
  /// first error a task threw (and forgets it).
  std::exception_ptr settle_tasks(bool cancel);
  /// After a failed run: tasks cancelled, streams drained, pending accesses forgotten.
  void recover(const WaitPolicy& policy);
  /// The %globaltimer start stamps (ns) of the last step's reduce-scatters, in issue order: what
  /// the process's other ranks read between the two barriers of end_step (cuda_gate.cpp).
  const std::vector<uint64_t>& published_gate_starts() const { return published_starts_; }
  int pinned_growths() const { return pinned_growths_.load(); }
  uint64_t pinned_capacity() const { return pinned_capacity_.load(); }

 private:
  using Lock = std::unique_lock<std::mutex>;
  struct Access {
    cudaEvent_t ev = nullptr;
    int stream = -1;
  };
  struct Alloc {
    MemSpace space = MemSpace::device;
    uint64_t bytes = 0;
    uint64_t counted = 0;  // host bytes in the peaks: `bytes`, or its power of two (host cached)
    Access write;          // the last write (or the allocation, on its stream)
    cudaEvent_t reads[4] = {};  // the last read on each stream since that write
    // The last access through a view (Buffer::view) on each stream: views of one allocation are
    // ordered by their strategy (disjoint chunks), whole-buffer ops wait for them all.
    cudaEvent_t views[4] = {};
    int last_stream = -1;     // the stream of the most recent access
    uint64_t task_epoch = 0;  // host tasks queued before the allocation
  };
  struct Use {
    const Buffer* b;
    bool write;
  };
  struct TimedOp {
    Phase phase;
    cudaEvent_t start, end;
    int stream;    // the rank's stream it ran on
    bool is_copy;  // a cudaMemcpyAsync (CUPTI's MEMCPY records trace those when it runs)
    int stamp;     // its kernel stamp's slot, or -1: timed by its events
  };
  struct DeferredFree {
    void* p;
    std::vector<cudaEvent_t> pending;
  };
  struct UserEvent {
    size_t slot;
    uint64_t step;
  };
  struct HostTask {
    cudaEvent_t ev = nullptr;
    std::function<void()> fn;
  };

  std::string who(const char* op) const;
  /// copy and copy_param: `param` counts an H2D in param_h2d_bytes instead of h2d_bytes, and a
  /// device copy in param_d2d_bytes.
  void copy_counted(Buffer& dst, const Buffer& src, Stream s, bool param);
  /// The allocation holding `b` (`b` itself, or a view inside it: *whole false), or nullptr.
  Alloc* find_alloc(const Buffer& b, bool* whole = nullptr);
  /// find_alloc that throws BackendError when `b` is not live (the hazards' lookup).
  Alloc& alloc_of(const Buffer& b, bool& whole);
  Alloc& live(const Buffer& b, const char* op, const char* role);
  Alloc& in_space(const Buffer& b, MemSpace s, const char* op, const char* role);
  /// Orders stream s after the pending accesses of `uses` on the other streams (the hazards).
  void wait_hazards(int s, std::initializer_list<Use> uses);
  /// `hold` false: the stream is not held (cuBLAS may load its kernels, and synchronise the
  /// context, inside a launch: a held stream would then never be released).
  cudaEvent_t begin_gpu_op(int s, std::initializer_list<Use> uses, bool hold = true);
  /// `end`: the op's end event when the caller recorded it already (with work after it that must
  /// stay outside the bracket); else recorded here.
  void end_gpu_op(int s, Phase p, cudaEvent_t start, std::initializer_list<Use> uses,
                  bool is_copy = false, cudaEvent_t end = nullptr);
  /// --trace: the step's GPU ops from the backend's own timing (kernel stamps where `stamped[i]`,
  /// else CUDA events; copies included), one event per op on its stream's track, placed by `at`
  /// (ms since the step's start event, per op of ops_), and the step's span over them and its
  /// host tasks on the "step" track.
  void trace_ops_from_events(const std::vector<std::pair<double, double>>& at,
                             const std::vector<char>& stamped);

  // ---- the reduce-scatter's gate (cuda_gate.cpp, docs/DESIGN.md §6)
  /// Mapped pinned [start ns, end ns, timed out] of one reduce-scatter: host and device pointers.
  struct GateStamps {
    uint64_t* host = nullptr;
    uint64_t* dev = nullptr;
  };
  /// The next free stamp slot of the step (a new mapped block when the step has used them all);
  /// allocates the gate flag on first use. Call before launching the gate.
  GateStamps next_gate_stamps();
  /// The next kernel stamp slot of the step (docs/DESIGN.md §6), for the launch between
  /// begin_gpu_op and end_gpu_op, which gives it to the op; null outside a step or when the step
  /// has used every slot (the op is then timed by its events).
  uint64_t* next_kernel_stamp();
  /// Allocates the mapped gate flag on first use.
  void ensure_gate_flag();
  /// Holds stream `s` (cuStreamWaitValue64 on the gate flag: the GPU's front end waits, no SM)
  /// until the next release_gates, so that an op's start event is when the stream reaches it
  /// after the host has issued it, not the host's issue delay; end_gpu_op releases it after the
  /// op's end event is recorded. Only where op_holds_on(device_) (SHARDACCUM_HOLD_OPS) and 64-bit
  /// stream memory operations; else returns at once. Throws CudaError when the wait cannot be
  /// queued.
  void hold_stream(int s);
  /// The watchdog's loop: every 50 ms, releases a hold pending for more than 1 s and warns once.
  void watch_holds(std::stop_token stop) noexcept;
  /// Writes `seq` into the gate flag unless it holds more: every gate up to `seq` runs on.
  void release_gates(uint64_t seq) noexcept;
  /// After the step's end event completed (`ok`; else figures are not read): publishes this
  /// rank's start stamps, waits for the process's other ranks (two host barriers, every rank of
  /// the process arrives once per step), and fills m_.nccl_wait_ms / nccl_link_ms from the latest
  /// rank's start per collective. Throws WaitTimeout; a peer's failure leaves the wait 0.
  void gate_figures(Lock& l, bool ok);
  /// A host loop over pinned operands: after the GPU's pending accesses to them, outside mu_.
  void host_op(Lock& l, Phase p, std::initializer_list<Use> uses, const char* op,
               const std::function<void()>& loop);
  void sweep_deferred(bool wait_all);
  void* allocate_pinned(uint64_t bytes);
  cudaEvent_t user_event(Event e, const char* op);
  /// Waits for all four streams (comm's asynchronous errors watched when `watch_comm`).
  void drain(const WaitPolicy& policy, const std::string& what, bool watch_comm = true);
  /// After drain: every recorded access is complete, so hazards, deferred pinned frees and the
  /// event pools are forgotten.
  void forget_pending();

  // host tasks
  bool on_worker() const;
  void worker_loop();
  /// Waits (mu_ not held) until `upto` tasks have finished.
  void wait_tasks(uint64_t upto, const char* what);
  /// With mu_ held by l: waits, unlocked, for the tasks that may touch these pinned operands.
  void after_tasks(Lock& l, std::initializer_list<const Buffer*> operands, const char* op);

  CudaWorld& world_;
  int rank_, device_;
  UniqueStream streams_[4];  // compute, comm, copy, h2d (kStreamCount)
  UniqueStream aux_;         // oracle work: not in the step
  /// The comm stream of the other priority (set_comm_priority swaps it with streams_[comm]).
  UniqueStream comm_other_;
  CommPriority comm_priority_ = CommPriority::greatest;  // streams_[comm]'s
  UniqueMemPool pool_;
  UniqueComm comm_;
  uint64_t collectives_ = 0;
  std::unique_ptr<ProcessLink> link_;

  std::mutex mu_;  // guards everything below up to the host-task queue
  PinnedArena arena_;
  EventPool timing_{true}, marks_{false};
  std::vector<UniqueEvent> user_events_;
  std::vector<size_t> user_free_;
  std::unordered_map<uint64_t, UserEvent> user_live_;
  uint64_t next_event_id_ = 0;
  std::map<const void*, Alloc> allocs_;  // ordered: a view finds the allocation below it
  std::vector<DeferredFree> deferred_;
  uint64_t pinned_current_ = 0, pinned_peak_ = 0;
  uint64_t pageable_current_ = 0, pageable_peak_ = 0;  // plain malloc'ed host memory
  int add_threads_ = 0;  // set_cpu_add_threads; 0: the world's host_threads()
  CpuAddSplit add_split_ = CpuAddSplit::blocks;         // set_cpu_add_split
  DeviceAddGrid add_grid_ = DeviceAddGrid::two_per_sm;  // set_device_add_grid
  std::atomic<int> pinned_growths_{0};
  std::atomic<uint64_t> pinned_capacity_{0};
  bool in_step_ = false;
  uint64_t step_seq_ = 0;
  cudaEvent_t step_start_ = nullptr;
  std::chrono::steady_clock::time_point step_host_t0_{};  // host time of step_start_ (GPU idle)
  uint64_t cupti_t0_ = 0;  // CUPTI timestamp at begin_step: the window of the step's records
  std::vector<TimedOp> ops_;
  StepMetrics m_;
  std::chrono::steady_clock::time_point host_first_{}, host_last_{};  // the step's host tasks
  std::vector<std::pair<double, double>> host_adds_;  // the step's CPU adds, ms since step_host_t0_
  PinnedMemory gate_flag_;                            // mapped: the host's release sequence number
  uint64_t* gate_flag_dev_ = nullptr;
  uint64_t gate_seq_ = 0;  // gates issued so far (writing it releases them all)
  std::vector<PinnedMemory> stamp_blocks_;
  std::vector<GateStamps> step_gates_;  // this step's reduce-scatters, in issue order
  std::vector<uint64_t> published_starts_;
  bool gate_timeout_warned_ = false;
  int hold_ops_ = -1;  // hold_stream: -1 not yet asked, 0 off, 1 on
  // Kernel stamps: slot 0 the step's reference (%globaltimer at its start event), then one per
  // stamped op; copied to mapped memory by a kernel at the step's end (cuda_step.cpp).
  static constexpr int kKernelStampSlots = 8192;
  DeviceMemory kernel_stamps_;
  PinnedMemory kernel_stamps_host_;
  uint64_t* kernel_stamps_host_dev_ = nullptr;
  int stamps_used_ = 0;     // this step's slots, slot 0 included
  int pending_stamp_ = -1;  // the slot next_kernel_stamp gave the op being issued
  // The hold's watchdog (cuda_gate.cpp): a hold older than kHoldWatchdogNs is released by it,
  // so that a launch which blocks on the device (a context synchronisation) cannot hang the run.
  std::atomic<uint64_t> hold_since_ns_{0};  // steady-clock ns of the pending hold; 0 none
  std::atomic<uint64_t> hold_seq_{0};       // its sequence number
  std::atomic<bool> hold_watchdog_fired_{false};
  std::jthread hold_watchdog_;  // started with the first hold; stopped and joined first
  DeviceMemory check_partials_, check_result_, check_staging_, check_prefixes_;

  std::mutex task_mu_;  // the host-task queue
  std::condition_variable task_cv_;
  std::deque<HostTask> tasks_;
  std::atomic<uint64_t> tasks_queued_{0}, tasks_done_{0};
  std::exception_ptr task_error_;
  bool task_cancel_ = false, task_stop_ = false;
  std::atomic<std::thread::id> worker_id_{};  // set by the worker itself: on_worker() compares
  std::thread worker_;
  // near_device's CPUs (machine::host_add_placement), read at its first call; empty: not placed.
  std::optional<std::vector<int>> placement_;
  GemmOperandFill gemm_filled_;  // what the step's GEMM workspace holds; reset when it is freed
  GemmHandle gemm_;              // --backward gemm's cuBLAS handle (cuda_gemm.cpp); destroyed first
};

}  // namespace shardaccum::cuda
