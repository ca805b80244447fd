#pragma once
// Checked CUDA and NCCL calls (a failure throws with the call, file and line), RAII handles, and
// the bounded wait that every blocking point of the cuda backend goes through: it polls, watches
// NCCL's asynchronous error and a peer-failure flag, and gives up after a timeout, never hanging.
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace shardaccum::cuda {

/// A failed CUDA or NCCL call, or a wait that timed out.
struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A failed NCCL call or an NCCL asynchronous error: the communicators must be rebuilt.
struct NcclError : CudaError {
  using CudaError::CudaError;
};
/// A wait gave up: a collective (or a peer) did not finish within the timeout.
struct WaitTimeout : CudaError {
  using CudaError::CudaError;
};

[[noreturn]] void throw_cuda(cudaError_t e, const char* call, const char* file, int line);
[[noreturn]] void throw_nccl(ncclResult_t r, const char* call, const char* file, int line);

#define SA_CUDA_CHECK(call)                                               \
  do {                                                                    \
    const cudaError_t sa_err_ = (call);                                   \
    if (sa_err_ != cudaSuccess)                                           \
      ::shardaccum::cuda::throw_cuda(sa_err_, #call, __FILE__, __LINE__); \
  } while (0)

/// For calls on a non-blocking communicator: ncclInProgress is not an error (settle() follows).
#define SA_NCCL_CHECK(call)                                               \
  do {                                                                    \
    const ncclResult_t sa_res_ = (call);                                  \
    if (sa_res_ != ncclSuccess && sa_res_ != ncclInProgress)              \
      ::shardaccum::cuda::throw_nccl(sa_res_, #call, __FILE__, __LINE__); \
  } while (0)

/// Checks the last kernel launch (cudaErrorNotReady, left by an event query, is no error).
#define SA_CUDA_LAUNCH_CHECK(what)                                                    \
  do {                                                                                \
    const cudaError_t sa_err_ = cudaGetLastError();                                   \
    if (sa_err_ != cudaSuccess && sa_err_ != cudaErrorNotReady)                       \
      ::shardaccum::cuda::throw_cuda(sa_err_, "launch of " what, __FILE__, __LINE__); \
  } while (0)

/// How long to wait and what else ends a wait.
struct WaitPolicy {
  double timeout_s = 300;
  const std::atomic<bool>* peer_failed = nullptr;  // set when another rank of the run failed
};

/// Thrown when a wait ends because another rank failed; the runner reports that rank's error.
/// (The strategies' PeerFailure is used for this: see cuda_backend.cpp.)
[[noreturn]] void throw_peer_failed(const std::string& what);

/// Polls `done` until it returns true. Between polls: NCCL's asynchronous error on `comm` (when
/// not null) throws CudaError, a set peer_failed flag throws, and past the timeout WaitTimeout.
/// `what` names the wait in messages ("rank 1: end_step").
void wait_until(const std::function<bool()>& done, ncclComm_t comm, const WaitPolicy& policy,
                const std::string& what);

/// steady_clock nanoseconds of the latest poll of any wait_until in the process: the heartbeat a
/// watchdog reads (a thread stuck outside the bounded waits stops it).
int64_t last_wait_poll_ns();

/// Waits for a recorded event (cudaEventQuery) in the manner of wait_until.
void wait_event(cudaEvent_t ev, ncclComm_t comm, const WaitPolicy& policy, const std::string& what);

/// Waits until a non-blocking communicator leaves ncclInProgress (after init, a collective call,
/// finalize); throws on an NCCL error or a timeout.
void settle(ncclComm_t comm, const WaitPolicy& policy, const std::string& what);

/// Makes `dev` current for the calling thread.
void set_device(int dev);

// ---- RAII handles
// --------------------------------------------------------------------------------

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

/// cudaHostAlloc'd pinned memory, portable across the devices of the process.
class PinnedMemory {
 public:
  PinnedMemory() = default;
  explicit PinnedMemory(size_t bytes);
  PinnedMemory(PinnedMemory&& o) noexcept : p_(o.p_), n_(o.n_) {
    o.p_ = nullptr;
    o.n_ = 0;
  }
  PinnedMemory& operator=(PinnedMemory&& o) noexcept;
  ~PinnedMemory();
  void* get() const { return p_; }
  size_t bytes() const { return n_; }

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

}  // namespace shardaccum::cuda
