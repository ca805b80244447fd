// The cuda backend: ranks (streams, memory pool, pinned arena, NCCL communicator, the ordering of
// operations) and the world (threads, communicators, failures). See cuda_backend_impl.hpp.
#include "strategies/backend/cuda_backend.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <unistd.h>
#include <thread>
#include <utility>

#include "strategies/backend/cuda_backend_impl.hpp"
#include "profiling/nvtx.hpp"
#include "profiling/trace.hpp"
#include "common/errors.hpp"

namespace shardaccum {
namespace cuda {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

constexpr int kStreamCount = 3;
int idx(Stream s) { return static_cast<int>(s); }
const char* stream_name(int s) {
  constexpr const char* names[kStreamCount] = {"compute", "comm", "copy"};
  return names[s];
}

std::string shape(const Buffer& b) {
  return std::string(space_name(b.space())) + " " + dtype_name(b.dtype()) + "[" +
         std::to_string(b.numel()) + "]";
}

ncclDataType_t nccl_type(DType t) { return t == DType::fp32 ? ncclFloat32 : ncclBfloat16; }

/// The message of a captured exception (`fallback` for one that is not a std::exception).
std::string error_text(const std::exception_ptr& e, const char* fallback = "unknown error") {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return fallback;
  }
}

std::string version_string(int v) {  // CUDA: 1000*major + 10*minor
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

}  // namespace

// ---- RankBarrier --------------------------------------------------------------------------------

void RankBarrier::reset() {
  std::lock_guard<std::mutex> l(m_);
  arrived_ = 0;
  failed_ = false;
}

void RankBarrier::fail() {
  {
    std::lock_guard<std::mutex> l(m_);
    failed_ = true;
  }
  cv_.notify_all();
}

void RankBarrier::arrive_and_wait(const WaitPolicy& policy, const std::string& what) {
  std::unique_lock<std::mutex> l(m_);
  if (failed_) throw_peer_failed(what);
  const uint64_t gen = generation_;
  if (++arrived_ == n_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait_for(l, std::chrono::duration<double>(policy.timeout_s),
               [&] { return generation_ != gen || failed_; });
  if (generation_ != gen) return;
  if (failed_) throw_peer_failed(what);
  throw WaitTimeout(what + ": timed out after " + std::to_string(policy.timeout_s) +
                    " s waiting for the other ranks");
}

bool RankBarrier::any(int rank, bool mine, const WaitPolicy& policy, const std::string& what) {
  flags_[rank] = mine;
  arrive_and_wait(policy, what);
  bool any = false;
  for (char f : flags_) any = any || f;
  arrive_and_wait(policy, what);  // nobody overwrites a flag before every rank has read them
  return any;
}

// ---- EventPool ----------------------------------------------------------------------------------

cudaEvent_t EventPool::next() {
  if (used_ == events_.size()) events_.emplace_back(timing_);
  return events_[used_++].get();
}

// ---- CudaRank: construction, validation, ordering ----------------------------------------------

namespace {
thread_local const CudaRank* tls_worker_of = nullptr;  // set on a rank's host-task worker
}  // namespace

CudaRank::CudaRank(CudaWorld& world, int rank, int device)
    : world_(world),
      rank_(rank),
      device_(device),
      streams_{UniqueStream(0), UniqueStream(0), UniqueStream(0)},
      aux_(0),
      pool_(device),
      arena_(world.options().pinned_pool_bytes) {
  pinned_capacity_ = arena_.capacity();
  // The oracle's scratch at start, not at the first check: a long run's device memory stays level
  // from its first step (the staging of a pinned shard is at most kCheckStagingBytes).
  check_partials_ = DeviceMemory(sizeof(CheckSums) * kCheckBlocks);
  check_result_ = DeviceMemory(sizeof(CheckSums));
  check_staging_ = DeviceMemory(kCheckStagingBytes);
  check_prefixes_ = DeviceMemory(kCheckPrefixBytes);
}

CudaRank::~CudaRank() {
  {
    std::lock_guard<std::mutex> g(task_mu_);
    task_stop_ = true;
    task_cancel_ = true;
  }
  task_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  try {
    set_device(device_);
    drain(WaitPolicy{30, nullptr}, who("shutdown"), false);
    // Buffers that outlived the backend: their owners must not use them any more.
    for (auto& [p, a] : allocs_)
      if (a.space == MemSpace::device) cudaFreeAsync(const_cast<void*>(p), stream(Stream::compute));
    cudaStreamSynchronize(stream(Stream::compute));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardaccum cuda: rank %d shutdown: %s\n", rank_, e.what());
  }
}

int CudaRank::world_size() const { return world_.world_size(); }

WaitPolicy CudaRank::policy() const { return world_.policy(); }

std::string CudaRank::who(const char* op) const {
  return "cuda backend rank " + std::to_string(rank_) + " (GPU " + std::to_string(device_) +
         "): " + op;
}

CudaRank::Alloc& CudaRank::live(const Buffer& b, const char* op, const char* role) {
  if (!b) throw BackendError(who(op) + ": " + role + " is empty");
  auto it = allocs_.find(b.data());
  if (it == allocs_.end())
    throw BackendError(who(op) + ": " + role + " " + shape(b) + " is not a live buffer of rank " +
                       std::to_string(rank_) + " (freed?)");
  return it->second;
}

CudaRank::Alloc& CudaRank::in_space(const Buffer& b, MemSpace s, const char* op, const char* role) {
  Alloc& a = live(b, op, role);
  if (b.space() != s)
    throw BackendError(who(op) + ": " + role + " " + shape(b) +
                       " is in the wrong memory space (expected " + space_name(s) + ")");
  return a;
}

cudaEvent_t CudaRank::begin_gpu_op(int s, std::initializer_list<Use> uses) {
  cudaStream_t st = streams_[s].get();
  for (const Use& u : uses) {
    const Alloc& a = allocs_.at(u.b->data());
    if (a.write.ev && a.write.stream != s) SA_CUDA_CHECK(cudaStreamWaitEvent(st, a.write.ev, 0));
    if (u.write)
      for (int t = 0; t < kStreamCount; ++t)
        if (t != s && a.reads[t]) SA_CUDA_CHECK(cudaStreamWaitEvent(st, a.reads[t], 0));
  }
  cudaEvent_t start = timing_.next();
  SA_CUDA_CHECK(cudaEventRecord(start, st));
  return start;
}

void CudaRank::end_gpu_op(int s, Phase p, cudaEvent_t start, std::initializer_list<Use> uses,
                          bool is_copy) {
  cudaEvent_t end = timing_.next();
  SA_CUDA_CHECK(cudaEventRecord(end, streams_[s].get()));
  if (in_step_) ops_.push_back({p, start, end, s, is_copy});
  for (const Use& u : uses) {
    Alloc& a = allocs_.at(u.b->data());
    if (u.write) {
      a.write = {end, s};
      std::fill(std::begin(a.reads), std::end(a.reads), nullptr);
    } else {
      a.reads[s] = end;
    }
    a.last_stream = s;
  }
}

void CudaRank::host_op(Lock& l, Phase p, std::initializer_list<Use> uses, const char* op,
                       const std::function<void()>& loop) {
  std::vector<cudaEvent_t> waits;  // the GPU's pending writes, and reads of what is written
  for (const Use& u : uses) {
    const Alloc& a = allocs_.at(u.b->data());
    if (a.write.ev) waits.push_back(a.write.ev);
    if (u.write)
      for (cudaEvent_t r : a.reads)
        if (r) waits.push_back(r);
  }
  l.unlock();
  for (cudaEvent_t ev : waits) wait_event(ev, nullptr, policy(), who(op));
  const auto t0 = Clock::now();
  loop();
  const double ms = ms_since(t0);
  if (const trace::ThreadTrace* tt = trace::current())  // the CPU's work on the trace's host track
    tt->complete("host", phase_name(p), "host", t0, Clock::now(), {{"op", op}});
  l.lock();
  if (in_step_) m_.phase_ms[static_cast<int>(p)] += ms;
  for (const Use& u : uses) {
    auto it = allocs_.find(u.b->data());
    if (!u.write || it == allocs_.end()) continue;
    it->second.write = {};  // every earlier GPU access has completed (waited above)
    std::fill(std::begin(it->second.reads), std::end(it->second.reads), nullptr);
  }
}

// ---- host tasks
// ----------------------------------------------------------------------------------

bool CudaRank::on_worker() const { return tls_worker_of == this; }

void CudaRank::worker_loop() {
  tls_worker_of = this;
  try {
    set_device(device_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardaccum cuda: rank %d host-task worker: %s\n", rank_, e.what());
  }
  for (;;) {
    HostTask t;
    bool skip = false;
    {
      Lock l(task_mu_);
      task_cv_.wait(l, [&] { return task_stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      t = std::move(tasks_.front());
      tasks_.pop_front();
      skip = task_cancel_;
    }
    if (!skip) {
      try {
        if (t.ev) wait_event(t.ev, nullptr, policy(), who("host task"));
        t.fn();
      } catch (...) {
        std::lock_guard<std::mutex> g(task_mu_);
        if (!task_error_) task_error_ = std::current_exception();
        task_cancel_ = true;  // the step's later tasks are skipped; end_step reports the error
      }
    }
    t.fn = nullptr;  // frees what the task holds (its staging) before it counts as done
    {
      std::lock_guard<std::mutex> g(task_mu_);
      tasks_done_.fetch_add(1);
    }
    task_cv_.notify_all();
  }
}

void CudaRank::wait_tasks(uint64_t upto, const char* what) {
  if (on_worker()) return;  // a task never waits for itself or later ones
  Lock l(task_mu_);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(policy().timeout_s));
  while (tasks_done_.load() < upto)
    if (task_cv_.wait_until(l, deadline) == std::cv_status::timeout && tasks_done_.load() < upto)
      throw WaitTimeout(who(what) + ": host tasks did not finish within " +
                        std::to_string(policy().timeout_s) + " s");
}

void CudaRank::after_tasks(Lock& l, std::initializer_list<const Buffer*> operands, const char* op) {
  if (on_worker()) return;
  const uint64_t queued = tasks_queued_.load();
  if (tasks_done_.load() >= queued) return;
  bool touched = false;
  for (const Buffer* b : operands) {
    if (!b || b->space() != MemSpace::pinned_host) continue;
    auto it = allocs_.find(b->data());
    touched = touched || (it != allocs_.end() && it->second.task_epoch < queued);
  }
  if (!touched) return;
  l.unlock();
  wait_tasks(queued, op);
  l.lock();
}

void CudaRank::host_task(Event e, std::function<void()> task) {
  const int depth = world_.options().host_task_depth;
  if (depth <= 0 || on_worker()) {  // at once (and a task queuing a task runs it in place)
    host_wait(e);
    task();
    return;
  }
  cudaEvent_t ev = nullptr;
  if (e.id) {
    Lock l(mu_);
    ev = user_event(e, "host_task");
  }
  if (const trace::ThreadTrace* tt = trace::current())  // the worker records into the same trace
    task = [target = *tt, inner = std::move(task)] {
      trace::ThreadTraceScope scope(target);
      inner();
    };
  if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
  // At most `depth` tasks pending once this one is queued: each may hold a pinned staging.
  const uint64_t queued = tasks_queued_.load();
  if (queued + 1 > static_cast<uint64_t>(depth)) wait_tasks(queued + 1 - depth, "host_task");
  HostTask dropped;
  {
    std::lock_guard<std::mutex> g(task_mu_);
    if (task_cancel_) {
      dropped.fn = std::move(task);  // a task failed: the step's later tasks are skipped
    } else {
      tasks_.push_back({ev, std::move(task)});
      tasks_queued_.fetch_add(1);
    }
  }
  task_cv_.notify_all();
}

std::exception_ptr CudaRank::settle_tasks(bool cancel) {
  if (cancel) {
    std::lock_guard<std::mutex> g(task_mu_);
    task_cancel_ = true;
  }
  wait_tasks(tasks_queued_.load(), "host tasks");
  std::lock_guard<std::mutex> g(task_mu_);
  task_cancel_ = false;
  return std::exchange(task_error_, nullptr);
}

// ---- memory
// --------------------------------------------------------------------------------------

void CudaRank::sweep_deferred(bool wait_all) {
  for (auto it = deferred_.begin(); it != deferred_.end();) {
    bool done = true;
    for (cudaEvent_t ev : it->pending) {
      if (wait_all) {
        wait_event(ev, nullptr, policy(), who("pinned allocate"));
        continue;
      }
      const cudaError_t e = cudaEventQuery(ev);
      if (e == cudaErrorNotReady) {
        done = false;
        break;
      }
      if (e != cudaSuccess) throw_cuda(e, "cudaEventQuery", __FILE__, __LINE__);
    }
    if (done) {
      arena_.free(it->p);
      it = deferred_.erase(it);
    } else {
      ++it;
    }
  }
}

void* CudaRank::allocate_pinned(uint64_t bytes) {
  sweep_deferred(false);
  void* p = arena_.allocate(bytes, false);
  if (!p && !deferred_.empty()) {  // before pinning more, wait for blocks a copy still used
    sweep_deferred(true);
    p = arena_.allocate(bytes, false);
  }
  if (!p) p = arena_.allocate(bytes, true);
  pinned_growths_ = arena_.growths();
  pinned_capacity_ = arena_.capacity();
  return p;
}

Buffer CudaRank::allocate(MemSpace space, DType dtype, uint64_t numel, Stream s) {
  if (numel == 0) throw BackendError(who("allocate") + ": 0 elements");
  set_device(device_);
  Lock l(mu_);
  const uint64_t bytes = numel * dtype_bytes(dtype);
  const int si = idx(s);
  void* p = nullptr;
  Alloc a;
  a.space = space;
  a.bytes = bytes;
  a.task_epoch = tasks_queued_.load();
  if (space == MemSpace::device) {
    cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool_.get(), stream(s));
    if (e == cudaErrorMemoryAllocation) {
      // As PyTorch's caching allocator: give back what the pool holds unused, then try once more.
      // Streams that are idle are synchronized first, so that their frees count as completed.
      (void)cudaGetLastError();  // an allocation failure is not sticky: clear it
      for (const auto& st : streams_)
        if (cudaStreamQuery(st.get()) == cudaSuccess) SA_CUDA_CHECK(cudaStreamSynchronize(st.get()));
      (void)cudaGetLastError();  // cudaErrorNotReady from a busy stream's query
      SA_CUDA_CHECK(cudaMemPoolTrimTo(pool_.get(), 0));
      e = cudaMallocFromPoolAsync(&p, bytes, pool_.get(), stream(s));
    }
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      uint64_t used = 0, reserved = 0;
      SA_CUDA_CHECK(cudaMemPoolGetAttribute(pool_.get(), cudaMemPoolAttrUsedMemCurrent, &used));
      SA_CUDA_CHECK(cudaMemPoolGetAttribute(pool_.get(), cudaMemPoolAttrReservedMemCurrent, &reserved));
      size_t free = 0, total = 0;
      SA_CUDA_CHECK(cudaMemGetInfo(&free, &total));
      throw CudaError(who("allocate") + ": out of device memory allocating " + std::to_string(bytes) +
                      " bytes (pool: " + std::to_string(used) + " bytes in use, " + std::to_string(reserved) +
                      " reserved; device: " + std::to_string(free) + " of " + std::to_string(total) +
                      " bytes free)");
    }
    if (e != cudaSuccess) throw_cuda(e, "cudaMallocFromPoolAsync", __FILE__, __LINE__);
    // Another stream may use the memory only after the allocation's point on this one.
    cudaEvent_t ev = marks_.next();
    SA_CUDA_CHECK(cudaEventRecord(ev, stream(s)));
    a.write = {ev, si};
    a.last_stream = si;
  } else {
    p = allocate_pinned(bytes);
    pinned_current_ += bytes;
    pinned_peak_ = std::max(pinned_peak_, pinned_current_);
  }
  allocs_.emplace(p, a);
  return Buffer(this, p, space, dtype, numel);
}

void CudaRank::release(Buffer& b) noexcept {
  try {
    set_device(device_);
    Lock l(mu_);
    if (!allocs_.count(b.data())) return;  // not ours (never expected)
    after_tasks(l, {&b}, "release");       // a queued task may still use it
    auto it = allocs_.find(b.data());
    if (it == allocs_.end()) return;
    Alloc& a = it->second;
    if (a.space == MemSpace::device) {
      // Free on the stream that used it last, after every other stream's use of it.
      const int f = a.last_stream >= 0 ? a.last_stream : 0;
      cudaStream_t fs = streams_[f].get();
      if (a.write.ev && a.write.stream != f) SA_CUDA_CHECK(cudaStreamWaitEvent(fs, a.write.ev, 0));
      for (int t = 0; t < kStreamCount; ++t)
        if (t != f && a.reads[t]) SA_CUDA_CHECK(cudaStreamWaitEvent(fs, a.reads[t], 0));
      SA_CUDA_CHECK(cudaFreeAsync(b.data(), fs));
    } else {
      // Counted as freed now; the block is reused once the copies that used it have completed.
      DeferredFree d{b.data(), {}};
      auto pending = [&](cudaEvent_t ev) {
        if (ev && cudaEventQuery(ev) == cudaErrorNotReady) d.pending.push_back(ev);
      };
      pending(a.write.ev);
      for (cudaEvent_t r : a.reads) pending(r);
      cudaGetLastError();
      if (d.pending.empty())
        arena_.free(b.data());
      else
        deferred_.push_back(std::move(d));
      pinned_current_ -= a.bytes;
    }
    allocs_.erase(it);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardaccum cuda: rank %d release: %s\n", rank_, e.what());
  }
}

// ---- operations
// ----------------------------------------------------------------------------------

void CudaRank::copy(Buffer& dst, const Buffer& src, Stream s) {
  set_device(device_);
  Lock l(mu_);
  after_tasks(l, {&dst, &src}, "copy");
  live(dst, "copy", "destination");
  live(src, "copy", "source");
  if (dst.dtype() != src.dtype() || dst.numel() != src.numel())
    throw BackendError(who("copy") + " between " + shape(src) + " and " + shape(dst) +
                       ": copies move bytes, dtype and numel must match");
  if (dst.space() == MemSpace::pinned_host && src.space() == MemSpace::pinned_host)
    throw BackendError(who("copy") + ": host-to-host copy is not a transfer of this suite");
  const bool h2d = src.space() == MemSpace::pinned_host;
  const bool d2h = dst.space() == MemSpace::pinned_host;
  const Phase phase = h2d ? Phase::h2d : d2h ? Phase::d2h : Phase::accumulate;
  const int si = idx(s);
  // An NVTX range around the issue: Nsight's GPU projection gives the copy to the h2d/d2h phase.
  std::optional<nvtx::PhaseRange> range;
  if (h2d || d2h) range.emplace(phase, src.bytes(), rank_);
  cudaEvent_t start = begin_gpu_op(si, {{&src, false}, {&dst, true}});
  SA_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.bytes(), cudaMemcpyDefault, stream(s)));
  end_gpu_op(si, phase, start, {{&src, false}, {&dst, true}}, true);
  if (h2d) m_.h2d_bytes += src.bytes();
  if (d2h) m_.d2h_bytes += src.bytes();
}

