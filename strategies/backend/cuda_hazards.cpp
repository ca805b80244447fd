// Cross-stream hazard ordering (cuda_rank.hpp, "Ordering"): every GPU operation after the
// pending accesses of its operands on the other streams; host loops after the GPU's accesses.
// A view (Buffer::view, a chunk) waits for the whole-buffer accesses only: chunks of one buffer
// on two streams (the pipelined offloads) are ordered by their strategy's events, so they overlap;
// a whole-buffer op waits for every view's last access too.
#include "strategies/backend/cuda_rank.hpp"

#include <algorithm>
#include <vector>

#include "profiling/trace.hpp"
#include "strategies/backend/cuda_util.hpp"

namespace shardaccum::cuda {

CudaRank::Alloc& CudaRank::alloc_of(const Buffer& b, bool& whole) {
  Alloc* a = find_alloc(b, &whole);
  if (!a) throw BackendError(who("hazards") + ": " + shape(b) + " is not a live buffer");
  return *a;
}

void CudaRank::wait_hazards(int s, std::initializer_list<Use> uses) {
  cudaStream_t st = streams_[s].get();
  for (const Use& u : uses) {
    bool whole = true;
    const Alloc& a = alloc_of(*u.b, whole);
    if (a.write.ev && a.write.stream != s) SA_CUDA_CHECK(cudaStreamWaitEvent(st, a.write.ev, 0));
    for (int t = 0; t < kStreamCount; ++t) {
      if (t == s) continue;
      if (u.write && a.reads[t]) SA_CUDA_CHECK(cudaStreamWaitEvent(st, a.reads[t], 0));
      if (whole && a.views[t]) SA_CUDA_CHECK(cudaStreamWaitEvent(st, a.views[t], 0));
    }
  }
}

cudaEvent_t CudaRank::begin_gpu_op(int s, std::initializer_list<Use> uses, bool hold) {
  cudaStream_t st = streams_[s].get();
  wait_hazards(s, uses);
  if (hold)
    hold_stream(s);  // released by end_gpu_op: the start below is the GPU's, not the host's delay
  cudaEvent_t start = timing_.next();
  SA_CUDA_CHECK(cudaEventRecord(start, st));
  return start;
}

void CudaRank::end_gpu_op(int s, Phase p, cudaEvent_t start, std::initializer_list<Use> uses,
                          bool is_copy, cudaEvent_t end) {
  if (!end) {
    end = timing_.next();
    SA_CUDA_CHECK(cudaEventRecord(end, streams_[s].get()));
  }
  hold_since_ns_.store(0, std::memory_order_relaxed);  // before the release: the watchdog's race
  release_gates(gate_seq_);  // op and end event issued: the held stream may run them
  if (in_step_) ops_.push_back({p, start, end, s, is_copy, pending_stamp_});
  pending_stamp_ = -1;
  for (const Use& u : uses) {
    bool whole = true;
    Alloc& a = alloc_of(*u.b, whole);
    a.last_stream = s;
    if (!whole) {
      a.views[s] = end;
      continue;
    }
    std::fill(std::begin(a.views), std::end(a.views), nullptr);  // waited for (wait_hazards)
    if (u.write) {
      a.write = {end, s};
      std::fill(std::begin(a.reads), std::end(a.reads), nullptr);
    } else {
      a.reads[s] = end;
    }
  }
}

uint64_t* CudaRank::next_kernel_stamp() {
  if (!in_step_ || stamps_used_ >= kKernelStampSlots || !kernel_stamps_.get()) return nullptr;
  pending_stamp_ = stamps_used_++;
  return static_cast<uint64_t*>(kernel_stamps_.get()) + 2 * pending_stamp_;
}

void CudaRank::host_op(Lock& l, Phase p, std::initializer_list<Use> uses, const char* op,
                       const std::function<void()>& loop) {
  std::vector<cudaEvent_t> waits;  // the GPU's pending writes, and reads of what is written
  for (const Use& u : uses) {
    bool whole = true;
    const Alloc& a = alloc_of(*u.b, whole);
    if (a.write.ev) waits.push_back(a.write.ev);
    for (int t = 0; t < kStreamCount; ++t) {
      if (u.write && a.reads[t]) waits.push_back(a.reads[t]);
      if (whole && a.views[t]) waits.push_back(a.views[t]);
    }
  }
  l.unlock();
  for (cudaEvent_t ev : waits) wait_event(ev, nullptr, policy(), who(op));
  const auto t0 = Clock::now();
  loop();
  const double ms = ms_since(t0);
  const auto t1 = Clock::now();
  if (const trace::ThreadTrace* tt = trace::current())  // the CPU's work on the host tasks track
    tt->complete(trace::track::kHost, phase_name(p), "host", t0, t1,
                 {{"op", op},
                  {"source", "host clock"},
                  // the first operand's size: a per-parameter add's rate is readable from the trace
                  {"bytes", uses.size() ? uses.begin()->b->bytes() : 0}});
  l.lock();
  if (in_step_) {
    m_.phase_ms[static_cast<int>(p)] += ms;
    if (host_first_ == Clock::time_point{}) host_first_ = t0;
    host_last_ = std::max(host_last_, t1);
    if (p == Phase::cpu_add) {
      const auto since = [&](Clock::time_point t) {
        return std::chrono::duration<double, std::milli>(t - step_host_t0_).count();
      };
      host_adds_.emplace_back(since(t0), since(t1));
    }
  }
  for (const Use& u : uses) {
    bool whole = true;
    Alloc* a = find_alloc(*u.b, &whole);
    if (!u.write || !whole || !a) continue;  // a view's write leaves the others' accesses
    a->write = {};  // every earlier GPU access has completed (waited above)
    std::fill(std::begin(a->reads), std::end(a->reads), nullptr);
    std::fill(std::begin(a->views), std::end(a->views), nullptr);
  }
}

}  // namespace shardaccum::cuda
