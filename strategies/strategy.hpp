#pragma once
// The strategy (docs/DESIGN.md §3): one value of each axis — binding, offload, mode, division —
// each a small state machine or policy in a file of its own under strategies/<axis>/, registered by
// name (strategies/registry.hpp), composed here behind one AccumulationStrategy whose hooks the
// step driver calls.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype.hpp"
#include "strategies/binding/binding.hpp"
#include "strategies/division/division.hpp"
#include "strategies/mode/mode_tracking.hpp"
#include "strategies/offload/offload_policy.hpp"
#include "strategies/schedule.hpp"
#include "strategies/unit_grad.hpp"

namespace shardaccum {

/// A strategy = one value of each axis, by registered name.
struct StrategySpec {
  std::string binding = "data-free";
  std::string offload = "none";
  std::string mode = "flag";
  std::string division = "end";
  /// "binding:B/offload:O/mode:M", then "/division:D" unless D is the axis's default
  /// (kDefaultDivision): an axis added later at its default leaves names, filters and compare
  /// baselines as they were.
  std::string name() const;
  bool operator==(const StrategySpec&) const = default;
};

/// The default of the `division` axis, left out of case names.
inline constexpr const char* kDefaultDivision = "end";

/// Throws std::invalid_argument naming the flag when an axis value of `s` is not registered.
void validate(const StrategySpec& s);

/// One rank's strategy: the hooks the step driver calls.
class AccumulationStrategy {
 public:
  /// Throws std::invalid_argument for an unregistered axis value.
  AccumulationStrategy(const StrategySpec& spec, size_t units, DTypeTriple dtypes);
  const StrategySpec& spec() const { return spec_; }
  bool offloaded() const { return offload_->offloaded(); }
  const OffloadPolicy& offload() const { return *offload_; }
  const ModeTracking& mode() const { return *mode_; }
  /// How many units the backward may run ahead of the reduce-scatters: the least of its values'
  /// registered backward_ahead (0 today: the compute stream waits for each reduce-scatter).
  uint32_t backward_ahead() const { return backward_ahead_; }

  /// Decide what the existing gradient means, before the unit's backward of micro-batch mb.
  void prepare_backward(UnitGrad& u, int mb, MicroBatchMode mode);
  /// THE variable part: fold the reduce-scatter result `out` into the saved shard.
  void accumulate(RankBackend& be, UnitGrad& u, Buffer out, int mb);
  /// Make the saved shard the mean over ranks (the division axis); then it is ready for the
  /// optimizer.
  void finalize(RankBackend& be, UnitGrad& u);

 private:
  StrategySpec spec_;
  DTypeTriple dtypes_;
  std::unique_ptr<ModeTracking> mode_;
  std::unique_ptr<OffloadPolicy> offload_;
  std::unique_ptr<Binding> binding_;
  std::unique_ptr<Division> division_;
  uint32_t backward_ahead_ = 0;
};

}  // namespace shardaccum