void CudaRank::add(Buffer& dst, const Buffer& src, MemSpace space, Stream s) {
  set_device(device_);
  Lock l(mu_);
  if (space == MemSpace::pinned_host) after_tasks(l, {&dst, &src}, "add");
  in_space(dst, space, "add", "accumulator");
  in_space(src, space, "add", "addend");
  if (dst.numel() != src.numel())
    throw BackendError(who("add") + " of " + shape(src) + " into " + shape(dst) +
                       ": numel differs");
  if (space == MemSpace::device) {
    const int si = idx(s);
    cudaEvent_t start = begin_gpu_op(si, {{&src, false}, {&dst, true}});
    launch_add(dst.data(), dst.dtype(), src.data(), src.dtype(), dst.numel(), false, stream(s));
    end_gpu_op(si, Phase::accumulate, start, {{&src, false}, {&dst, true}});
    if (in_step_) m_.accumulate_bytes += src.bytes() + 2 * dst.bytes();
    return;
  }
  // The CPU add (pinned memory): after the GPU's pending accesses to either operand.
  if (in_step_) m_.cpu_add_bytes += src.bytes() + 2 * dst.bytes();
  host_op(l, Phase::cpu_add, {{&src, false}, {&dst, true}}, "cpu add", [&] {
    // NVTX only: host_op draws the CPU add on the trace's "host" track.
    nvtx::PhaseRange range(Phase::cpu_add, src.bytes() + 2 * dst.bytes(), rank_, false);
    host_add(dst.data(), dst.dtype(), src.data(), src.dtype(), dst.numel(), world_.host_threads());
  });
}

