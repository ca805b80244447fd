// Offload `copy-fsdp1`: what PyTorch FSDP1 (torch 2.11) does with CPUOffload on the gradient path,
// the overwrite included (docs/PRESETS.md G1-G5; the shared body: copy_over_saved.hpp). At world
// size 1 FSDP1 runs NO_SHARD (G5, _init_utils.py 426-437): the copy is blocking (the host waits
// for it right after issuing it, _runtime_utils.py 984), and no _saved_grad_shard is kept
// (_reduce_grad_no_shard 932-941): the device gradient itself is what stays until
// _post_backward_final_callback points .grad at _cpu_grad (prepare_gradient_for_optim). With
// copy-in `no-shard` (the preset's) that gradient is what the D2H reads; with `none`, a
// reduce-scatter copy.
#include "strategies/offload/copy_over_saved.hpp"

namespace shardaccum {
namespace {

class CopyFsdp1 final : public CopyOverSavedShard {
 public:
  CopyFsdp1() : CopyOverSavedShard(/*blocking_at_world_one=*/true) {}
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    OffloadPolicy, CopyFsdp1,
    {.name = "copy-fsdp1",
     .description = "FSDP1's CPU offload: D2H out over the saved shard on the reduce-scatter's "
                    "stream (wrong by design), the device shard kept until the micro-batch's end, "
                    "the host synchronised then; at world size 1 (NO_SHARD) a blocking copy",
     .follows = "torch/distributed/fsdp/_runtime_utils.py _offload_grad 969-991, "
                "_accumulate_sharded_grad 921-927, _post_backward_final_callback 1084-1117; "
                "_init_utils.py 426-437 (NO_SHARD at world size 1); pytorch#73784",
     .order = 41})

}  // namespace shardaccum
