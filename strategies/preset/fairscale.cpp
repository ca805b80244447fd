// Preset `fairscale`: FairScale's FullyShardedDataParallel with move_grads_to_cpu (head 146f1602,
// read from its source: it does not support torch 2.11 and is not on the GPU machine): a raw .data
// add (`_saved_grad_shard.data += reduced_grad.data`, 1766), shape tracking
// (_prep_grads_for_backward 2073-2093), FairScale's offload (`copy-fairscale`: the D2H over the
// saved shard on the post_backward stream, overwritten by each sync as pytorch#73784 describes, the
// device shard kept and the host synchronised at the backward's end, non-blocking at world size 1),
// its pre/post division with FSDP1's factors (_get_gradient_predivide_factor 489-493, the divides
// 1702 and 1748), and at world size 1 no sharding (copy-in `no-shard`: `_is_sharded = world_size >
// 1`, 721). docs/PRESETS.md D3, G1-G6 (G6, its 25 MB reduce-scatter buckets, is not modelled).
#include "strategies/preset/preset.hpp"

namespace shardaccum {

SHARDACCUM_REGISTER_PRESET(
    Fairscale,
    {.name = "fairscale",
     .description = "raw add, shape tracking, FairScale's D2H over the saved shard, pre/post "
                    "division; unsharded at world size 1",
     .follows = "FairScale FullyShardedDataParallel (move_grads_to_cpu)",
     .spec = {"data", "copy-fairscale", "shape", "pre-post", std::nullopt, "no-shard"},
     .order = 10,
     // _post_backward_hook on the post_backward stream, no per-unit wait;
     // _wait_for_post_backward at the end of the backward.
     .lookahead = Lookahead::unbounded})

}  // namespace shardaccum