void CudaRank::convert(Buffer& dst, const Buffer& src, Stream s) {
  set_device(device_);
  Lock l(mu_);
  in_space(dst, MemSpace::device, "convert", "destination");
  in_space(src, MemSpace::device, "convert", "source");
  if (dst.numel() != src.numel())
    throw BackendError(who("convert") + " of " + shape(src) + " into " + shape(dst) +
                       ": numel differs");
  const int si = idx(s);
  cudaEvent_t start = begin_gpu_op(si, {{&src, false}, {&dst, true}});
  launch_add(dst.data(), dst.dtype(), src.data(), src.dtype(), dst.numel(), true, stream(s));
  end_gpu_op(si, Phase::accumulate, start, {{&src, false}, {&dst, true}});
  if (in_step_) m_.accumulate_bytes += src.bytes() + dst.bytes();
}

void CudaRank::scale(Buffer& dst, double factor, Stream s) {
  set_device(device_);
  Lock l(mu_);
  after_tasks(l, {&dst}, "scale");
  live(dst, "scale", "operand");
  const float f = static_cast<float>(factor);  // as the host backend: one fp32 multiply
  if (dst.space() == MemSpace::device) {
    const int si = idx(s);
    cudaEvent_t start = begin_gpu_op(si, {{&dst, true}});
    launch_scale(dst.data(), dst.dtype(), dst.numel(), f, stream(s));
    end_gpu_op(si, Phase::finalize, start, {{&dst, true}});
    return;
  }
  host_op(l, Phase::finalize, {{&dst, true}}, "scale",
          [&] { host_scale(dst.data(), dst.dtype(), dst.numel(), f, world_.host_threads()); });
}

