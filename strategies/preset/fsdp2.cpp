// Preset `fsdp2`: PyTorch FSDP2 with CPUOffloadPolicy (docs/PRESETS.md "Per preset"): the mean
// inside the reduce-scatter (ReduceOp.AVG, D1), its input a chunk_cat copy-in in the reduce dtype
// (F5), the first sync's shard copied non-blocking into pinned memory, each later sync's blocking
// into fresh pageable memory and added on the issuing thread (F1, F2), one group in flight (F7).
// FSDP2's default dtypes are the suite's default, fp32-fp32-fp32 (no MixedPrecisionPolicy). Its
// CPU add runs on torchrun's one intra-op thread when a node runs several ranks (F3).
#include "strategies/preset/preset.hpp"

namespace shardaccum {

SHARDACCUM_REGISTER_PRESET(
    Fsdp2,
    {.name = "fsdp2",
     .description = "checked add, flag tracking, blocking pageable copy and add on the "
                    "CPU, mean in the reduce-scatter, chunk_cat copy-in",
     .follows = "PyTorch FSDP2 fully_shard with CPUOffloadPolicy (_fsdp_collectives.py "
                "foreach_reduce)",
     .spec = {"data-free", "cpu-add-pageable", "flag", "collective", std::nullopt, "chunk-cat"},
     .order = 30,
     // FSDP2 FSDPParamGroup.post_backward: the next reduce-scatter waits on the previous
     // reduce_scatter_state event, so one group is in flight while the backward goes on.
     .lookahead = Lookahead::one,
     // Its reduce-scatter stream at priority -1, the device's greatest (PRESETS F7).
     .comm_priority = CommPriority::greatest,
     // Launched by torchrun: one intra-op thread per process when a node runs several (F3).
     .torchrun_threads = true})

}  // namespace shardaccum
