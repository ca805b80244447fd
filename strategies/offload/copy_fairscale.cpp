// Offload `copy-fairscale`: what FairScale's FullyShardedDataParallel (move_grads_to_cpu, head
// 146f1602; it does not support torch 2.11, so this was read from its source, never run) does on
// the gradient path: FSDP1's G1-G4 (copy_over_saved.hpp), the overwrite included. At world size 1
// FairScale does not shard (`p._is_sharded = self.world_size > 1`, fully_sharded_data_parallel.py
// 721): no reduce-scatter, `_post_reduction_hook(param, param.grad.data)` (1726-1733) copies the
// gradient itself, and the copy stays non-blocking (1772), unlike FSDP1's NO_SHARD.
#include "strategies/offload/copy_over_saved.hpp"

namespace shardaccum {
namespace {

class CopyFairscale final : public CopyOverSavedShard {
 public:
  CopyFairscale() : CopyOverSavedShard(/*blocking_at_world_one=*/false) {}
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    OffloadPolicy, CopyFairscale,
    {.name = "copy-fairscale",
     .description = "FairScale's CPU offload: as copy-fsdp1 (wrong by design, the device shard "
                    "kept, the host synchronised at the micro-batch's end), but at world size 1 "
                    "the copy stays non-blocking",
     .follows = "fairscale/nn/data_parallel/fully_sharded_data_parallel.py _post_reduction_hook "
                "1742-1774, _wait_for_post_backward 1789-1908, _prep_grads_for_backward 2073-2080 "
                "(FairScale 146f1602)",
     .order = 42})

}  // namespace shardaccum
