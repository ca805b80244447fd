// Mode tracking `flag` (the 2022 FSDP review): explicit state kept by the strategy, never inferred
// from tensors. A sync micro-batch adds into the saved shard iff this step already stored one.
#include <vector>

#include "strategies/strategy.hpp"

namespace shardaccum {
namespace {

class FlagTracking final : public ModeTracking {
 public:
  explicit FlagTracking(size_t units) : state_(units) {}
  const char* name() const override { return "flag"; }

  void prepare_backward(uint32_t unit, MicroBatchMode mode) override { state_[unit].last_mode = mode; }

  bool has_saved_shard(uint32_t unit, const SavedView&, uint64_t) const override {
    return state_[unit].has_saved_shard;  // the tensor itself is never looked at
  }
  void shard_saved(uint32_t unit) override { state_[unit].has_saved_shard = true; }
  void finalized(uint32_t unit) override { state_[unit] = State{}; }

 private:
  struct State {
    MicroBatchMode last_mode = MicroBatchMode::sync;  // of the micro-batch now in backward
    bool has_saved_shard = false;  // set by the first S of the step, cleared by finalize
  };
  std::vector<State> state_;
};

}  // namespace

std::unique_ptr<ModeTracking> make_flag_tracking(size_t units) {
  return std::make_unique<FlagTracking>(units);
}

}  // namespace shardaccum
