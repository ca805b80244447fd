#pragma once
// The CUDA priority of the comm stream, where the reduce-scatters (and, by strategy, the bucket
// copies, divisions, device adds and copies of the offloads) run (RankBackend::set_comm_priority):
// the device's greatest, as FSDP2's reduce-scatter stream, or the default 0, as FSDP1's,
// FairScale's and DeepSpeed's. A kernel on the higher-priority stream is dispatched before the
// blocks the other stream has queued, so the priority decides which of the two a shared GPU holds
// back.
#include <stdexcept>
#include <string>
#include <string_view>

namespace shardaccum {

/// `greatest`: cudaDeviceGetStreamPriorityRange's greatest priority, above the rank's other streams
/// (all at 0), as FSDP2's reduce-scatter stream (torch/distributed/fsdp/_fully_shard/
/// _fsdp_param_group.py FSDPCommContext.lazy_init, torch.cuda.Stream(priority=-1): CUDA priority
/// -1) is above its compute stream's 0; with every other stream at 0, -1 and the greatest order the
/// streams alike. The suite's idealised strategies take it too: at priority 0 the world-1 copy of a
/// reduce-scatter queued up to 0.43 ms behind a running backward kernel (one H200, nsys,
/// docs/DESIGN.md §2). `normal`: priority 0, as FSDP1's post-backward stream
/// (torch/distributed/fsdp/_runtime_utils.py _init_streams: high_priority is -1 only for hybrid
/// sharding with limit_all_gathers), FairScale's (fully_sharded_data_parallel.py _setup_streams,
/// torch.cuda.Stream()) and DeepSpeed ZeRO-3's reduce_and_partition_stream
/// (deepspeed/runtime/zero/stage3.py 340-341, get_accelerator().Stream(), 0.19.8).
enum class CommPriority { greatest, normal };

/// "greatest" or "default", as --comm-priority and the case name spell them.
inline const char* comm_priority_name(CommPriority p) {
  return p == CommPriority::normal ? "default" : "greatest";
}

/// Parses comm_priority_name's spellings. Throws std::invalid_argument naming --comm-priority.
inline CommPriority parse_comm_priority(std::string_view s) {
  if (s == "greatest") return CommPriority::greatest;
  if (s == "default") return CommPriority::normal;
  throw std::invalid_argument("--comm-priority: unknown value '" + std::string(s) +
                              "' (expected auto, greatest or default)");
}

}  // namespace shardaccum