void CudaRank::generate(Buffer& grad, const GradKey& key, bool accumulate, Stream s) {
  set_device(device_);
  Lock l(mu_);
  in_space(grad, MemSpace::device, "generate", "gradient");
  const int si = idx(s);
  cudaEvent_t start = begin_gpu_op(si, {{&grad, true}});
  launch_generate(grad.data(), grad.dtype(), grad.numel(), key, accumulate, stream(s));
  end_gpu_op(si, Phase::backward, start, {{&grad, true}});
}

void CudaRank::reduce_scatter(Buffer& out, const Buffer& in) {
  set_device(device_);
  Lock l(mu_);
  in_space(in, MemSpace::device, "reduce_scatter", "input");
  in_space(out, MemSpace::device, "reduce_scatter", "output");
  const int n = world_size();
  if (in.dtype() != out.dtype() || in.numel() != out.numel() * static_cast<uint64_t>(n))
    throw BackendError(who("reduce_scatter") + " of " + shape(in) + " into " + shape(out) +
                       ": output must be input/world_size elements of the same dtype");
  if (!comm_)
    throw NcclError(who("reduce_scatter") + ": no communicator (aborted after a failure)");
  const int si = idx(Stream::comm);
  cudaEvent_t start = begin_gpu_op(si, {{&in, false}, {&out, true}});
  ++collectives_;  // before the call: a rank that fails inside it still counts as having joined
  const ncclResult_t r =
      ncclReduceScatter(in.data(), out.data(), out.numel(), nccl_type(in.dtype()), ncclSum, comm_,
                        stream(Stream::comm));
  if (r == ncclInProgress)
    settle(comm_, policy(), who("ncclReduceScatter"));
  else if (r != ncclSuccess)
    throw_nccl(r, "ncclReduceScatter", __FILE__, __LINE__);
  end_gpu_op(si, Phase::reduce_scatter, start, {{&in, false}, {&out, true}});
  m_.nccl_input_bytes += in.bytes();
  ++m_.reduce_scatter_calls;
}

// ---- events
// --------------------------------------------------------------------------------------

Event CudaRank::record(Stream s) {
  set_device(device_);
  Lock l(mu_);
  size_t slot;
  if (!user_free_.empty()) {
    slot = user_free_.back();
    user_free_.pop_back();
  } else {
    slot = user_events_.size();
    user_events_.emplace_back(false);
  }
  SA_CUDA_CHECK(cudaEventRecord(user_events_[slot].get(), stream(s)));
  const uint64_t id = ++next_event_id_;
  user_live_.emplace(id, UserEvent{slot, step_seq_});
  return Event{id};
}

cudaEvent_t CudaRank::user_event(Event e, const char* op) {
  auto it = user_live_.find(e.id);
  if (it == user_live_.end())
    throw BackendError(who(op) + ": event " + std::to_string(e.id) +
                       " is unknown or expired (an event lives for its step and the next)");
  return user_events_[it->second.slot].get();
}

void CudaRank::wait(Stream waiter, Event e) {
  if (e.id == 0) return;  // a default Event: nothing was recorded
  set_device(device_);
  Lock l(mu_);
  SA_CUDA_CHECK(cudaStreamWaitEvent(stream(waiter), user_event(e, "wait"), 0));
}

void CudaRank::host_wait(Event e) {
  if (e.id == 0) return;
  cudaEvent_t ev;
  {
    Lock l(mu_);
    ev = user_event(e, "host_wait");
  }
  wait_event(ev, on_worker() ? nullptr : comm_, policy(), who("host_wait"));
}

int CudaRank::local_index() const { return rank_ - world_.rank_base(); }

bool CudaRank::any_rank(bool mine) {
  const bool any = world_.barrier().any(local_index(), mine, policy(), who("any_rank"));
  return link_ ? link_->any(any, policy(), who("any_rank across processes")) : any;
}

// ---- steps
// ---------------------------------------------------------------------------------------

void CudaRank::drain(const WaitPolicy& p, const std::string& what, bool watch_comm) {
  for (int s = 0; s < kStreamCount; ++s) {
    cudaEvent_t ev = marks_.next();
    SA_CUDA_CHECK(cudaEventRecord(ev, streams_[s].get()));
    wait_event(ev, watch_comm ? comm_ : nullptr, p, what + " (" + stream_name(s) + " stream)");
  }
}

void CudaRank::forget_pending() {
  for (auto& [p, a] : allocs_) {
    a.write = {};
    std::fill(std::begin(a.reads), std::end(a.reads), nullptr);
    a.last_stream = -1;
  }
  for (DeferredFree& d : deferred_) arena_.free(d.p);
  deferred_.clear();
  ops_.clear();
  in_step_ = false;  // a step abandoned by a failure is over too
  timing_.recycle();
  marks_.recycle();
}

