// Copy-in `no-shard` (PyTorch FSDP1, FairScale): at world size >= 2 (FULL_SHARD) the reduce-scatter
// reads the unit's unsharded gradient itself, as `none`. At world size 1 FSDP1 runs NO_SHARD
// (_init_utils.py 426-437): a sync all-reduces `flat_param.grad` in place (a no-op on one rank) and
// keeps no _saved_grad_shard (_runtime_utils.py _reduce_grad_no_shard 932-941). Without offload
// that gradient stays the accumulator for the whole step (prepare_gradient_for_backward leaves an
// unsharded on-device .grad alone, _flat_param.py); with offload it is what _offload_grad copies.
// So no reduce-scatter copy, no output shard and no saved shard beside the gradient. FairScale does
// the same at world size 1 (fully_sharded_data_parallel.py 721 `_is_sharded = world_size > 1`,
// _post_backward_hook 1728-1733 hands param.grad itself to _post_reduction_hook, which keeps no
// _saved_grad_shard unsharded, 1758; _prep_grads_for_backward 2081-2083 leaves a full-size .grad).
#include "strategies/copy_in/copy_in.hpp"

namespace shardaccum {
namespace {

class NoShardCopyIn final : public CopyIn {
 public:
  bool separate_input() const override { return false; }
  bool in_place(int world_size) const override { return world_size == 1; }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    CopyIn, NoShardCopyIn,
    {.name = "no-shard",
     .description = "as none; at world size 1 (NO_SHARD) no reduce-scatter: the gradient is "
                    "reduced in place and stays the accumulator",
     .follows = "PyTorch FSDP1 _init_utils.py 426-437 (NO_SHARD at world size 1), "
                "_runtime_utils.py _reduce_grad_no_shard 932-941, _flat_param.py "
                "prepare_gradient_for_backward; FairScale fully_sharded_data_parallel.py 721, "
                "_post_backward_hook 1728-1733",
     .order = 30})

}  // namespace shardaccum
