// A cuda rank's memory: device buffers from its pool (trimmed and retried once when full), pinned
// buffers from its arena, freed only after the copies that used them (deferred frees).
#include "strategies/backend/cuda_rank.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "common/errors.hpp"
#include "strategies/backend/cuda_util.hpp"
#include "strategies/backend/cuda_world.hpp"

namespace shardaccum::cuda {

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

Buffer CudaRank::allocate_host_cached(DType dtype, uint64_t numel, Stream s,
                                      std::span<const uint64_t> pieces) {
  return allocate_pinned_counted(dtype, numel, s,
                                 host_cached_bytes(numel, pieces, dtype, who("allocate")));
}

Buffer CudaRank::allocate_pinned_counted(DType dtype, uint64_t numel, Stream s, uint64_t counted) {
  Buffer b = allocate(MemSpace::pinned_host, dtype, numel, s);
  if (counted == 0) return b;
  Lock l(mu_);
  Alloc& a = allocs_.at(b.data());
  // The count moves from the buffer's bytes to `counted`, which may be fewer (a share).
  pinned_current_ = pinned_current_ - a.counted + counted;
  a.counted = counted;
  pinned_peak_ = std::max(pinned_peak_, pinned_current_);
  return b;
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
  a.bytes = a.counted = bytes;
  a.task_epoch = tasks_queued_.load();
  if (space == MemSpace::device) {
    cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool_.get(), stream(s));
    if (e == cudaErrorMemoryAllocation) {
      // As PyTorch's caching allocator: give back what the pool holds unused, then try once more.
      // Streams that are idle are synchronized first, so that their frees count as completed.
      // An allocation failure is not sticky: clear it (an event query's cudaErrorNotReady may be
      // what is left instead; any other error pending is thrown).
      SA_CUDA_CHECK(clear_last_error({cudaErrorMemoryAllocation, cudaErrorNotReady}));
      for (const auto& st : streams_) {
        const cudaError_t q = cudaStreamQuery(st.get());
        if (q == cudaSuccess)
          SA_CUDA_CHECK(cudaStreamSynchronize(st.get()));
        else if (q != cudaErrorNotReady)
          throw_cuda(q, "cudaStreamQuery", __FILE__, __LINE__);
      }
      SA_CUDA_CHECK(clear_last_error({cudaErrorNotReady}));  // from a busy stream's query
      SA_CUDA_CHECK(cudaMemPoolTrimTo(pool_.get(), 0));
      e = cudaMallocFromPoolAsync(&p, bytes, pool_.get(), stream(s));
    }
    if (e == cudaErrorMemoryAllocation) {
      SA_CUDA_CHECK(clear_last_error({cudaErrorMemoryAllocation, cudaErrorNotReady}));
      uint64_t used = 0, reserved = 0;
      SA_CUDA_CHECK(cudaMemPoolGetAttribute(pool_.get(), cudaMemPoolAttrUsedMemCurrent, &used));
      SA_CUDA_CHECK(
          cudaMemPoolGetAttribute(pool_.get(), cudaMemPoolAttrReservedMemCurrent, &reserved));
      size_t free = 0, total = 0;
      SA_CUDA_CHECK(cudaMemGetInfo(&free, &total));
      throw CudaError(who("allocate") + ": out of device memory allocating " +
                      std::to_string(bytes) + " bytes (pool: " + std::to_string(used) +
                      " bytes in use, " + std::to_string(reserved) + " reserved; device: " +
                      std::to_string(free) + " of " + std::to_string(total) + " bytes free)");
    }
    if (e != cudaSuccess) throw_cuda(e, "cudaMallocFromPoolAsync", __FILE__, __LINE__);
    // Another stream may use the memory only after the allocation's point on this one.
    cudaEvent_t ev = marks_.next();
    SA_CUDA_CHECK(cudaEventRecord(ev, stream(s)));
    a.write = {ev, si};
    a.last_stream = si;
  } else if (space == MemSpace::pageable_host) {
    // Plain host memory, neither registered nor touched: a D2H into it is staged and synchronous,
    // and its pages are faulted in during the copy (FSDP2's fresh `.to("cpu")`).
    p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p)
      throw BackendError(who("allocate") + ": out of host memory allocating " +
                         std::to_string(bytes) + " pageable bytes");
    pageable_current_ += bytes;
    pageable_peak_ = std::max(pageable_peak_, pageable_current_);
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
    // Its memory may come back as another workspace: the next GEMM backward fills afresh.
    if (b.data() == gemm_filled_.operands) gemm_filled_ = {};
    Alloc& a = it->second;
    if (a.space == MemSpace::device) {
      // Free on the stream that used it last, after every other stream's use of it.
      const int f = a.last_stream >= 0 ? a.last_stream : 0;
      cudaStream_t fs = streams_[f].get();
      if (a.write.ev && a.write.stream != f) SA_CUDA_CHECK(cudaStreamWaitEvent(fs, a.write.ev, 0));
      for (int t = 0; t < kStreamCount; ++t) {
        if (t != f && a.reads[t]) SA_CUDA_CHECK(cudaStreamWaitEvent(fs, a.reads[t], 0));
        if (t != f && a.views[t]) SA_CUDA_CHECK(cudaStreamWaitEvent(fs, a.views[t], 0));
      }
      SA_CUDA_CHECK(cudaFreeAsync(b.data(), fs));
    } else if (a.space == MemSpace::pageable_host) {
      // Freed now, after the GPU's accesses to it (its D2H was waited for by its user already).
      for (cudaEvent_t ev : {a.write.ev, a.reads[0], a.reads[1], a.reads[2], a.reads[3]})
        if (ev) log_cuda_error(cudaEventSynchronize(ev), "cudaEventSynchronize", who("release"));
      std::free(b.data());
      pageable_current_ -= a.bytes;
    } else {
      // Counted as freed now; the block is reused once the copies that used it have completed.
      DeferredFree d{b.data(), {}};
      // A failed query counts as complete, as before, but is reported (release cannot throw).
      auto pending = [&](cudaEvent_t ev) {
        if (!ev) return;
        const cudaError_t q = cudaEventQuery(ev);
        if (q == cudaErrorNotReady)
          d.pending.push_back(ev);
        else
          log_cuda_error(q, "cudaEventQuery", who("release"));
      };
      pending(a.write.ev);
      for (cudaEvent_t r : a.reads) pending(r);
      for (cudaEvent_t v : a.views) pending(v);
      log_cuda_error(clear_last_error({cudaErrorNotReady}), "cudaGetLastError", who("release"));
      if (d.pending.empty())
        arena_.free(b.data());
      else
        deferred_.push_back(std::move(d));
      pinned_current_ -= a.counted;
    }
    allocs_.erase(it);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardaccum cuda: rank %d release: %s\n", rank_, e.what());
  }
}

void CudaRank::observe_idle_streams() {
  // The pool reuses (and trims) memory freed on another stream only once the host has observed
  // that free's completion "by a synchronize" (cudaMemPoolTrimTo): our bounded waits poll events,
  // which does not count, and without this the reserved bytes grew by a step's working set every
  // step (10.7 GiB a step on uniform:8x256M, fsdp2, SSSS, until out of memory). Called only when
  // every stream is idle, so each synchronize returns at once and cannot hang on a peer.
  for (const auto& st : streams_) SA_CUDA_CHECK(cudaStreamSynchronize(st.get()));
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

}  // namespace shardaccum::cuda
