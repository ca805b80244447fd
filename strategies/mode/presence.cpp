// Mode tracking `presence`: FSDP1's shape check with its CPU-offload TODO resolved (idealised, not
// a preset). A sync micro-batch adds when a saved shard of the shard's size exists, on the device
// or on the host; `shape` instead ignores a shard that lives on the host and overwrites it. No
// state of its own, like `shape`: at the add the unsharded gradient is already freed, so a
// shard-sized buffer can only be this step's saved shard.
#include "strategies/mode/mode_tracking.hpp"

namespace shardaccum {
namespace {

class PresenceTracking final : public ModeTracking {
 public:
  void prepare_backward(uint32_t, MicroBatchMode) override {}
  bool has_saved_shard(uint32_t, const SavedView& saved, uint64_t shard_numel) const override {
    return saved.present && saved.numel == shard_numel;  // wherever it lives
  }
  void shard_saved(uint32_t) override {}
  void finalized(uint32_t) override {}
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    ModeTracking, PresenceTracking,
    {.name = "presence",
     .description = "infer from a shard-sized saved gradient, on the device or the host",
     .follows = "FSDP1 _prepare_gradient_for_backward with its offload TODO resolved (idealised)",
     .order = 30})

}  // namespace shardaccum
