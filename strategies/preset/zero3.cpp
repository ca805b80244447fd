// Preset `zero3`: DeepSpeed ZeRO-3 with offload: the saved shard copied back to the GPU, added
// there, copied out again.
#include "strategies/preset/preset.hpp"

namespace shardaccum {

SHARDACCUM_REGISTER_PRESET(
    Zero3, {.name = "zero3",
            .description = "checked add, flag tracking, add on the GPU",
            .follows = "DeepSpeed ZeRO-3 offload (async_accumulate_grad_in_cpu_via_gpu)",
            .spec = {"data-free", "gpu-add", "flag", "end"},
            .order = 40,
            // ZeRO-3 reduces on its reduction stream without a per-bucket wait of the backward;
            // independent_gradient_partition_epilogue synchronizes at the end.
            .lookahead = Lookahead::unbounded})

}  // namespace shardaccum
