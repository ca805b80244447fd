#pragma once
// Axis `copy-in` (docs/DESIGN.md §3): what a sync's reduce-scatter reads. `none` (the default):
// the unit's unsharded gradient itself. `chunk-cat`: a separate input buffer in the reduce dtype,
// filled by a device copy/cast from the gradient, which is freed at once (PyTorch FSDP2
// foreach_reduce). One value per file in this folder, registered with
// SHARDACCUM_REGISTER_VALUE(CopyIn, ...); the hooks, the model and the bound read separate_input().
#include <string_view>

#include "strategies/registry.hpp"
#include "strategies/unit_grad.hpp"

namespace shardaccum {

class CopyIn {
 public:
  static constexpr const char* kAxis = "copy-in";
  virtual ~CopyIn() = default;
  /// True: the reduce-scatter reads a buffer of its own in the reduce dtype (the copy-in), and a
  /// no-sync gradient is held in the reduce dtype when it differs from the grad dtype.
  virtual bool separate_input() const = 0;

  /// The reduce-scatter's input for the unit's gradient `grad` (device, padded elements). Without
  /// separate_input: `grad` itself, moved out. With it: a new device buffer of `reduce` and grad's
  /// numel, filled on the compute stream by a convert (the accumulate phase), then `grad` freed
  /// (FSDP2 _fsdp_collectives.py foreach_reduce: allocate, foreach_reduce_scatter_copy_in,
  /// unsharded_grads.clear()). Throws what the backend throws (out of device memory).
  Buffer input(RankBackend& be, Buffer& grad, DType reduce) const;
  /// After the backward of a micro-batch that does not sync: with separate_input, a gradient not
  /// yet in `reduce` is replaced by a converted copy in `reduce`, on the compute stream (FSDP2
  /// _fsdp_param.py to_accumulated_grad_if_needed). Without it, or already in `reduce`: nothing.
  void hold_no_sync(RankBackend& be, Buffer& grad, DType reduce) const;
};

using CopyInRegistry = AxisRegistry<CopyIn>;

/// The default of the `copy-in` axis, left out of case names.
inline constexpr const char* kDefaultCopyIn = "none";

/// separate_input() of the registered value `name`. Throws std::invalid_argument for an
/// unregistered name (naming --copy-in).
bool copy_in_separate(std::string_view name);

}  // namespace shardaccum