void CudaRank::recover(const WaitPolicy& p) {
  try {
    settle_tasks(true);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardaccum cuda: rank %d recovery: %s\n", rank_, e.what());
  }
  set_device(device_);
  Lock l(mu_);
  drain(p, who("recovery"), false);
  forget_pending();
}

void CudaRank::observe_idle_streams() {
  // The pool reuses (and trims) memory freed on another stream only once the host has observed
  // that free's completion "by a synchronize" (cudaMemPoolTrimTo): our bounded waits poll events,
  // which does not count, and without this the reserved bytes grew by a step's working set every
  // step (10.7 GiB a step on uniform:8x256M, fsdp2, SSSS, until out of memory). Called only when
  // every stream is idle, so each synchronize returns at once and cannot hang on a peer.
  for (const auto& st : streams_) SA_CUDA_CHECK(cudaStreamSynchronize(st.get()));
}

void CudaRank::begin_step() {
  if (std::exception_ptr e = settle_tasks(false)) std::rethrow_exception(e);
  set_device(device_);
  Lock l(mu_);
  drain(policy(), who("begin_step"));
  observe_idle_streams();
  forget_pending();
  ++step_seq_;
  for (auto it = user_live_.begin(); it != user_live_.end();) {  // keep this and the last step's
    if (it->second.step + 1 < step_seq_) {
      user_free_.push_back(it->second.slot);
      it = user_live_.erase(it);
    } else {
      ++it;
    }
  }
  m_ = StepMetrics{};
  uint64_t zero = 0;  // resets the high watermark to the memory in use now
  SA_CUDA_CHECK(cudaMemPoolSetAttribute(pool_.get(), cudaMemPoolAttrUsedMemHigh, &zero));
  pinned_peak_ = pinned_current_;
  // The step starts at one event on the compute stream that the other two streams wait for.
  step_start_ = timing_.next();
  SA_CUDA_CHECK(cudaEventRecord(step_start_, stream(Stream::compute)));
  step_host_t0_ = trace::Clock::now();  // the streams are drained: the event completes about now
  SA_CUDA_CHECK(cudaStreamWaitEvent(stream(Stream::comm), step_start_, 0));
  SA_CUDA_CHECK(cudaStreamWaitEvent(stream(Stream::copy), step_start_, 0));
  if (auto* c = world_.collector()) cupti_t0_ = c->now();
  in_step_ = true;
}

StepMetrics CudaRank::end_step() {
  // The host tasks first: the step ends after its last CPU add. A task's error is rethrown
  // once the step's figures are complete.
  const std::exception_ptr task_error = settle_tasks(false);
  set_device(device_);
  Lock l(mu_);
  if (!in_step_) throw BackendError(who("end_step") + " without begin_step");
  for (Stream s : {Stream::comm, Stream::copy}) {
    cudaEvent_t ev = marks_.next();
    SA_CUDA_CHECK(cudaEventRecord(ev, stream(s)));
    SA_CUDA_CHECK(cudaStreamWaitEvent(stream(Stream::compute), ev, 0));
  }
  cudaEvent_t end = timing_.next();
  SA_CUDA_CHECK(cudaEventRecord(end, stream(Stream::compute)));
  in_step_ = false;
  wait_event(end, comm_, policy(), who("end_step"));
  float ms = 0;
  for (const TimedOp& op : ops_) {
    SA_CUDA_CHECK(cudaEventElapsedTime(&ms, op.start, op.end));
    m_.phase_ms[static_cast<int>(op.phase)] += ms;
  }
  SA_CUDA_CHECK(cudaEventElapsedTime(&ms, step_start_, end));
  m_.step_ms = ms;
  uint64_t high = 0;
  SA_CUDA_CHECK(cudaMemPoolGetAttribute(pool_.get(), cudaMemPoolAttrUsedMemHigh, &high));
  m_.peak_device_bytes = high;
  m_.peak_pinned_bytes = pinned_peak_;
  m_.accounted_h2d_bytes = m_.h2d_bytes;
  m_.accounted_d2h_bytes = m_.d2h_bytes;
  if (trace::current() && !(world_.collector() && world_.options().cupti_kernels)) trace_ops_from_events();
  if (auto* c = world_.collector()) {
    // Every stream is idle: the window holds all of the step's records, none of the oracle's.
    const uint64_t t_end = c->now();
    const gpu_activity::WindowTotals w = c->totals(device_, cupti_t0_, t_end);
    m_.bytes_from_cupti = true;
    m_.h2d_bytes = w.h2d_bytes;
    m_.d2h_bytes = w.d2h_bytes;
    m_.nccl_kernel_ms = w.nccl_ms;
    m_.accumulate_kernel_ms = w.accumulate_ms;
    m_.generate_kernel_ms = w.generate_ms;
    if (auto* tt = trace::current()) {
      const uint32_t ids[3] = {c->stream_id(stream(Stream::compute)), c->stream_id(stream(Stream::comm)),
                               c->stream_id(stream(Stream::copy))};
      gpu_activity::append_to_trace(*tt, w.records, c->clock_map(), [&](uint32_t id) -> std::string {
        if (id == ids[0]) return "compute stream";
        if (id == ids[1]) return "comm stream";
        if (id == ids[2]) return "copy stream";
        return "other stream";
      });
      // NVTX ranges as CUPTI saw them (every thread of the process: asked once, by local rank 0).
      if (c->markers_enabled() && local_index() == 0)
        gpu_activity::append_markers_to_trace(*tt, c->markers(cupti_t0_, t_end), c->clock_map());
    }
  }
  forget_pending();  // every stream is idle: the end event follows all three
  if (task_error) std::rethrow_exception(task_error);
  return m_;
}

void CudaRank::trace_ops_from_events() {
  const trace::ThreadTrace* tt = trace::current();
  const bool cupti_copies = world_.collector() != nullptr;
  float t0 = 0, t1 = 0;
  for (const TimedOp& op : ops_) {
    if (op.is_copy && cupti_copies) continue;  // CUPTI's MEMCPY records show these
    SA_CUDA_CHECK(cudaEventElapsedTime(&t0, step_start_, op.start));
    SA_CUDA_CHECK(cudaEventElapsedTime(&t1, step_start_, op.end));
    const auto at = [&](float ms) {
      return step_host_t0_ + std::chrono::duration_cast<trace::Clock::duration>(
                                 std::chrono::duration<double, std::milli>(ms));
    };
    tt->complete(stream_name(op.stream) + std::string(" stream"), phase_name(op.phase), "gpu op", at(t0),
                 at(t1), {{"source", "CUDA events of the cuda backend"}});
  }
}

