#include "strategies/backend/cuda_process_link.hpp"

#include <cstdio>
#include <cstring>

#include "strategies/backend/cuda_kernels.hpp"

namespace shardaccum::cuda {

ProcessLink::ProcessLink(ncclComm_t data_comm, int rank, int world_size, const WaitPolicy& policy,
                         const std::string& who)
    : rank_(rank),
      world_(world_size),
      heartbeat_(policy.heartbeat),
      stream_(0),
      done_(false),
      flag_(sizeof(int)) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t c = nullptr;
  const ncclResult_t r = ncclCommSplit(data_comm, 0, rank, &c, &config);
  comm_ = UniqueComm(c);
  try {
    if (r != ncclSuccess && r != ncclInProgress) throw_nccl(r, "ncclCommSplit", __FILE__, __LINE__);
    settle(c ? c : data_comm, policy, who + ": ncclCommSplit (the process link)");
    mapped_ = PinnedMemory(sizeof(int), cudaHostAllocMapped);
  } catch (...) {
    (void)comm_.leak();  // a failed split is left alone, as after any failure (see the header)
    throw;
  }
}

ProcessLink::~ProcessLink() {
  const std::string who = "rank " + std::to_string(rank_) + ": process link teardown";
  if (comm_ && !broken_) {
    // Finalize lets the peers' last operations complete, bounded; a failure leaves the comm.
    try {
      comm_.finalize(WaitPolicy{10, nullptr, heartbeat_}, "process link");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "shardaccum cuda: %s: %s; the communicator is left alone\n", who.c_str(),
                   e.what());
    } catch (...) {
      std::fprintf(stderr, "shardaccum cuda: %s: unknown error; the communicator is left alone\n",
                   who.c_str());
    }
  }
  (void)comm_.leak();  // after a failure (or a failed finalize): a peer is gone, see the header
  if (broken_) mapped_.leak();  // freed only after a clean teardown, as the communicator
}

void ProcessLink::usable(const std::string& what) const {
  if (!comm_ || broken_)
    throw NcclError(what + ": the process link broke after an earlier failure");
}

void ProcessLink::settle_call(ncclResult_t r, const char* call, const WaitPolicy& policy,
                              const std::string& what) {
  try {
    if (r == ncclInProgress)
      settle(comm_.get(), policy, what);
    else if (r != ncclSuccess)
      throw_nccl(r, call, __FILE__, __LINE__);
  } catch (...) {
    broken_ = true;
    throw;
  }
}

void ProcessLink::finish(const WaitPolicy& policy, const std::string& what) {
  try {
    SA_CUDA_CHECK(cudaEventRecord(done_.get(), stream_.get()));
    wait_event(done_.get(), comm_.get(), policy, what);
  } catch (...) {
    broken_ = true;
    throw;
  }
}

bool ProcessLink::any(bool mine, const WaitPolicy& policy, const std::string& what) {
  usable(what);
  cudaStream_t s = stream_.get();
  int* flag = static_cast<int*>(flag_.get());
  int* mapped_dev = nullptr;
  int* mapped = static_cast<int*>(mapped_.get());
  SA_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped_dev), mapped, 0));
  *mapped = -1;
  SA_CUDA_CHECK(cudaMemsetAsync(flag, mine ? 1 : 0, sizeof(int), s));  // 0 or 0x01010101
  settle_call(ncclAllReduce(flag, flag, 1, ncclInt32, ncclMax, comm_.get(), s), "ncclAllReduce",
              policy, what);
  launch_publish_flag(flag, mapped_dev, s);
  finish(policy, what);
  return *static_cast<volatile int*>(mapped) != 0;
}

std::vector<std::vector<uint8_t>> ProcessLink::allgather(const std::vector<uint8_t>& mine,
                                                         const WaitPolicy& policy,
                                                         const std::string& what) {
  usable(what);
  cudaStream_t s = stream_.get();
  const auto gather = [&](const void* in, size_t bytes, void* out) {
    const size_t need = bytes * (world_ + 1);
    if (scratch_.bytes() < need) scratch_ = DeviceMemory(need);
    auto* dev = static_cast<uint8_t*>(scratch_.get());
    SA_CUDA_CHECK(cudaMemcpyAsync(dev, in, bytes, cudaMemcpyHostToDevice, s));
    settle_call(ncclAllGather(dev, dev + bytes, bytes, ncclUint8, comm_.get(), s), "ncclAllGather",
                policy, what);
    SA_CUDA_CHECK(cudaMemcpyAsync(out, dev + bytes, bytes * world_, cudaMemcpyDeviceToHost, s));
    finish(policy, what);
  };
  // Sizes first, then every blob padded to the largest.
  const uint64_t size = mine.size();
  std::vector<uint64_t> sizes(world_);
  gather(&size, sizeof size, sizes.data());
  uint64_t largest = 1;
  for (uint64_t x : sizes) largest = std::max(largest, x);
  std::vector<uint8_t> padded(largest, 0), all(largest * world_);
  std::memcpy(padded.data(), mine.data(), mine.size());
  gather(padded.data(), largest, all.data());
  std::vector<std::vector<uint8_t>> out(world_);
  for (int r = 0; r < world_; ++r)
    out[r].assign(all.begin() + r * largest, all.begin() + r * largest + sizes[r]);
  return out;
}

}  // namespace shardaccum::cuda
