#pragma once
// Parameter traffic under CPU offload (--param-traffic on, docs/DESIGN.md §2): FSDP keeps each
// unit's sharded parameters in pinned host memory and copies them to the GPU before the unit's
// forward and again before its backward (FSDP2 _fsdp_param.py all_gather_inputs, `.to(device,
// non_blocking=True)`; FSDP1 _flat_param.py pre_unshard), competing for PCIe with the gradient's
// copies. The all-gather that follows at world N is out of scope: only the shard P_u/N is copied.
#include <cstdint>
#include <vector>

#include "strategies/backend/backend.hpp"
#include "strategies/offload/offload_policy.hpp"
#include "strategies/unit_grad.hpp"

namespace shardaccum {

/// One rank's parameter copies for one case. Inactive (every call a no-op) unless the case has
/// --param-traffic on, which CaseSpec keeps for offloaded strategies only.
class ParamTraffic {
 public:
  /// `param` is the parameter dtype (the gradient dtype: b_param = dtype_bytes(grad)).
  /// `resident`: each unit's latest device copy stays until its next copy replaces it, as under
  /// FSDP1's NO_SHARD with offload (copy-in no-shard at world size 1): its reshard points
  /// flat_param.data back at the CPU shard and frees no storage (_flat_param.py
  /// _use_sharded_flat_param, _should_free_in_backward false for NO_SHARD), so the module's
  /// parameter views (and autograd's saved ones) keep the last unshard's device tensor alive until
  /// the next unshard makes a new one: one copy of every unit's parameters is always on the device.
  /// `blocks`: how the host shards are pinned, as the offload value pins its saved shards (FSDP1
  /// one FlatParameter `_local_shard.pin_memory()` per unit, FSDP2 one `pin_memory()` per
  /// parameter, _fsdp_param.py FSDPParam._init_sharded_param; OffloadPolicy::pinned_blocks).
  ParamTraffic(bool active, DType param, bool resident = false,
               PinnedBlocks blocks = PinnedBlocks::exact)
      : active_(active), resident_(resident), blocks_(blocks), param_(param) {}
  bool active() const { return active_; }
  /// The forward of one micro-batch, modelled as a copy phase at its start (the suite runs no
  /// forward compute): for each unit, first to last, its shard P_u/N is copied on the h2d stream
  /// into a fresh device buffer, the compute stream waits for it (the forward would read it), and
  /// the buffer is freed (reshard after forward), or with `resident` kept in place of the unit's
  /// previous copy (freed only now).
  /// Allocates the pinned host shards at the first
  /// call (once per case: FSDP's CPU-resident parameters, in the pinned peak).
  void forward(RankBackend& be, const std::vector<UnitGrad>& units);
  /// Before unit u's backward: its shard in a device buffer that the caller holds until the
  /// backward is issued, the compute stream waiting for its copy. The copy was issued by
  /// prefetch() after the previous unit's backward, else it is issued now on the h2d stream.
  Buffer before_backward(RankBackend& be, const UnitGrad& u);
  /// After unit u's backward is issued and before its gradient is synced: the next unit's shard
  /// copied on the h2d stream into a device buffer kept for its before_backward, with no wait
  /// yet, so the copy runs while u's reduce-scatter and offload copies do, and a host blocked on
  /// u's D2H (FSDP1 at world size 1, FSDP2's later syncs) has already issued it. FSDP's backward
  /// prefetch of one unit: FSDP1 BackwardPrefetch.BACKWARD_PRE, the default, issued from
  /// _runtime_utils.py _post_backward_hook (its "_post_backward_prefetch" range, before the
  /// reduce and offload); FSDP2 _fsdp_param_group.py FSDPParamGroup.pre_backward prefetching
  /// the next group's all-gather. One unit's shard more is alive on the device meanwhile.
  void prefetch(RankBackend& be, const UnitGrad& next);
  /// After unit u's backward is issued, with the copy before_backward returned: freed, or with
  /// `resident` kept in place of the forward's copy (which is freed now).
  void after_backward(const UnitGrad& u, Buffer& params);
  /// Frees a prefetched copy that no backward will read (a step that failed before it) and the
  /// resident copies.
  void drop_prefetch() {
    next_.reset();
    for (Buffer& b : on_device_) b.reset();
  }

 private:
  /// u's shard copied on the h2d stream into a fresh device buffer; nothing waits for it yet.
  Buffer issue(RankBackend& be, const UnitGrad& u);
  Buffer fetch(RankBackend& be, const UnitGrad& u);
  bool active_;
  bool resident_;
  PinnedBlocks blocks_;
  DType param_;
  std::vector<Buffer> on_device_;  // `resident`: per unit index, its latest device copy
  std::vector<Buffer> host_;       // per unit index: its sharded parameters, pinned, once per case
  Buffer next_;                    // prefetch()'s copy, for the unit next_unit_
  uint32_t next_unit_ = 0;
  Event next_copied_;  // recorded on the h2d stream after next_'s copy
};

}  // namespace shardaccum
