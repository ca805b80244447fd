#include "strategies/backend/cuda_check.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include "common/errors.hpp"

namespace shardaccum::cuda {

namespace {
std::string where(const char* call, const char* file, int line) {
  return std::string(call) + " at " + file + ":" + std::to_string(line);
}
}  // namespace

void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  throw CudaError("CUDA error " + std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) +
                  ") in " + where(call, file, line));
}

void throw_nccl(ncclResult_t r, const char* call, const char* file, int line) {
  const char* last = ncclGetLastError(nullptr);
  throw NcclError("NCCL error " + std::string(ncclGetErrorString(r)) + " in " +
                  where(call, file, line) +
                  (last && *last ? std::string(": ") + last : std::string()));
}

void throw_peer_failed(const std::string& what) {
  throw PeerFailure(what + ": another rank failed");
}

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void wait_until(const std::function<bool()>& done, ncclComm_t comm, const WaitPolicy& policy,
                const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  // Spin briefly (a copy or kernel about to finish), then back off to a sleep of up to 1 ms.
  for (int polls = 0;; ++polls) {
    if ((polls & 63) == 0 && policy.heartbeat)
      policy.heartbeat->store(steady_ns(), std::memory_order_relaxed);
    if (done()) return;
    if (comm) {
      ncclResult_t async = ncclSuccess;
      const ncclResult_t r = ncclCommGetAsyncError(comm, &async);
      if (r != ncclSuccess) throw_nccl(r, "ncclCommGetAsyncError", __FILE__, __LINE__);
      if (async != ncclSuccess && async != ncclInProgress) {
        const char* last = ncclGetLastError(comm);
        throw NcclError(what + ": NCCL asynchronous error " + ncclGetErrorString(async) +
                        (last && *last ? std::string(": ") + last : std::string()));
      }
    }
    if (policy.peer_failed && policy.peer_failed->load(std::memory_order_relaxed))
      throw_peer_failed(what);
    const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
    if (waited > policy.timeout_s)
      throw WaitTimeout(what + ": timed out after " + std::to_string(policy.timeout_s) +
                        " s (a collective that not every rank joined, or a hung device); the "
                        "communicators are aborted");
    if (polls < 2000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(polls < 20000 ? 20 : 1000));
  }
}

void wait_event(cudaEvent_t ev, ncclComm_t comm, const WaitPolicy& policy,
                const std::string& what) {
  wait_until(
      [ev] {
        const cudaError_t e = cudaEventQuery(ev);
        if (e == cudaSuccess) return true;
        if (e != cudaErrorNotReady) throw_cuda(e, "cudaEventQuery", __FILE__, __LINE__);
        return false;
      },
      comm, policy, what);
}

void settle(ncclComm_t comm, const WaitPolicy& policy, const std::string& what) {
  wait_until(
      [comm, &what] {
        ncclResult_t state = ncclSuccess;
        const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
        if (r != ncclSuccess) throw_nccl(r, "ncclCommGetAsyncError", __FILE__, __LINE__);
        if (state == ncclInProgress) return false;
        if (state != ncclSuccess) {
          const char* last = ncclGetLastError(comm);
          throw NcclError(what + ": NCCL error " + ncclGetErrorString(state) +
                          (last && *last ? std::string(": ") + last : std::string()));
        }
        return true;
      },
      nullptr, policy, what);
}

void set_device(int dev) { SA_CUDA_CHECK(cudaSetDevice(dev)); }

void log_cuda_error(cudaError_t e, const char* call, const std::string& context) noexcept {
  if (e != cudaSuccess)
    std::fprintf(stderr, "shardaccum cuda: %s: %s failed: %s (%s)\n", context.c_str(), call,
                 cudaGetErrorName(e), cudaGetErrorString(e));
}

cudaError_t clear_last_error(std::initializer_list<cudaError_t> expected) {
  const cudaError_t e = cudaGetLastError();
  for (cudaError_t x : expected)
    if (e == x) return cudaSuccess;
  return e;
}

void log_nccl_error(ncclResult_t r, const char* call, const std::string& context) noexcept {
  if (r != ncclSuccess && r != ncclInProgress)
    std::fprintf(stderr, "shardaccum cuda: %s: %s failed: %s\n", context.c_str(), call,
                 ncclGetErrorString(r));
}

}  // namespace shardaccum::cuda