MemorySnapshot CudaRank::memory_snapshot() {
  set_device(device_);
  MemorySnapshot s;
  size_t free = 0, total = 0;
  SA_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  s.device_free_bytes = free;
  uint64_t v = 0;
  SA_CUDA_CHECK(cudaMemPoolGetAttribute(pool_.get(), cudaMemPoolAttrReservedMemCurrent, &v));
  s.pool_reserved_bytes = v;
  SA_CUDA_CHECK(cudaMemPoolGetAttribute(pool_.get(), cudaMemPoolAttrUsedMemCurrent, &v));
  s.pool_used_bytes = v;
  Lock l(mu_);
  s.pinned_capacity_bytes = arena_.capacity();
  s.live_events = timing_.size() + marks_.size() + user_events_.size();
  s.live_buffers = allocs_.size();
  if (auto* c = world_.collector()) s.cupti_records = c->held_records();
  s.host_rss_bytes = process_rss_bytes();
  return s;
}

// ---- oracle
// --------------------------------------------------------------------------------------

ShardCheck CudaRank::check_shard(const Buffer& shard, const OracleKey& key) {
  wait_tasks(tasks_queued_.load(), "check_shard");
  set_device(device_);
  Lock l(mu_);
  live(shard, "check_shard", "shard");
  drain(policy(), who("check_shard"));
  auto* partials = static_cast<CheckSums*>(check_partials_.get());
  auto* result = static_cast<CheckSums*>(check_result_.get());
  cudaStream_t s = aux_.get();
  const std::vector<uint64_t> prefixes = oracle_prefixes(key);
  if (check_prefixes_.bytes() < prefixes.size() * sizeof(uint64_t))
    check_prefixes_ = DeviceMemory(prefixes.size() * sizeof(uint64_t));
  auto* pre = static_cast<const uint64_t*>(check_prefixes_.get());
  if (!prefixes.empty())
    SA_CUDA_CHECK(cudaMemcpyAsync(check_prefixes_.get(), prefixes.data(),
                                  prefixes.size() * sizeof(uint64_t), cudaMemcpyHostToDevice, s));
  SA_CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(CheckSums), s));
  if (shard.space() == MemSpace::device) {
    launch_check(shard.data(), shard.dtype(), shard.numel(), 0, key, pre, partials, result, s);
  } else {
    // Kernels never read pinned memory: stage it through device scratch (oracle work, not traffic).
    const uint64_t b = dtype_bytes(shard.dtype());
    const uint64_t chunk = std::min<uint64_t>(shard.numel(), kCheckStagingBytes / b);
    if (check_staging_.bytes() < chunk * b) check_staging_ = DeviceMemory(chunk * b);
    for (uint64_t j = 0; j < shard.numel(); j += chunk) {
      const uint64_t count = std::min(chunk, shard.numel() - j);
      SA_CUDA_CHECK(cudaMemcpyAsync(check_staging_.get(),
                                    static_cast<const char*>(shard.data()) + j * b, count * b,
                                    cudaMemcpyHostToDevice, s));
      launch_check(check_staging_.get(), shard.dtype(), count, j, key, pre, partials, result, s);
    }
  }
  CheckSums sums{};
  SA_CUDA_CHECK(cudaMemcpyAsync(&sums, result, sizeof(CheckSums), cudaMemcpyDeviceToHost, s));
  cudaEvent_t done = marks_.next();
  SA_CUDA_CHECK(cudaEventRecord(done, s));
  wait_event(done, nullptr, policy(), who("check_shard"));
  if (auto* c = world_.collector()) c->discard(device_, c->now());  // oracle copies: never a step's
  return ShardCheck{sums.err_norm2, sums.ref_norm2, sums.nonfinite, sums.bad_padding};
}

// ---- CudaWorld ----------------------------------------------------------------------------------

void rethrow_root(const std::vector<std::exception_ptr>& errors) {
  rethrow_root_cause(errors);
  throw std::logic_error("rethrow_root called without an error");
}

CudaWorld::CudaWorld(const CudaBackendOptions& opts)
    : opts_(opts),
      barrier_(opts.process_rank >= 0 ? 1 : opts.world_size),
      ranks_(opts.process_rank >= 0 ? 1 : opts.world_size) {
  // Before any stream or copy exists, so that CUPTI sees every record of the run.
  collector_ = cupti::CuptiCollector::start_if_allowed(opts.cupti, opts.cupti_kernels);
  host_threads_ =
      opts.host_add_threads > 0 ? opts.host_add_threads : default_host_threads(opts.world_size);
  // Ranks are built on their own threads: pinning the arenas takes seconds for tens of GB.
  auto errors = run_ranks([&](int i) {
    ranks_[i] = std::make_unique<CudaRank>(*this, rank_base() + i, opts.first_device + i);
  });
  for (const auto& e : errors)
    if (e) rethrow_root(errors);
  init_comms();

  int driver = 0, runtime = 0, nccl = 0, count = 0;
  SA_CUDA_CHECK(cudaDriverGetVersion(&driver));
  SA_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  SA_CUDA_CHECK(cudaGetDeviceCount(&count));
  SA_NCCL_CHECK(ncclGetVersion(&nccl));
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  nlohmann::json devices = nlohmann::json::array();
  for (int i = 0; i < local_count(); ++i) {
    cudaDeviceProp p{};
    SA_CUDA_CHECK(cudaGetDeviceProperties(&p, opts.first_device + i));
    char bus[32] = {};
    SA_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, opts.first_device + i));
    devices.push_back(
        {{"rank", rank_base() + i},
         {"host", host},
         {"device", opts.first_device + i},
         {"name", p.name},
         {"pci_bus_id", bus},
         {"total_memory_bytes", p.totalGlobalMem},
         {"sm_count", p.multiProcessorCount},
         {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)}});
  }
  if (multi_process()) {  // every process's devices, so that rank 0's context lists them all
    std::vector<std::vector<uint8_t>> all(opts.world_size);
    const std::string mine = devices.dump();
    all[rank_base()].assign(mine.begin(), mine.end());
    allgather(all);
    devices = nlohmann::json::array();
    for (const auto& b : all)
      for (const auto& d : nlohmann::json::parse(b.begin(), b.end())) devices.push_back(d);
  }
  static_context_ = {
      {"backend", "cuda"},
      {"time_domain", "CUDA events on each rank's streams"},
      {"world_size", opts.world_size},
      {"launch", multi_process() ? "one process per GPU (--launcher env); this context is rank 0's, "
                                   "its pinned arena figures are rank 0's own"
                                 : "one process, a thread per rank (--launcher threads)"},
      {"device_count", count},
      {"devices", devices},
      {"driver_version", version_string(driver)},
      {"runtime_version", version_string(runtime)},
      {"nccl_version", std::to_string(nccl / 10000) + "." + std::to_string(nccl / 100 % 100) + "." +
                           std::to_string(nccl % 100)},
      {"nccl_header_version", std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
                                  std::to_string(NCCL_PATCH)},
      {"device_memory", "cudaMallocAsync pool per rank; peak = cudaMemPoolAttrUsedMemHigh"},
      {"pinned_pool_bytes", opts.pinned_pool_bytes},
      {"host_add_threads", host_threads_},
      {"host_task_depth", opts.host_task_depth},
      {"omp_max_threads", omp_get_max_threads()},
      {"hardware_threads", std::thread::hardware_concurrency()},
      {"timeout_s", opts.timeout_s}};
  if (opts.measure_ceilings) {
    try {
      measure_ceilings();
    } catch (...) {
      destroy_comms(true);
      throw;
    }
  }
  if (multi_process()) watchdog_ = std::thread([this] { watchdog_loop(); });
}

