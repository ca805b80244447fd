// Preset `ideal`: no real system; the limit strategy of issue 17 (docs/DESIGN.md §3): the saved
// shard streamed through the GPU in chunks with H2D and D2H on their own copy streams at once,
// added on the GPU, the mean taken inside the reduce-scatter. What a better system could do.
#include "strategies/preset/preset.hpp"

namespace shardaccum {

SHARDACCUM_REGISTER_PRESET(
    Ideal, {.name = "ideal",
            .description = "checked add, flag tracking, pipelined add on the GPU, mean in the "
                           "reduce-scatter",
            .follows = "idealised: no system; gpu-add-pipelined with division collective (the "
                       "PCIe copies in both directions at once, no division pass)",
            .spec = {"data-free", "gpu-add-pipelined", "flag", "collective"},
            .order = 90,
            // One reduce-scatter in flight behind the backward, as FSDP2: the unsharded
            // gradient of at most one unit waits, so the memory stays that of fsdp2.
            .lookahead = Lookahead::one,
            // The suite's add, which leaves SMs to the backward beside it: not a PyTorch kernel.
            .device_add_grid = DeviceAddGrid::two_per_sm,
            // The collectives first, as FSDP2: no reduce-scatter queues behind a backward kernel.
            .comm_priority = CommPriority::greatest})

}  // namespace shardaccum
