#pragma once
// Axis `mode` (docs/DESIGN.md §3): how a sync micro-batch knows whether this step already left a
// shard to add to. One value per file in this folder, registered with
// SHARDACCUM_REGISTER_VALUE(ModeTracking, ...); a value is constructed per rank with AxisArgs
// (units).
#include <cstdint>

#include "strategies/registry.hpp"
#include "strategies/schedule.hpp"
#include "strategies/unit_grad.hpp"

namespace shardaccum {

/// What mode tracking may inspect of a unit's saved shard (the `shape` tracker's whole world).
struct SavedView {
  bool present = false;
  MemSpace space = MemSpace::device;
  uint64_t numel = 0;
};
inline SavedView view_of(const Buffer& b) { return {static_cast<bool>(b), b.space(), b.numel()}; }

class ModeTracking {
 public:
  static constexpr const char* kAxis = "mode";
  virtual ~ModeTracking() = default;
  /// Before a unit's backward in a micro-batch of mode `mode`.
  virtual void prepare_backward(uint32_t unit, MicroBatchMode mode) = 0;
  /// At a sync micro-batch, after the reduce-scatter: add into the saved shard (true) or start it.
  virtual bool has_saved_shard(uint32_t unit, const SavedView& saved,
                               uint64_t shard_numel) const = 0;
  /// The offload policy stored `out` as the new saved shard.
  virtual void shard_saved(uint32_t unit) = 0;
  /// The gradient is final for this step.
  virtual void finalized(uint32_t unit) = 0;
};

using ModeRegistry = AxisRegistry<ModeTracking>;

}  // namespace shardaccum