CudaWorld::~CudaWorld() {
  watchdog_stop_ = true;
  if (watchdog_.joinable()) watchdog_.join();
  if (abandoned_) {  // no NCCL or CUDA teardown: it could hang on the dead peer
    for (auto& r : ranks_) (void)r.release();
    return;
  }
  destroy_comms(!comms_ok_);
}

CudaWorld::Busy::Busy(CudaWorld& world) : w(world) {
  w.busy_since_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}
CudaWorld::Busy::~Busy() { w.busy_since_ns_ = 0; }

void CudaWorld::watchdog_loop() {
  while (!watchdog_stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    const int64_t since = busy_since_ns_.load();
    if (!since) continue;
    const int64_t now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
    const double idle = (now - std::max(since, last_wait_poll_ns())) * 1e-9;
    if (idle > opts_.timeout_s + 15) {
      std::fprintf(stderr,
                   "shardaccum cuda: rank %d: no progress for %.0f s (--timeout %g + 15 s): a CUDA or NCCL "
                   "call is stuck, most likely on a peer process that died; ending this process (exit 1)\n",
                   rank_base(), idle, opts_.timeout_s);
      std::fflush(nullptr);
      std::_Exit(1);
    }
  }
}

void CudaWorld::abandon(const std::string& why) noexcept {
  if (abandoned_) return;
  abandoned_ = true;
  comms_ok_ = false;
  for (auto& r : ranks_)
    if (r && r->link()) r->link()->abandon();
  dead_ = "this multi-process launch lost a peer process or a collective hung (" + why +
          "); the remaining cases cannot run";
  std::fprintf(stderr,
               "shardaccum cuda: rank %d: %s. The process ends once its results are written, without "
               "tearing NCCL down (ncclCommAbort can hang on a dead peer).\n",
               rank_base(), dead_.c_str());
}

std::vector<std::exception_ptr> CudaWorld::run_ranks(const std::function<void(int)>& fn) {
  barrier_.reset();
  const int n = static_cast<int>(ranks_.size());
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        set_device(opts_.first_device + r);
        fn(r);
      } catch (...) {
        errors[r] = std::current_exception();
        barrier_.fail();  // peers waiting at a barrier or polling a wait give up now
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

void CudaWorld::init_comms() {
  ncclUniqueId id;
  if (multi_process()) {
    // The id came through the rendezvous, once: a second communicator would need a second one.
    if (opts_.nccl_id.empty())
      throw NcclError("the communicator of this multi-process launch was aborted after a failure and "
                      "cannot be rebuilt without a new rendezvous; relaunch");
    std::memcpy(&id, opts_.nccl_id.data(), sizeof id);
    opts_.nccl_id.clear();
  } else {
    SA_NCCL_CHECK(ncclGetUniqueId(&id));
  }
  const int n = opts_.world_size;
  auto errors = run_ranks([&](int i) {
    const int r = ranks_[i]->rank();
    const std::string who = "rank " + std::to_string(r) + ": ";
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // every NCCL call returns; waits are ours, bounded and abortable
    ncclComm_t c = nullptr;
    const ncclResult_t res = ncclCommInitRankConfig(&c, n, id, r, &config);
    ranks_[i]->set_comm(c);
    if (res != ncclSuccess && res != ncclInProgress)
      throw_nccl(res, "ncclCommInitRankConfig", __FILE__, __LINE__);
    settle(c, policy(), who + "ncclCommInitRankConfig" +
                            (multi_process() ? " (waiting for every process of the launch)" : ""));
    if (multi_process()) ranks_[i]->set_link(std::make_unique<ProcessLink>(c, r, n, policy(), who));
  });
  for (const auto& e : errors)
    if (e) {
      destroy_comms(true);
      rethrow_root(errors);
    }
  comms_ok_ = true;
}

void CudaWorld::destroy_comms(bool abort, const std::string& why) noexcept {
  if (abort && multi_process()) {
    abandon(why.empty() ? "communicators aborted after a failure" : why);
    return;
  }
  const WaitPolicy p{std::min(opts_.timeout_s, 60.0), nullptr};
  auto errors = run_ranks([&](int r) {
    ncclComm_t c = ranks_[r] ? ranks_[r]->comm() : nullptr;
    if (ranks_[r] && ranks_[r]->link()) {
      if (abort) ranks_[r]->link()->abandon();
      ranks_[r]->set_link(nullptr);
    }
    if (!c) return;
    if (abort) {
      ranks_[r]->set_comm(nullptr);
      ncclCommAbort(c);
      return;
    }
    SA_NCCL_CHECK(ncclCommFinalize(c));
    settle(c, p, "rank " + std::to_string(r) + ": ncclCommFinalize");
    ranks_[r]->set_comm(nullptr);
    SA_NCCL_CHECK(ncclCommDestroy(c));
  });
  for (size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r]) continue;
    std::fprintf(stderr, "shardaccum cuda: rank %zu communicator teardown: %s\n", r,
                 error_text(errors[r]).c_str());
    if (ranks_[r] && ranks_[r]->comm()) {  // finalize failed: abort instead
      cudaSetDevice(opts_.first_device + static_cast<int>(r));
      ncclCommAbort(ranks_[r]->comm());
      ranks_[r]->set_comm(nullptr);
    }
  }
  comms_ok_ = false;
}

void CudaWorld::run(const std::function<void(RankBackend&)>& fn) {
  if (!dead_.empty()) throw CudaError("cuda backend unusable: " + dead_);
  Busy busy(*this);
  if (!comms_ok_) init_comms();
  auto errors = run_ranks([&](int r) {
    CudaRank& rank = *ranks_[r];
    try {
      fn(rank);
    } catch (...) {
      try {
        rank.settle_tasks(true);  // no task may outlive the call that queued it
      } catch (...) {
      }
      throw;
    }
    if (std::exception_ptr e = rank.settle_tasks(false)) std::rethrow_exception(e);
  });
  for (const auto& e : errors)
    if (e) {
      recover(errors);
      rethrow_root(errors);
    }
}

