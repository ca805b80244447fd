// A cuda rank: construction, shutdown, and the validation of operands (cuda_rank.hpp).
#include "strategies/backend/cuda_rank.hpp"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "common/errors.hpp"
#include "strategies/backend/cuda_util.hpp"
#include "strategies/backend/cuda_world.hpp"

namespace shardaccum::cuda {

namespace {
// The comm stream at the device's greatest priority, as FSDP2's reduce-scatter stream
// (_fsdp_param_group.py FSDPCommContext.lazy_init, priority -1): the collective's kernels and
// its world-1 device copy are dispatched before the compute stream's queued blocks, instead of
// queueing behind a running backward kernel (up to 0.43 ms a collective on one H200, in nsys).
int greatest_priority() {
  int least = 0, greatest = 0;
  SA_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  return greatest;
}
}  // namespace

CudaRank::CudaRank(CudaWorld& world, int rank, int device)
    : world_(world),
      rank_(rank),
      device_(device),
      streams_{UniqueStream(0), UniqueStream(greatest_priority()), UniqueStream(0),
               UniqueStream(0)},
      aux_(0),
      comm_other_(0),
      pool_(device),
      arena_(world.options().pinned_pool_bytes) {
  pinned_capacity_ = arena_.capacity();
  // Kernel stamps outside the pool: the step's peak is the strategy's memory alone.
  kernel_stamps_ = DeviceMemory(2 * sizeof(uint64_t) * kKernelStampSlots);
  kernel_stamps_host_ = PinnedMemory(2 * sizeof(uint64_t) * kKernelStampSlots,
                                     cudaHostAllocMapped | cudaHostAllocPortable);
  SA_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&kernel_stamps_host_dev_),
                                         kernel_stamps_host_.get(), 0));
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
    release_gates(gate_seq_);  // no gate may hold the comm stream the drain waits for
    drain(WaitPolicy{30, nullptr, world_.heartbeat()}, who("shutdown"), false);
    // Buffers that outlived the backend: their owners must not use them any more. A failure is
    // logged and the shutdown goes on (the pool is destroyed next either way).
    for (auto& [p, a] : allocs_)
      if (a.space == MemSpace::device)
        log_cuda_error(cudaFreeAsync(const_cast<void*>(p), stream(Stream::compute)),
                       "cudaFreeAsync", who("shutdown"));
    log_cuda_error(cudaStreamSynchronize(stream(Stream::compute)), "cudaStreamSynchronize",
                   who("shutdown"));
    for (auto& [p, a] : allocs_)  // after the drain: no copy into them is pending
      if (a.space == MemSpace::pageable_host) std::free(const_cast<void*>(p));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardaccum cuda: rank %d shutdown: %s\n", rank_, e.what());
  }
}

int CudaRank::world_size() const { return world_.world_size(); }

void CudaRank::set_comm_priority(CommPriority p) {
  if (p == comm_priority_) return;
  if (in_step_) throw BackendError(who("set_comm_priority") + " inside a step");
  set_device(device_);
  // What the comm stream has queued finishes before another stream takes its place: work issued
  // later orders itself by the stream, and would not wait for the old one's.
  SA_CUDA_CHECK(cudaStreamSynchronize(stream(Stream::comm)));
  std::swap(streams_[static_cast<int>(Stream::comm)], comm_other_);
  comm_priority_ = p;
}

WaitPolicy CudaRank::policy() const { return world_.policy(); }

std::string CudaRank::who(const char* op) const {
  return "cuda backend rank " + std::to_string(rank_) + " (GPU " + std::to_string(device_) +
         "): " + op;
}

CudaRank::Alloc* CudaRank::find_alloc(const Buffer& b, bool* whole) {
  if (whole) *whole = true;
  auto it = allocs_.find(b.data());
  if (it != allocs_.end()) {
    if (whole) *whole = b.bytes() == it->second.bytes;
    return &it->second;
  }
  it = allocs_.upper_bound(b.data());  // the allocation starting below b.data(), if any
  if (it == allocs_.begin()) return nullptr;
  --it;
  const auto base = reinterpret_cast<uintptr_t>(it->first),
             p = reinterpret_cast<uintptr_t>(b.data());
  if (p + b.bytes() > base + it->second.bytes) return nullptr;
  if (whole) *whole = false;
  return &it->second;
}

CudaRank::Alloc& CudaRank::live(const Buffer& b, const char* op, const char* role) {
  if (!b) throw BackendError(who(op) + ": " + role + " is empty");
  Alloc* a = find_alloc(b);
  if (!a)
    throw BackendError(who(op) + ": " + role + " " + shape(b) + " is not a live buffer of rank " +
                       std::to_string(rank_) + " (freed?)");
  return *a;
}

CudaRank::Alloc& CudaRank::in_space(const Buffer& b, MemSpace s, const char* op, const char* role) {
  Alloc& a = live(b, op, role);
  if (b.space() != s)
    throw BackendError(who(op) + ": " + role + " " + shape(b) +
                       " is in the wrong memory space (expected " + space_name(s) + ")");
  return a;
}

}  // namespace shardaccum::cuda
