#include "strategies/backend/cuda_handles.hpp"

#include <cstdint>
#include <utility>

namespace shardaccum::cuda {

// Destructors cannot throw: a failure there is reported on stderr.
UniqueStream::UniqueStream(int priority) {
  SA_CUDA_CHECK(cudaStreamCreateWithPriority(&s_, cudaStreamNonBlocking, priority));
}
UniqueStream& UniqueStream::operator=(UniqueStream&& o) noexcept {
  std::swap(s_, o.s_);
  return *this;
}
UniqueStream::~UniqueStream() {
  if (s_) log_cuda_error(cudaStreamDestroy(s_), "cudaStreamDestroy", "destructor");
}

UniqueEvent::UniqueEvent(bool timing) {
  SA_CUDA_CHECK(cudaEventCreateWithFlags(&e_, timing ? cudaEventDefault : cudaEventDisableTiming));
}
UniqueEvent& UniqueEvent::operator=(UniqueEvent&& o) noexcept {
  std::swap(e_, o.e_);
  return *this;
}
UniqueEvent::~UniqueEvent() {
  if (e_) log_cuda_error(cudaEventDestroy(e_), "cudaEventDestroy", "destructor");
}

DeviceMemory::DeviceMemory(size_t bytes) : n_(bytes) { SA_CUDA_CHECK(cudaMalloc(&p_, bytes)); }
DeviceMemory& DeviceMemory::operator=(DeviceMemory&& o) noexcept {
  std::swap(p_, o.p_);
  std::swap(n_, o.n_);
  return *this;
}
DeviceMemory::~DeviceMemory() {
  if (p_) log_cuda_error(cudaFree(p_), "cudaFree", "destructor");
}

PinnedMemory::PinnedMemory(size_t bytes, unsigned flags) : n_(bytes) {
  SA_CUDA_CHECK(cudaHostAlloc(&p_, bytes, flags));
}
PinnedMemory& PinnedMemory::operator=(PinnedMemory&& o) noexcept {
  std::swap(p_, o.p_);
  std::swap(n_, o.n_);
  return *this;
}
PinnedMemory::~PinnedMemory() {
  if (p_) log_cuda_error(cudaFreeHost(p_), "cudaFreeHost", "destructor");
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
  if (p_) log_cuda_error(cudaMemPoolDestroy(p_), "cudaMemPoolDestroy", "destructor");
}

UniqueComm& UniqueComm::operator=(UniqueComm&& o) noexcept {
  std::swap(c_, o.c_);
  return *this;
}

void UniqueComm::finalize(const WaitPolicy& policy, const std::string& what) {
  if (!c_) return;
  SA_NCCL_CHECK(ncclCommFinalize(c_));
  settle(c_, policy, what + ": ncclCommFinalize");
  SA_NCCL_CHECK(ncclCommDestroy(leak()));
}

void UniqueComm::abort(const std::string& what) noexcept {
  if (c_) log_nccl_error(ncclCommAbort(leak()), "ncclCommAbort", what);
}

}  // namespace shardaccum::cuda