void CudaWorld::recover(const std::vector<std::exception_ptr>& errors) {
  // A collective may be stuck when the ranks issued different numbers of them, or when NCCL
  // failed or a wait timed out: then the communicators are aborted (and rebuilt by the next run).
  // Across processes the counts cannot be compared: any failure but an agreed one (an
  // AccumulationError or PeerFailure that every rank saw through any_rank) aborts, and the launch
  // cannot rebuild its communicator.
  bool abort = false;
  for (const auto& r : ranks_)
    abort = abort || r->collectives_issued() != ranks_[0]->collectives_issued();
  for (const auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const NcclError&) {
      abort = true;
    } catch (const WaitTimeout&) {
      abort = true;
    } catch (const AccumulationError&) {
    } catch (const PeerFailure&) {
    } catch (...) {
      abort = abort || multi_process();
    }
  }
  if (abort) {
    const auto first = std::find_if(errors.begin(), errors.end(), [](const auto& e) { return bool(e); });
    destroy_comms(true, first != errors.end() ? error_text(*first) : "");  // multi-process: abandons
    if (multi_process()) return;  // its streams may hold a collective that never ends: no drain
  }
  auto drained = run_ranks([&](int r) {
    ranks_[r]->recover(WaitPolicy{std::min(opts_.timeout_s, 60.0), nullptr});
  });
  for (size_t r = 0; r < drained.size(); ++r) {
    if (drained[r]) dead_ = "rank " + std::to_string(r) + " did not drain after a failure: " + error_text(drained[r]);
  }
}

void CudaWorld::release_cached_memory() {
  if (!dead_.empty()) return;
  auto errors = run_ranks([&](int i) {
    CudaRank& r = *ranks_[i];
    UniqueEvent idle(false);
    for (Stream st : {Stream::compute, Stream::comm, Stream::copy}) {
      SA_CUDA_CHECK(cudaEventRecord(idle.get(), r.stream(st)));
      wait_event(idle.get(), r.comm(), policy(), "rank " + std::to_string(r.rank()) + ": release cached memory");
    }
    r.observe_idle_streams();  // else the trim cannot give back what another stream freed
    SA_CUDA_CHECK(cudaMemPoolTrimTo(r.pool(), 0));
  });
  for (const auto& e : errors)
    if (e) rethrow_root(errors);
}

std::vector<int> CudaWorld::local_ranks() const {
  std::vector<int> r;
  for (const auto& rank : ranks_) r.push_back(rank->rank());
  return r;
}

void CudaWorld::allgather(std::vector<std::vector<uint8_t>>& per_rank) {
  if (!multi_process()) return;
  if (!dead_.empty()) throw CudaError("cuda backend unusable: " + dead_);
  if (!comms_ok_ || !ranks_[0]->link()) throw NcclError("allgather: no process link (aborted after a failure)");
  Busy busy(*this);
  auto errors = run_ranks([&](int) {
    CudaRank& r = *ranks_[0];
    per_rank = r.link()->allgather(per_rank.at(r.rank()), policy(),
                                   "rank " + std::to_string(r.rank()) + ": gathering every rank's figures");
  });
  if (errors[0]) {
    destroy_comms(true, error_text(errors[0], "gathering every rank's figures failed"));
    std::rethrow_exception(errors[0]);
  }
}

void CudaWorld::all_ranks_barrier(CudaRank& rank, const WaitPolicy& policy, const std::string& what) {
  barrier_.arrive_and_wait(policy, what);
  if (rank.link()) rank.link()->any(false, policy, what + " (across processes)");
}

nlohmann::json CudaWorld::context() const {
  nlohmann::json j = static_context_;
  j["bytes_source"] = collector_ ? "cupti" : "backend accounting";
  j["cupti_kernels"] = collector_ && opts_.cupti_kernels ? "on" : "off";
  j["cupti"] = collector_ ? "on" : (opts_.cupti ? "off (another CUPTI subscriber, e.g. Nsight Systems)" : "off (--cupti off)");
  nlohmann::json growths = nlohmann::json::array(), capacity = nlohmann::json::array();
  for (const auto& r : ranks_) {
    growths.push_back(r->pinned_growths());
    capacity.push_back(r->pinned_capacity());
  }
  j["pinned_arena_growths"] = growths;
  j["pinned_arena_bytes"] = capacity;
  std::lock_guard<std::mutex> l(ceilings_mutex_);
  j.update(ceilings_);
  return j;
}

}  // namespace cuda

// ---- public API ---------------------------------------------------------------------------------

int cuda_device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

uint64_t cuda_device_free_bytes(int device) noexcept {
  int previous = 0;
  size_t free = 0, total = 0;
  if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(device) != cudaSuccess ||
      cudaMemGetInfo(&free, &total) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  (void)cudaSetDevice(previous);
  return free;
}

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& opts) {
  const int count = cuda_device_count();
  if (opts.world_size < 1)
    throw std::invalid_argument("--world-size " + std::to_string(opts.world_size) +
                                ": must be at least 1");
  if (opts.process_rank >= opts.world_size)
    throw std::invalid_argument("cuda backend: process rank " + std::to_string(opts.process_rank) +
                                " is not below the world size " + std::to_string(opts.world_size));
  if (opts.process_rank >= 0 && opts.nccl_id.size() != sizeof(ncclUniqueId))
    throw std::invalid_argument("cuda backend: the NCCL unique id from the rendezvous has " +
                                std::to_string(opts.nccl_id.size()) + " bytes, expected " +
                                std::to_string(sizeof(ncclUniqueId)));
  if (opts.process_rank >= 0 && (opts.first_device < 0 || opts.first_device >= count))
    throw std::invalid_argument("--launcher env: rank " + std::to_string(opts.process_rank) +
                                " would use GPU " + std::to_string(opts.first_device) + " but " +
                                std::to_string(count) +
                                " GPU(s) are visible (one process per GPU: launch at most as many "
                                "processes per node as GPUs)");
  if (opts.process_rank < 0 && (opts.first_device < 0 || opts.first_device + opts.world_size > count))
    throw std::invalid_argument(
        "--world-size " + std::to_string(opts.world_size) +
        ": the cuda backend needs one GPU per rank, but " + std::to_string(count) +
        " GPU(s) are visible" +
        (opts.first_device ? " from device " + std::to_string(opts.first_device) : std::string()) +
        " (check CUDA_VISIBLE_DEVICES, or use --backend host)");
  if (!(opts.timeout_s > 0))
    throw std::invalid_argument("cuda backend: timeout_s must be positive");
  return std::make_unique<cuda::CudaWorld>(opts);
}

std::vector<uint8_t> nccl_unique_id() {
  ncclUniqueId id;
  SA_NCCL_CHECK(ncclGetUniqueId(&id));
  const auto* b = reinterpret_cast<const uint8_t*>(&id);
  return std::vector<uint8_t>(b, b + sizeof id);
}

nlohmann::json measure_cuda_ceilings(Backend& backend) {
  auto* world = dynamic_cast<cuda::CudaWorld*>(&backend);
  if (!world)
    throw std::invalid_argument("measure_cuda_ceilings: backend '" + backend.name() +
                                "' is not cuda");
  return world->measure_ceilings();
}

}  // namespace shardaccum
