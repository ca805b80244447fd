// Division `pre` (DeepSpeed ZeRO-3): every sync, the flat bucket (the unsharded gradient) is
// divided by N on the device before the reduce-scatter, unconditionally (a pass also at N = 1).
#include "strategies/division/division.hpp"

namespace shardaccum {
namespace {

class DivideBefore final : public Division {
 public:
  DivisionSteps steps(int world_size) const override {
    return {.pre_pass = true, .pre = static_cast<double>(world_size)};
  }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    Division, DivideBefore,
    {.name = "pre",
     .description = "divide the unsharded gradient by N before the reduce-scatter, on the device "
                    "every sync",
     .follows = "DeepSpeed ZeRO-3 deepspeed/runtime/comm/coalesced_collectives.py "
                "reduce_scatter_coalesced (tensor_partition_flat_buffer.div_(world_sz)), called "
                "by runtime/zero/stage3.py __avg_scatter_grads",
     .order = 40})

}  // namespace shardaccum
