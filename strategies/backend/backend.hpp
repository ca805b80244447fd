#pragma once
// The small backend the strategies are written against (docs/DESIGN.md §4): memory spaces, counted
// copies, adds, the reduce-scatter, streams and events. Strategies never call CUDA or NCCL.
//
// Two implementations: `host` (ranks are threads, arenas per memory space, the reference
// semantics) and `cuda` (one GPU per rank, NCCL, CUDA memory pools). A Backend owns the world;
// a RankBackend is one rank's view and is used only from that rank's thread.
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/buffer.hpp"
#include "common/ceilings.hpp"
#include "common/dtype.hpp"
#include "common/errors.hpp"
#include "common/gradient_gen.hpp"
#include "common/layout.hpp"
#include "common/memory_space.hpp"
#include "common/shard_check.hpp"
#include "common/step_metrics.hpp"
#include "common/streams.hpp"
#include "strategies/backend/comm_priority.hpp"
#include "strategies/backend/device_add_grid.hpp"
#include "strategies/backend/host_split.hpp"

namespace shardaccum {

/// What one rank holds between steps: levels, not peaks, read when the rank's streams are idle, so
/// that a long run can be checked to stay flat (the same figures at step 2 and step 60). 0 where a
/// backend has no such thing (the host backend has no device, pool or events).
struct MemorySnapshot {
  uint64_t device_free_bytes = 0;  // cudaMemGetInfo's free bytes on the rank's GPU
  uint64_t pool_reserved_bytes =
      0;  // the device pool's reserved bytes (cudaMemPoolAttrReservedMemCurrent)
  uint64_t pool_used_bytes = 0;        // of which in use (cudaMemPoolAttrUsedMemCurrent)
  uint64_t pinned_capacity_bytes = 0;  // pinned host memory the rank's arena holds
  uint64_t live_events = 0;            // CUDA events the rank has created (timing, marks, user)
  uint64_t live_buffers = 0;           // buffers allocated and not yet freed
  uint64_t cupti_records = 0;   // CUPTI activity records held by the collector (process-wide)
  uint64_t host_rss_bytes = 0;  // the process's resident set (/proc/self/statm)
};

/// The process's resident set in bytes (/proc/self/statm), 0 where it cannot be read.
uint64_t process_rss_bytes() noexcept;

/// The reduction of a reduce-scatter: the sum, or the sum divided by the world size (NCCL's
/// ncclAvg, FSDP2's ReduceOp.AVG for fp32/bf16; the division axis's `collective`).
enum class ReduceOp : uint8_t { sum, avg };

/// The pinned bytes of RankBackend::allocate_host_cached: cached_host_bytes(pieces, b) of `dtype`.
/// BackendError (naming `who`) when `pieces` do not sum to `numel`.
inline uint64_t host_cached_bytes(uint64_t numel, std::span<const uint64_t> pieces, DType dtype,
                                  const std::string& who) {
  uint64_t sum = 0;
  for (uint64_t n : pieces) sum += n;
  if (sum != numel)
    throw BackendError(who + ": host-cached allocation of " + std::to_string(numel) +
                       " elements in pieces summing to " + std::to_string(sum));
  return cached_host_bytes(pieces, dtype_bytes(dtype));
}

/// One rank's backend. Every operation is issued on a stream; the host backend runs it at once.
class RankBackend : public BufferOwner {
 public:
  ~RankBackend() override = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  /// Allocates `numel` elements at the point of use; contents are undefined (NaN on host).
  virtual Buffer allocate(MemSpace space, DType dtype, uint64_t numel, Stream s) = 0;
  /// Pinned host memory through a caching host allocator, as PyTorch's `pin_memory()` and
  /// `.to("cpu", non_blocking=True)` get it: one buffer of `numel` elements standing for one
  /// tensor per entry of `pieces` (element counts summing to numel), counted in peak_pinned_bytes
  /// at cached_host_bytes(pieces, b) (each tensor's power of two, docs/PRESETS.md F1) while it is
  /// alive. BackendError when the pieces do not sum to numel. The default, a backend without that
  /// accounting, is a plain pinned allocation.
  virtual Buffer allocate_host_cached(DType dtype, uint64_t numel, Stream s,
                                      std::span<const uint64_t> pieces) {
    (void)pieces;
    return allocate(MemSpace::pinned_host, dtype, numel, s);
  }
  /// Pinned host memory counted in peak_pinned_bytes at `counted` bytes while it is alive (0: its
  /// own bytes): a buffer standing for its share of a larger pinned block (DeepSpeed's flat
  /// buffers, strategies/offload/zero3_pinned.hpp). The default is a plain pinned allocation.
  virtual Buffer allocate_pinned_counted(DType dtype, uint64_t numel, Stream s, uint64_t counted) {
    (void)counted;
    return allocate(MemSpace::pinned_host, dtype, numel, s);
  }
  /// Counted copy of all of `src` into `dst` (same dtype and numel); direction from the spaces
  /// (a copy into pageable_host is also counted in d2h_pageable_bytes). Host to host: BackendError.
  virtual void copy(Buffer& dst, const Buffer& src, Stream s) = 0;
  /// The parameters' copies under --param-traffic on, into `dst` on the device: from a host space
  /// the H2D (FSDP2 _fsdp_param.py all_gather_inputs, `.to(device, non_blocking=True)` from pinned
  /// memory; FSDP1 _flat_param.py pre_unshard), counted in StepMetrics::param_h2d_bytes and not in
  /// h2d_bytes; from the device FSDP2's all-gather copy-out (_fsdp_collectives.py
  /// foreach_all_gather_copy_out), counted in param_d2d_bytes and timed in the backward phase (the
  /// compute stream's work of the unit). A host destination, or a backend without that accounting
  /// (the default): BackendError.
  virtual void copy_param(Buffer& dst, const Buffer& src, Stream s) {
    (void)dst, (void)src, (void)s;
    throw BackendError("this backend has no parameter copy (--param-traffic on)");
  }
  /// dst += src elementwise with dtype conversion, both in `space` (device add: accumulate phase;
  /// pinned_host add: the CPU add, cpu_add phase, whose operands may be in either host space,
  /// add_operand_in). An operand elsewhere is a BackendError.
  virtual void add(Buffer& dst, const Buffer& src, MemSpace space, Stream s) = 0;
  /// The OpenMP threads of the CPU adds issued from now on (--host-threads); 0: the rank's share
  /// (--threads), as before any call. A backend without a thread team ignores it.
  virtual void set_cpu_add_threads(int threads) { (void)threads; }
  /// How the CPU adds issued from now on split their elements over those threads (host_split.hpp):
  /// CpuAddSplit::blocks, the suite's, as before any call, or CpuAddSplit::torch, PyTorch's
  /// at::parallel_for. A backend without a thread team ignores it.
  virtual void set_cpu_add_split(CpuAddSplit split) { (void)split; }
  /// How the device adds issued from now on launch (device_add_grid.hpp):
  /// DeviceAddGrid::two_per_sm, the suite's, as before any call, or DeviceAddGrid::torch, every SM
  /// as PyTorch's elementwise kernels. Set per case by StepDriver (CasePlan::device_add_grid). A
  /// backend without a device ignores it.
  virtual void set_device_add_grid(DeviceAddGrid grid) { (void)grid; }
  /// The CUDA priority of the comm stream from now on (comm_priority.hpp): CommPriority::greatest,
  /// as before any call, or CommPriority::normal (0). Set per case by StepDriver
  /// (CasePlan::comm_priority), outside a step; the cuda backend waits for the comm stream's work
  /// before it changes streams. A backend without a device ignores it.
  virtual void set_comm_priority(CommPriority p) { (void)p; }
  /// dst = src converted to dst's dtype, both on the device (not a counted copy).
  virtual void convert(Buffer& dst, const Buffer& src, Stream s) = 0;
  /// dst *= factor in dst's space (the division axis: finalize phase). Counted in
  /// StepMetrics::division_device_bytes or division_host_bytes (read + write) by dst's space.
  virtual void scale(Buffer& dst, double factor, Stream s) = 0;
  /// Synthetic backward: grad = g(...) or, with `accumulate`, grad += g(...). Elements at index
  /// >= key.numel (the padding) are written as zero.
  virtual void generate(Buffer& grad, const GradKey& key, bool accumulate, Stream s) = 0;
  /// The GEMM backward of one unit (docs/DESIGN.md §2): for each parameter of `unit` (shape
  /// [rows, cols...] flattened to rows x cols; 1-D params: no GEMM), data gradient dX = dY·W and
  /// weight gradient dW = dYᵀ·X with T = tokens rows, 4·T·numel FLOPs, in grad's dtype; dW is
  /// written into grad's region of that parameter (the generator then overwrites it). `workspace`
  /// holds X, dY, dX and cuBLAS's workspace (gemm_workspace_numel). Host backend: BackendError.
  virtual void gemm_backward(Buffer& grad, const FlatParam& unit, uint64_t tokens, bool tf32,
                             Buffer& workspace, Stream s) = 0;
  /// NCCL-style reduce-scatter in the input's dtype: out (numel/N) = this rank's shard of the sum
  /// over ranks, divided by N when `op` is avg. A collective: every rank calls it in the same
  /// order with the same op.
  virtual void reduce_scatter(Buffer& out, const Buffer& in, ReduceOp op = ReduceOp::sum) = 0;

