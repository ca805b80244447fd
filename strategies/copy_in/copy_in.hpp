#pragma once
// Axis `copy-in` (docs/DESIGN.md §3): what a sync's reduce-scatter reads. `none` (the default):
// the unit's unsharded gradient itself. `chunk-cat`: a separate input buffer in the reduce dtype,
// filled by a device copy/cast from the gradient, which is freed at once (PyTorch FSDP2
// foreach_reduce). `no-shard`: as `none`, but at world size 1 the gradient is reduced in place and
// stays the accumulator (PyTorch FSDP1's NO_SHARD). One value per file in this folder, registered
// with SHARDACCUM_REGISTER_VALUE(CopyIn, ...); the hooks, the model and the bound read
// separate_input().
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
  /// True: at this world size a sync does no reduce-scatter. The gradient is reduced in place (the
  /// division's passes on it) and is itself what the offload copies (as a reduce-scatter output
  /// would be), or without offload it stays the unit's gradient, which later backwards accumulate
  /// into and the step's end makes the saved shard (FSDP1 NO_SHARD: _runtime_utils.py
  /// _reduce_grad_no_shard 932-941; _flat_param.py prepare_gradient_for_backward keeps an
  /// unsharded on-device .grad). Never with separate_input.
  virtual bool in_place(int /*world_size*/) const { return false; }

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
/// in_place(world_size) of the registered value `name`; throws as copy_in_separate.
bool copy_in_in_place(std::string_view name, int world_size);

}  // namespace shardaccum
