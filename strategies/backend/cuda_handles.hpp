#pragma once
// RAII handles of the cuda backend: streams, events, device and pinned memory, memory pools and
// NCCL communicators. Constructors throw CudaError / NcclError naming the call; destructors cannot
// throw, so a failed destroy is reported on stderr (log_cuda_error) instead.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <string>

#include "strategies/backend/cuda_check.hpp"

namespace shardaccum::cuda {

/// A non-blocking CUDA stream of the given priority (cudaStreamCreateWithPriority).
class UniqueStream {
 public:
  UniqueStream() = default;
  explicit UniqueStream(int priority);
  UniqueStream(UniqueStream&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  UniqueStream& operator=(UniqueStream&& o) noexcept;
  ~UniqueStream();
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

/// A CUDA event, with timing or without (cudaEventDisableTiming: cheaper to record and query).
class UniqueEvent {
 public:
  UniqueEvent() = default;
  explicit UniqueEvent(bool timing);
  UniqueEvent(UniqueEvent&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  UniqueEvent& operator=(UniqueEvent&& o) noexcept;
  ~UniqueEvent();
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

/// cudaMalloc'd device memory (ceilings, oracle scratch: not the measured pool).
class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(size_t bytes);
  DeviceMemory(DeviceMemory&& o) noexcept : p_(o.p_), n_(o.n_) {
    o.p_ = nullptr;
    o.n_ = 0;
  }
  DeviceMemory& operator=(DeviceMemory&& o) noexcept;
  ~DeviceMemory();
  void* get() const { return p_; }
  size_t bytes() const { return n_; }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

/// cudaHostAlloc'd pinned memory, portable across the devices of the process by default.
class PinnedMemory {
 public:
  PinnedMemory() = default;
  explicit PinnedMemory(size_t bytes, unsigned flags = cudaHostAllocPortable);
  PinnedMemory(PinnedMemory&& o) noexcept : p_(o.p_), n_(o.n_) {
    o.p_ = nullptr;
    o.n_ = 0;
  }
  PinnedMemory& operator=(PinnedMemory&& o) noexcept;
  ~PinnedMemory();
  void* get() const { return p_; }
  size_t bytes() const { return n_; }
  /// Forgets the memory without freeing it (a device a dead peer may still write to).
  void leak() noexcept {
    p_ = nullptr;
    n_ = 0;
  }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

/// A device memory pool: the measured device memory, its used high watermark is the peak.
class UniqueMemPool {
 public:
  UniqueMemPool() = default;
  explicit UniqueMemPool(int device);
  UniqueMemPool(UniqueMemPool&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  UniqueMemPool& operator=(UniqueMemPool&& o) noexcept;
  ~UniqueMemPool();
  cudaMemPool_t get() const { return p_; }

 private:
  cudaMemPool_t p_ = nullptr;
};

/// An NCCL communicator. Teardown is explicit where it can fail or block: finalize() (bounded
/// by the policy), abort(), or leak() when even an abort could hang (a dead peer process,
/// NVIDIA/nccl#863). One still held at destruction is aborted, the failure logged.
class UniqueComm {
 public:
  UniqueComm() = default;
  explicit UniqueComm(ncclComm_t c) : c_(c) {}
  UniqueComm(UniqueComm&& o) noexcept : c_(o.c_) { o.c_ = nullptr; }
  UniqueComm& operator=(UniqueComm&& o) noexcept;
  ~UniqueComm() { abort("communicator destructor"); }
  ncclComm_t get() const { return c_; }
  explicit operator bool() const { return c_ != nullptr; }
  /// ncclCommFinalize, settled within policy, then ncclCommDestroy. Throws NcclError/WaitTimeout;
  /// when finalize fails the communicator is still held (abort it), when destroy fails it is not.
  void finalize(const WaitPolicy& policy, const std::string& what);
  /// ncclCommAbort now; a failure is logged with `what` ("rank 1: teardown").
  void abort(const std::string& what) noexcept;
  /// Forgets the communicator without any NCCL call (it is never torn down).
  ncclComm_t leak() noexcept {
    ncclComm_t c = c_;
    c_ = nullptr;
    return c;
  }

 private:
  ncclComm_t c_ = nullptr;
};

}  // namespace shardaccum::cuda
