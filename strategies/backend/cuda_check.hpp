#pragma once
// Checked CUDA and NCCL calls (a failure throws with the call, file and line; the RAII handles are
// in cuda_handles.hpp), and the bounded wait that every blocking point of the cuda backend goes
// through: it polls, watches NCCL's asynchronous error and a peer-failure flag, and gives up after
// a timeout, never hanging.
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
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

#define SA_CUDA_CHECK(call)                                                                        \
  do {                                                                                             \
    const cudaError_t sa_err_ = (call);                                                            \
    if (sa_err_ != cudaSuccess)                                                                    \
      ::shardaccum::cuda::throw_cuda(sa_err_, #call, __FILE__, __LINE__);                          \
  } while (0)

/// For calls on a non-blocking communicator: ncclInProgress is not an error (settle() follows).
#define SA_NCCL_CHECK(call)                                                                        \
  do {                                                                                             \
    const ncclResult_t sa_res_ = (call);                                                           \
    if (sa_res_ != ncclSuccess && sa_res_ != ncclInProgress)                                       \
      ::shardaccum::cuda::throw_nccl(sa_res_, #call, __FILE__, __LINE__);                          \
  } while (0)

/// Checks the last kernel launch (cudaErrorNotReady, left by an event query, is no error).
#define SA_CUDA_LAUNCH_CHECK(what)                                                                 \
  do {                                                                                             \
    const cudaError_t sa_err_ = cudaGetLastError();                                                \
    if (sa_err_ != cudaSuccess && sa_err_ != cudaErrorNotReady)                                    \
      ::shardaccum::cuda::throw_cuda(sa_err_, "launch of " what, __FILE__, __LINE__);              \
  } while (0)

/// How long to wait and what else ends a wait.
struct WaitPolicy {
  double timeout_s = 300;
  const std::atomic<bool>* peer_failed = nullptr;  // set when another rank of the run failed
  /// When set: steady_clock nanoseconds of the wait's latest poll, stored every 64 polls. The
  /// heartbeat the world's watchdog reads (a thread stuck outside the bounded waits stops it).
  std::atomic<int64_t>* heartbeat = nullptr;
};

/// steady_clock nanoseconds now: the clock of WaitPolicy::heartbeat.
int64_t steady_ns();

/// Thrown when a wait ends because another rank failed; the runner reports that rank's error.
/// (The strategies' PeerFailure is used for this: see common/errors.hpp.)
[[noreturn]] void throw_peer_failed(const std::string& what);

/// Polls `done` until it returns true. Between polls: NCCL's asynchronous error on `comm` (when
/// not null) throws CudaError, a set peer_failed flag throws, and past the timeout WaitTimeout.
/// `what` names the wait in messages ("rank 1: end_step").
void wait_until(const std::function<bool()>& done, ncclComm_t comm, const WaitPolicy& policy,
                const std::string& what);

/// Waits for a recorded event (cudaEventQuery) in the manner of wait_until.
void wait_event(cudaEvent_t ev, ncclComm_t comm, const WaitPolicy& policy, const std::string& what);

/// Waits until a non-blocking communicator leaves ncclInProgress (after init, a collective call,
/// finalize); throws on an NCCL error or a timeout.
void settle(ncclComm_t comm, const WaitPolicy& policy, const std::string& what);

/// Makes `dev` current for the calling thread.
void set_device(int dev);

/// Reports a failed CUDA call that is deliberately not thrown (a destructor, a teardown that must
/// go on) on stderr with its context ("rank 1: shutdown"); nothing for cudaSuccess.
void log_cuda_error(cudaError_t e, const char* call, const std::string& context) noexcept;
/// Clears the calling thread's last CUDA error (cudaGetLastError) after a call that may leave one
/// on purpose: an allocation that failed for lack of memory, a query of a busy stream. Returns
/// cudaSuccess when the cleared error is none or one of `expected`, else that error.
cudaError_t clear_last_error(std::initializer_list<cudaError_t> expected);
/// As log_cuda_error, for NCCL (ncclInProgress is no error).
void log_nccl_error(ncclResult_t r, const char* call, const std::string& context) noexcept;

}  // namespace shardaccum::cuda
