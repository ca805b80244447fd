// Preset `fairscale`: FairScale's FSDP with CPU offload: a raw .data add, the saved shard
// recognised by shape, and the offloaded shard overwritten (pytorch#73784 holds there too).
#include "strategies/preset/preset.hpp"

namespace shardaccum {

SHARDACCUM_REGISTER_PRESET(Fairscale,
                           {.name = "fairscale",
                            .description = "raw add, shape tracking, D2H over the saved shard",
                            .follows = "FairScale FullyShardedDataParallel (move_grads_to_cpu)",
                            .spec = {"data", "copy", "shape", "end"},
                            .order = 10,
                            // _post_backward_hook on the post_backward stream, no per-unit wait;
                            // _wait_for_post_backward at the end of the backward.
                            .lookahead = Lookahead::unbounded})

}  // namespace shardaccum
