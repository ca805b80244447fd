// Cross-stream hazard ordering (cuda_rank.hpp, "Ordering"): every GPU operation after the
// pending accesses of its operands on the other streams; host loops after the GPU's accesses.
#include "strategies/backend/cuda_rank.hpp"

#include <algorithm>
#include <vector>

#include "profiling/trace.hpp"
#include "strategies/backend/cuda_util.hpp"

namespace shardaccum::cuda {

void CudaRank::wait_hazards(int s, std::initializer_list<Use> uses) {
  cudaStream_t st = streams_[s].get();
  for (const Use& u : uses) {
    const Alloc& a = allocs_.at(u.b->data());
    if (a.write.ev && a.write.stream != s) SA_CUDA_CHECK(cudaStreamWaitEvent(st, a.write.ev, 0));
    if (u.write)
      for (int t = 0; t < kStreamCount; ++t)
        if (t != s && a.reads[t]) SA_CUDA_CHECK(cudaStreamWaitEvent(st, a.reads[t], 0));
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

uint64_t* CudaRank::next_kernel_stamp() {
  if (!in_step_ || stamps_used_ >= kKernelStampSlots || !kernel_stamps_.get()) return nullptr;
  pending_stamp_ = stamps_used_++;
  return static_cast<uint64_t*>(kernel_stamps_.get()) + 2 * pending_stamp_;
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
  const auto t1 = Clock::now();
  if (const trace::ThreadTrace* tt = trace::current())  // the CPU's work on the host tasks track
    tt->complete(trace::track::kHost, phase_name(p), "host", t0, t1,
                 {{"op", op}, {"source", "host clock"}});
  l.lock();
  if (in_step_) {
    m_.phase_ms[static_cast<int>(p)] += ms;
    if (host_first_ == Clock::time_point{}) host_first_ = t0;
    host_last_ = std::max(host_last_, t1);
  }
  for (const Use& u : uses) {
    auto it = allocs_.find(u.b->data());
    if (!u.write || it == allocs_.end()) continue;
    it->second.write = {};  // every earlier GPU access has completed (waited above)
    std::fill(std::begin(it->second.reads), std::end(it->second.reads), nullptr);
  }
}

}  // namespace shardaccum::cuda
