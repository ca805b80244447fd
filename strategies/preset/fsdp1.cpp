// Preset `fsdp1`: PyTorch FSDP1 with CPUOffload: checked add, shape tracking, the offloaded shard
// overwritten by each sync (pytorch#73784).
#include "strategies/preset/preset.hpp"

namespace shardaccum {

SHARDACCUM_REGISTER_PRESET(
    Fsdp1,
    {.name = "fsdp1",
     .description = "checked add, shape tracking, D2H over the saved shard",
     .follows = "PyTorch FSDP1 FullyShardedDataParallel with CPUOffload(offload_params=True)",
     .spec = {"data-free", "copy", "shape", "end"},
     .order = 20,
     // FSDP1 _post_backward_hook issues the reduce-scatter on its post-backward stream without a
     // per-unit wait; _post_backward_final_callback makes the compute stream wait at the end.
     .lookahead = Lookahead::unbounded})

}  // namespace shardaccum
