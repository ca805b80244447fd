#pragma once
// Axis `binding` (docs/DESIGN.md §3): how the add reaches the accumulator. One value per file in
// this folder, registered with SHARDACCUM_REGISTER_VALUE(Binding, ...).
#include "strategies/registry.hpp"
#include "strategies/unit_grad.hpp"

namespace shardaccum {

class Binding {
 public:
  static constexpr const char* kAxis = "binding";
  virtual ~Binding() = default;
  /// dst += src in memory space `where`; `u` is the unit whose saved shard takes part. Throws
  /// AccumulationError (naming `site`) for operands the binding rejects.
  virtual void add(RankBackend& be, Buffer& dst, const Buffer& src, MemSpace where, UnitGrad& u,
                   const AddSite& site) const = 0;
};

using BindingRegistry = AxisRegistry<Binding>;

}  // namespace shardaccum
