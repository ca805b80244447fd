// Mode tracking `flag` (the 2022 FSDP review): explicit state kept by the strategy, never inferred
// from tensors. A sync micro-batch adds into the saved shard iff this step already stored one.
// The review's "mode of the last micro-batch" is not kept: has_saved_shard, set by the step's first
// S, already answers the one question an S asks, whatever the n micro-batches in between.
#include <vector>

#include "strategies/mode/mode_tracking.hpp"

namespace shardaccum {
namespace {

class FlagTracking final : public ModeTracking {
 public:
  explicit FlagTracking(const AxisArgs& a) : has_saved_shard_(a.units, false) {}

  void prepare_backward(uint32_t, MicroBatchMode) override {}
  bool has_saved_shard(uint32_t unit, const SavedView&, uint64_t) const override {
    return has_saved_shard_[unit];  // the tensor itself is never looked at
  }
  void shard_saved(uint32_t unit) override { has_saved_shard_[unit] = true; }
  void finalized(uint32_t unit) override { has_saved_shard_[unit] = false; }

 private:
  std::vector<bool>
      has_saved_shard_;  // per unit: set by the first S of the step, cleared by finalize
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    ModeTracking, FlagTracking,
    {.name = "flag",
     .description = "explicit has-saved-shard state, never inferred from tensors",
     .follows = "the 2022 FSDP review's flag; FSDP2, DeepSpeed ZeRO",
     .order = 10})

}  // namespace shardaccum
