// Preset `zero3`: DeepSpeed ZeRO-3 with offload_optimizer (0.19.8): the first S's shard copied out
// and straight back, each later S's saved shard copied back to the GPU, added there and copied out
// again, the boundary's copy into the optimizer's fp32 gradient (`gpu-add-zero3`, docs/PRESETS.md
// Z4, Z5), the bucket divided by N before the reduce-scatter (`pre`, D4).
#include "strategies/preset/preset.hpp"

namespace shardaccum {

SHARDACCUM_REGISTER_PRESET(
    Zero3,
    {.name = "zero3",
     .description = "checked add, flag tracking, add on the GPU as ZeRO-3 does it, "
                    "division before the reduce-scatter",
     .follows = "DeepSpeed ZeRO-3 offload_optimizer (stage3.py partition_grads, "
                "__avg_scatter_grads)",
     .spec = {"data-free", "gpu-add-zero3", "flag", "pre"},
     .order = 40,
     // ZeRO-3 reduces a bucket of 5e8 elements at a time on its reduction stream, the
     // host waiting when 3 flushes are pending; independent_gradient_partition_epilogue
     // synchronizes at the end of every backward (PRESETS Z2, strategies/reduce_buckets.hpp).
     .lookahead = Lookahead::buckets,
     // PRESETS Z7: engine.no_sync asserts for stage 2 and 3; n^(K-1)S is one
     // coalesce_grad_reduction block, as the real runner runs it (bench/real).
     .refuses_interleaved = "DeepSpeed's engine.no_sync asserts for ZeRO stage 2 and 3 "
                            "(deepspeed/runtime/engine.py:3227-3228, 0.19.8); it reduces "
                            "every micro-step (S^K) or once per coalesce_grad_reduction "
                            "block (n^(K-1)S, engine.py:3238-3239)"})

}  // namespace shardaccum