  virtual Event record(Stream s) = 0;
  virtual void wait(Stream waiter, Event e) = 0;
  virtual void host_wait(Event e) = 0;
  /// Whether `e` has completed, without waiting (cudaEventQuery on cuda). The default, true, is
  /// right for a backend whose every operation completes before the call that issued it returns.
  virtual bool host_ready(Event e) {
    (void)e;
    return true;
  }
  /// Runs `task` on the host once `e` has completed, after every earlier host task, without
  /// blocking the issuing thread where the backend can (the CPU add then overlaps the copies of
  /// the next units). The default runs it at once. end_step waits for every task; an exception
  /// from a task is rethrown by end_step.
  // By value: an override moves it into its queue.
  virtual void
  host_task(Event e, std::function<void()> task) {  // NOLINT(performance-unnecessary-value-param)
    host_wait(e);
    task();
  }

  /// Runs `fn` (a CPU add, on the thread of a host task) with that thread and its OpenMP team on
  /// the CPUs of this rank's GPU's NUMA node where the machine has more than one node, and gives
  /// them their CPU masks back after (machine::host_add_placement; cpu-add-pipelined). The
  /// default, a backend without a device, runs fn as it is.
  virtual void near_device(const std::function<void()>& fn) { fn(); }

  /// Holds the issuing thread busy for `us` microseconds (a spin, not a sleep: the real system's
  /// Python holds its CPU), as a real system's host does in its hooks before it issues a unit's
  /// backward (--hook-host-us, CasePlan::hook_host_us). Work already queued on the device goes on;
  /// work this thread has yet to issue waits. A test double records the calls.
  virtual void host_busy(uint32_t us);

