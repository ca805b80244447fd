// Preset `fsdp1`: PyTorch FSDP1 with CPUOffload: checked add, shape tracking, FSDP1's offload
// (`copy-fsdp1`: the saved shard overwritten by each sync, pytorch#73784, the D2H on the
// reduce-scatter's stream, the device shard kept and the host synchronised at the backward's end,
// a blocking copy at world size 1) and its pre/post division (docs/PRESETS.md D2, G1-G5); at world
// size 1 NO_SHARD's in-place gradient (copy-in `no-shard`).
#include "strategies/preset/preset.hpp"

namespace shardaccum {

SHARDACCUM_REGISTER_PRESET(
    Fsdp1,
    {.name = "fsdp1",
     .description =
         "checked add, shape tracking, FSDP1's D2H over the saved shard, pre/post division; "
         "NO_SHARD at world size 1",
     .follows = "PyTorch FSDP1 FullyShardedDataParallel with CPUOffload(offload_params=True)",
     // Copy-in no-shard: at world size 1 FSDP1 is NO_SHARD (no reduce-scatter, the gradient
     // itself offloaded); the lookahead is the one of FULL_SHARD's reduce-scatters.
     .spec = {"data-free", "copy-fsdp1", "shape", "pre-post", std::nullopt, "no-shard"},
     .order = 20,
     // FSDP1 _post_backward_hook issues the reduce-scatter on its post-backward stream without a
     // per-unit wait; _post_backward_final_callback makes the compute stream wait at the end.
     .lookahead = Lookahead::unbounded,
     // After each of NO_SHARD's blocking D2Hs the GPU idled 351-363 µs in real FSDP1 (its
     // _post_backward_hook's rest, the next unit's _pre_backward_hook, autograd's engine; one H100,
     // reports/h100-fsdp1-offload-profile-1206/host_gap.txt). With a spin, the preset's own part
     // of that gap is 54 µs before the spin and 121 after it, to the next GPU op (medians, traced,
     // one H100, reports/h100-fsdp1-hook-validation-1207/issue_latency.txt): 357 - 54 - 121 =
     // 182, taken as 185, within the real gaps' own spread (docs/PRESETS.md H1).
     .hook_host_us = 185})

}  // namespace shardaccum
