#pragma once
// The strategy interface (docs/DESIGN.md §3): three axes, each a small state machine or policy in a
// file of its own, composed behind one AccumulationStrategy. The step driver calls the hooks.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype.hpp"
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

/// Axis 1: how a sync micro-batch knows whether this step already left a shard to add to.
class ModeTracking {
 public:
  virtual ~ModeTracking() = default;
  virtual const char* name() const = 0;
  /// Before a unit's backward in micro-batch `mb`.
  virtual void prepare_backward(uint32_t unit, MicroBatchMode mode) = 0;
  /// At a sync micro-batch, after the reduce-scatter: add into the saved shard (true) or start it.
  virtual bool has_saved_shard(uint32_t unit, const SavedView& saved, uint64_t shard_numel) const = 0;
  /// The offload policy stored `out` as the new saved shard.
  virtual void shard_saved(uint32_t unit) = 0;
  /// The gradient is final for this step.
  virtual void finalized(uint32_t unit) = 0;
};

/// Axis 3: how the add reaches the accumulator.
class Binding {
 public:
  virtual ~Binding() = default;
  virtual const char* name() const = 0;
  /// dst += src in memory space `where`; `u` is the unit whose saved shard takes part.
  virtual void add(RankBackend& be, Buffer& dst, const Buffer& src, MemSpace where, UnitGrad& u,
                   const AddSite& site) const = 0;
};

/// Bytes one sync micro-batch moves over PCIe for one unit, and the transient buffers it needs
/// beyond `out` (for the analytical model; docs/DESIGN.md §3 "Predicted bytes").
struct SyncCost {
  uint64_t h2d = 0, d2h = 0;
  uint64_t device_transient = 0, pinned_transient = 0;  // bytes alive at once during the add
  bool new_saved = false;  // out (in the accum dtype) became the saved shard, as accumulate returns
};

/// Axis 2: where the add happens and what is copied, when `saved` lives on the host.
class OffloadPolicy {
 public:
  virtual ~OffloadPolicy() = default;
  virtual const char* name() const = 0;  // "none", "gpu-add", "cpu-add", "copy"
  virtual bool offloaded() const = 0;    // saved lives in pinned host memory
  /// Consumes `out` (device, reduce dtype, shard elements) into u.saved. `add` is mode tracking's
  /// answer; returns true when `out` became a new saved shard (so the tracker can note it).
  virtual bool accumulate(RankBackend& be, UnitGrad& u, Buffer out, bool add, DType accum,
                          const Binding& binding, const AddSite& site) const = 0;
  /// What accumulate moves for one unit's shard of `shard_bytes_accum` bytes in the accum dtype;
  /// `cast_bytes` > 0 when out must first be converted to the accum dtype on the device.
  virtual SyncCost predicted(bool add, uint64_t shard_bytes_accum, uint64_t cast_bytes) const = 0;
};

/// A strategy = one value of each axis. Names as in the benchmark case names.
struct StrategySpec {
  std::string binding = "data-free";  // data | data-free
  std::string offload = "none";       // none | gpu-add | cpu-add | copy
  std::string mode = "flag";          // flag | shape
  std::string name() const;           // "binding:data/offload:cpu-add/mode:flag"
};

inline constexpr const char* kBindings[] = {"data", "data-free"};
inline constexpr const char* kOffloads[] = {"none", "gpu-add", "cpu-add", "copy"};
inline constexpr const char* kModes[] = {"flag", "shape"};

/// The presets that name real systems (docs/DESIGN.md §3). Throws std::invalid_argument for others.
StrategySpec preset(std::string_view name);
inline constexpr const char* kPresets[] = {"fairscale", "fsdp1", "fsdp2", "zero3"};

/// All 16 strategies: 4 without offload (binding x mode) and 12 with (binding x offload x mode).
std::vector<StrategySpec> all_strategies();

std::unique_ptr<ModeTracking> make_mode_tracking(std::string_view name, size_t units);
std::unique_ptr<OffloadPolicy> make_offload_policy(std::string_view name);
std::unique_ptr<Binding> make_binding(std::string_view name);

/// One rank's strategy: the hooks the step driver calls.
class AccumulationStrategy {
 public:
  AccumulationStrategy(const StrategySpec& spec, size_t units, DTypeTriple dtypes);
  const StrategySpec& spec() const { return spec_; }
  bool offloaded() const { return offload_->offloaded(); }
  const OffloadPolicy& offload() const { return *offload_; }
  const ModeTracking& mode() const { return *mode_; }

  /// Decide what the existing gradient means, before the unit's backward of micro-batch mb.
  void prepare_backward(UnitGrad& u, int mb, MicroBatchMode mode);
  /// THE variable part: fold the reduce-scatter result `out` into the saved shard.
  void accumulate(RankBackend& be, UnitGrad& u, Buffer out, int mb);
  /// Divide by N once; the gradient is then ready for the optimizer.
  void finalize(RankBackend& be, UnitGrad& u);

 private:
  StrategySpec spec_;
  DTypeTriple dtypes_;
  std::unique_ptr<ModeTracking> mode_;
  std::unique_ptr<OffloadPolicy> offload_;
  std::unique_ptr<Binding> binding_;
};

}  // namespace shardaccum
