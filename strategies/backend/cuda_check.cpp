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

namespace {
std::atomic<int64_t> g_last_poll_ns{0};
int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

int64_t last_wait_poll_ns() { return g_last_poll_ns.load(std::memory_order_relaxed); }

void wait_until(const std::function<bool()>& done, ncclComm_t comm, const WaitPolicy& policy,
                const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  // Spin briefly (a copy or kernel about to finish), then back off to a sleep of up to 1 ms.
  for (int polls = 0;; ++polls) {
    if ((polls & 63) == 0) g_last_poll_ns.store(steady_ns(), std::memory_order_relaxed);
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

// ---- RAII
// ----------------------------------------------------------------------------------------
// Destructors cannot throw: a failure there is reported on stderr.
namespace {
void report(cudaError_t e, const char* call) {
  if (e != cudaSuccess)
    std::fprintf(stderr, "shardaccum cuda: %s failed: %s\n", call, cudaGetErrorString(e));
}
}  // namespace

UniqueStream::UniqueStream(int priority) {
  SA_CUDA_CHECK(cudaStreamCreateWithPriority(&s_, cudaStreamNonBlocking, priority));
}
UniqueStream& UniqueStream::operator=(UniqueStream&& o) noexcept {
  std::swap(s_, o.s_);
  return *this;
}
UniqueStream::~UniqueStream() {
  if (s_) report(cudaStreamDestroy(s_), "cudaStreamDestroy");
}

UniqueEvent::UniqueEvent(bool timing) {
  SA_CUDA_CHECK(cudaEventCreateWithFlags(&e_, timing ? cudaEventDefault : cudaEventDisableTiming));
}
UniqueEvent& UniqueEvent::operator=(UniqueEvent&& o) noexcept {
  std::swap(e_, o.e_);
  return *this;
}
UniqueEvent::~UniqueEvent() {
  if (e_) report(cudaEventDestroy(e_), "cudaEventDestroy");
}

DeviceMemory::DeviceMemory(size_t bytes) : n_(bytes) { SA_CUDA_CHECK(cudaMalloc(&p_, bytes)); }
DeviceMemory& DeviceMemory::operator=(DeviceMemory&& o) noexcept {
  std::swap(p_, o.p_);
  std::swap(n_, o.n_);
  return *this;
}
DeviceMemory::~DeviceMemory() {
  if (p_) report(cudaFree(p_), "cudaFree");
}

PinnedMemory::PinnedMemory(size_t bytes) : n_(bytes) {
  SA_CUDA_CHECK(cudaHostAlloc(&p_, bytes, cudaHostAllocPortable));
}
PinnedMemory& PinnedMemory::operator=(PinnedMemory&& o) noexcept {
  std::swap(p_, o.p_);
  std::swap(n_, o.n_);
  return *this;
}
PinnedMemory::~PinnedMemory() {
  if (p_) report(cudaFreeHost(p_), "cudaFreeHost");
}

UniqueMemPool::UniqueMemPool(int device) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  SA_CUDA_CHECK(cudaMemPoolCreate(&p_, &props));
  // Keep freed memory reserved (no unmapping between steps), and never let the pool make a stream
  // wait for another stream's free: like PyTorch's caching allocator, it takes fresh memory
  // instead. The peak is the used (not reserved) high watermark either way.
  uint64_t keep = UINT64_MAX;
  SA_CUDA_CHECK(cudaMemPoolSetAttribute(p_, cudaMemPoolAttrReleaseThreshold, &keep));
  int no = 0;
  SA_CUDA_CHECK(cudaMemPoolSetAttribute(p_, cudaMemPoolReuseAllowInternalDependencies, &no));
}
UniqueMemPool& UniqueMemPool::operator=(UniqueMemPool&& o) noexcept {
  std::swap(p_, o.p_);
  return *this;
}
UniqueMemPool::~UniqueMemPool() {
  if (p_) report(cudaMemPoolDestroy(p_), "cudaMemPoolDestroy");
}

}  // namespace shardaccum::cuda
