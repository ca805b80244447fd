#pragma once
// Axis `division` (docs/DESIGN.md §3): where the gradient is divided by the world size N to give
// the mean over ranks. One value per file in this folder, registered with
// SHARDACCUM_REGISTER_VALUE(Division, ...). A value says what it does (DivisionSteps); the hooks
// below, the analytical model, the bound and the oracle all read that one description.
#include <string_view>

#include "strategies/division/division_steps.hpp"
#include "strategies/registry.hpp"
#include "strategies/unit_grad.hpp"

namespace shardaccum {

class Division {
 public:
  static constexpr const char* kAxis = "division";
  virtual ~Division() = default;
  /// What this value does at world size `world_size` (>= 1).
  virtual DivisionSteps steps(int world_size) const = 0;

  /// Before a sync's reduce-scatter, on the comm stream (after it waited for the backward): the
  /// pre-division of the unsharded gradient `grad`, if any.
  void before_reduce_scatter(RankBackend& be, Buffer& grad) const;
  /// After the reduce-scatter, on the comm stream: the post-division of its output, if any.
  void after_reduce_scatter(RankBackend& be, Buffer& out) const;
  /// After the step's last micro-batch, with at_end: multiply u.saved by 1/N once, in the saved
  /// shard's own memory space: a host task after the last D2H and every CPU add queued before it
  /// when the shard is pinned; the compute stream when it is on the device.
  void finalize(RankBackend& be, UnitGrad& u) const;
};

using DivisionRegistry = AxisRegistry<Division>;

/// The steps of the registered value `name` at `world_size`. Throws std::invalid_argument for an
/// unregistered name (naming --division).
DivisionSteps division_steps(std::string_view name, int world_size);

}  // namespace shardaccum
