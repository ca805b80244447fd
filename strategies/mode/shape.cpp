// Mode tracking `shape`, as FSDP1's prepare_gradient_for_backward: no state of its own. An existing
// shard-shaped gradient on the device is taken as the saved shard; one that lives on the host
// (offloaded) is not recognised (FSDP1's TODO), so the next S starts a new saved shard over it.
// At world size 1 shard and unsharded shapes coincide; at the add the unsharded gradient has
// already been freed by the reduce-scatter, so what is left can only be the saved shard.
#include "strategies/mode/mode_tracking.hpp"

namespace shardaccum {
namespace {

class ShapeTracking final : public ModeTracking {
 public:
  void prepare_backward(uint32_t, MicroBatchMode) override {}
  bool has_saved_shard(uint32_t, const SavedView& saved, uint64_t shard_numel) const override {
    return saved.present && saved.space == MemSpace::device && saved.numel == shard_numel;
  }
  void shard_saved(uint32_t) override {}
  void finalized(uint32_t) override {}
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    ModeTracking, ShapeTracking,
    {.name = "shape",
     .description = "infer from the gradient's shape and placement; blind to an offloaded shard",
     .follows = "FSDP1 _prepare_gradient_for_backward",
     .order = 20})

}  // namespace shardaccum
