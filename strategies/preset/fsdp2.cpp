// Preset `fsdp2`: PyTorch FSDP2 with CPUOffloadPolicy: the reduce-scatter's shard copied to pinned
// memory and added on the CPU.
#include "strategies/preset/preset.hpp"

namespace shardaccum {

SHARDACCUM_REGISTER_PRESET(
    Fsdp2, {.name = "fsdp2",
            .description = "checked add, flag tracking, add on the CPU",
            .follows = "PyTorch FSDP2 fully_shard with CPUOffloadPolicy (foreach_reduce)",
            .spec = {"data-free", "cpu-add", "flag", "end"},
            .order = 30,
            // FSDP2 FSDPParamGroup.post_backward: the next reduce-scatter waits on the previous
            // reduce_scatter_state event, so one group is in flight while the backward goes on.
            .lookahead = Lookahead::one})

}  // namespace shardaccum
