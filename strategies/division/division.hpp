#pragma once
// Axis `division` (docs/DESIGN.md §3): where the gradient is divided by the world size N to give
// the mean over ranks. One value per file in this folder, registered with
// SHARDACCUM_REGISTER_VALUE(Division, ...). The shared path (once, on the finished saved shard)
// is the default here; a value may override it.
#include "strategies/registry.hpp"
#include "strategies/unit_grad.hpp"

namespace shardaccum {

class Division {
 public:
  static constexpr const char* kAxis = "division";
  virtual ~Division() = default;
  /// After the step's last micro-batch: make u.saved the mean over ranks. Default: multiply by 1/N
  /// once, in the saved shard's own memory space: a host task after the last D2H and every CPU add
  /// queued before it when the shard is pinned; the compute stream when it is on the device.
  virtual void finalize(RankBackend& be, UnitGrad& u) const;
};

using DivisionRegistry = AxisRegistry<Division>;

}  // namespace shardaccum