  /// Agrees an error across ranks before the next collective: true if any rank passed true.
  virtual bool any_rank(bool mine) = 0;

  /// Compares a finished shard with the exact reference (not counted as traffic or phase time).
  virtual ShardCheck check_shard(const Buffer& shard, const OracleKey& key) = 0;

  virtual void begin_step() = 0;
  virtual StepMetrics end_step() = 0;  // waits for the rank's streams, returns this step's figures

  /// Called by Buffer::reset; not for strategies (BufferOwner).
  void release(Buffer& b) noexcept override = 0;

  /// What the rank holds now (call between steps, on the rank's thread).
  virtual MemorySnapshot memory_snapshot() {
    MemorySnapshot s;
    s.host_rss_bytes = process_rss_bytes();
    return s;
  }
};

/// dst = src on stream `s`: a copy when their dtypes agree, else a convert (same numel, both on
/// the device). The bucket copy, the interleave and the partition's first S (ZeRO-3).
inline void copy_or_convert(RankBackend& be, Buffer& dst, const Buffer& src, Stream s) {
  if (dst.dtype() == src.dtype())
    be.copy(dst, src, s);
  else
    be.convert(dst, src, s);
}

/// The world: one RankBackend per rank and a way to run work on all ranks at once.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "host" or "cuda"
  virtual int world_size() const = 0;
  /// Runs fn on every rank concurrently (one thread per rank); rethrows the first exception.
  virtual void run(const std::function<void(RankBackend&)>& fn) = 0;
  /// What the JSON context records about this backend: devices, ceilings, time domain.
  virtual nlohmann::json context() const = 0;
  /// The ceilings measured at start (all 0 when none were: the host backend, --ceilings off). The
  /// same figures as context()'s ceiling_* keys, typed.
  virtual Ceilings ceilings() const { return {}; }
  /// True when step_ms and phase times are GPU (event) times; false for host wall-clock.
  virtual bool gpu_times() const = 0;
  /// Host tasks (RankBackend::host_task) that may still be pending when host_task returns; 0 when
  /// they run at once. Each may hold a pinned staging buffer: the model counts them.
  virtual int host_task_depth() const { return 0; }
  /// The OpenMP threads of one rank's CPU adds when none are set for them (--host-threads 0: the
  /// rank's share of the machine's hardware threads); 0 when the backend does not say.
  virtual int host_add_threads() const { return 0; }

  /// The global ranks whose threads run in this process: all of them (the default), or one under
  /// a multi-process launch (one process per GPU, --launcher env). run() calls fn on these only.
  virtual std::vector<int> local_ranks() const {
    std::vector<int> r(world_size());
    for (int i = 0; i < world_size(); ++i) r[i] = i;
    return r;
  }
  /// Under a multi-process launch: on entry per_rank[r] holds this process's bytes for each local
  /// rank r (the same size on every rank); on return every slot holds its rank's bytes, on every
  /// process. A collective between steps (never inside one). Nothing to do when every rank lives in
  /// this process (the default). Throws what the transport throws (a dead peer: a timeout).
  virtual void allgather(std::vector<std::vector<uint8_t>>& per_rank) { (void)per_rank; }
  /// Between cases: returns memory the backend keeps cached for reuse (the cuda backend's pool
  /// reserves what a case's streams freed) so one case's fragments do not crowd out the next.
  virtual void release_cached_memory() {}
  /// True when a multi-process launch lost a peer and this backend must not be torn down (its
  /// NCCL calls could hang): the process should write what it has and end with std::_Exit.
  virtual bool abandoned() const { return false; }
};

}  // namespace shardaccum
