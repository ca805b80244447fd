#pragma once
// The link of one rank to the ranks that live in other processes (one process per GPU,
// --launcher env). The threaded cuda backend agrees errors and starts the ceilings together with
// a host barrier; across processes the same happens over a second NCCL communicator split from
// the data one, on its own stream, so that agreeing never waits behind the step's queued GPU work
// and never reorders the data communicator's collectives.
//
// Inside a measured step only `any` is called, and it moves no memcpy (CUPTI counts the step's
// copies): a memset sets the flag, an all-reduce (max) combines it, a one-thread kernel hands it
// to mapped pinned memory. `allgather` copies, and is called between steps only.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "strategies/backend/cuda_check.hpp"
#include "strategies/backend/cuda_handles.hpp"

namespace shardaccum::cuda {

class ProcessLink {
 public:
  /// Splits `data_comm` (ncclCommSplit, non-blocking, settled within policy.timeout_s). Must be
  /// called on every rank of the communicator, with the rank's device current.
  /// Throws NcclError / WaitTimeout.
  ProcessLink(ncclComm_t data_comm, int rank, int world_size, const WaitPolicy& policy,
              const std::string& who);
  /// Destroys the communicator after a bounded finalize; after a failure (or abandon()) it leaves
  /// it alone: ncclCommAbort can hang when a peer process on the node has died (NVIDIA/nccl#863),
  /// and the process is about to end anyway.
  ~ProcessLink();
  ProcessLink(const ProcessLink&) = delete;
  ProcessLink& operator=(const ProcessLink&) = delete;

  /// True on every process if any rank passed true. A collective of the link's communicator.
  /// A peer that never arrives: WaitTimeout after policy.timeout_s (the link is then unusable).
  bool any(bool mine, const WaitPolicy& policy, const std::string& what);
  /// Every rank's bytes, in rank order (sizes may differ). Throws as `any`.
  std::vector<std::vector<uint8_t>> allgather(const std::vector<uint8_t>& mine,
                                              const WaitPolicy& policy, const std::string& what);
  /// Marks the link unusable without calling NCCL (a peer failed): later calls throw NcclError.
  void abandon() noexcept { broken_ = true; }

 private:
  /// Throws NcclError when the link broke earlier.
  void usable(const std::string& what) const;
  /// Settles the non-blocking NCCL call that returned `r`; on failure marks the link broken.
  void settle_call(ncclResult_t r, const char* call, const WaitPolicy& policy,
                   const std::string& what);
  /// Waits for the link stream; on failure marks the link broken and rethrows.
  void finish(const WaitPolicy& policy, const std::string& what);

  UniqueComm comm_;
  int rank_, world_;
  std::atomic<int64_t>* heartbeat_;  // the world's: the destructor's bounded finalize writes it
  UniqueStream stream_;
  UniqueEvent done_;
  DeviceMemory flag_, scratch_;
  PinnedMemory mapped_;  // cudaHostAllocMapped: the flag as the host sees it (an int)
  bool broken_ = false;
};

}  // namespace shardaccum::cuda
