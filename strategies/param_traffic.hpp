#pragma once
// Parameter traffic under CPU offload (--param-traffic on, docs/DESIGN.md §2): FSDP keeps each
// unit's sharded parameters in pinned host memory and copies them to the GPU before the unit's
// forward and again before its backward (FSDP2 _fsdp_param.py all_gather_inputs, `.to(device,
// non_blocking=True)`; FSDP1 _flat_param.py pre_unshard), competing for PCIe with the gradient's
// copies. The copy lands in the unit's unsharded parameter (P_u padded: what the all-gather
// fills, and what the unit's compute reads), which is alive from the unshard to the reshard; only
// this rank's slice P_u/N is written: the all-gather's traffic at world N is out of scope.
#include <cstdint>
#include <vector>

#include "strategies/backend/backend.hpp"
#include "strategies/offload/offload_policy.hpp"
#include "strategies/unit_grad.hpp"

namespace shardaccum {

/// Whether --param-traffic on has a parameter path to model: an offloaded strategy's copies, or
/// without offload the unsharded parameters of a sharded one. Not NO_SHARD without offload
/// (`in_place`: copy-in no-shard at world size 1), whose parameters stay whole on the device.
inline bool params_modelled(bool offloaded, bool in_place) { return offloaded || !in_place; }

/// One rank's parameter path for one case. Inactive (every call a no-op) unless the case has
/// --param-traffic on, which CaseSpec keeps where there is a path to model (params_modelled).
/// Without offload (`copies` false) the sharded parameters stay on the device, outside the model
/// as before, and only the unsharded parameters are held, in the same places: allocated, not
/// written (the all-gather's traffic is not modelled), no H2D, no pinned host shards.
class ParamTraffic {
 public:
  /// `param` is the parameter dtype (the gradient dtype: b_param = dtype_bytes(grad)).
  /// `copies`: the shards live in pinned host memory and each unshard copies this rank's H2D
  /// (offloaded strategies); else nothing is copied.
  /// `resident`: each unit's latest device copy stays until its next copy replaces it, as under
  /// FSDP1's NO_SHARD with offload (copy-in no-shard at world size 1): its reshard points
  /// flat_param.data back at the CPU shard and frees no storage (_flat_param.py
  /// _use_sharded_flat_param, _should_free_in_backward false for NO_SHARD), so the module's
  /// parameter views (and autograd's saved ones) keep the last unshard's device tensor alive until
  /// the next unshard makes a new one: one copy of every unit's parameters is always on the device.
  /// `blocks`: how the host shards are pinned, as the offload value pins its saved shards (FSDP1
  /// one FlatParameter `_local_shard.pin_memory()` per unit, FSDP2 one `pin_memory()` per
  /// parameter, _fsdp_param.py FSDPParam._init_sharded_param; OffloadPolicy::pinned_blocks).
  /// `copy_out`: FSDP2's all-gather copy-out. FSDP2 gathers a unit into an all-gather output and
  /// copies it into the unit's unsharded parameter on the compute stream when the unit's forward
  /// or backward first needs it (_fsdp_param_group.py FSDPParamGroup.wait_for_unshard ->
  /// _fsdp_collectives.py foreach_all_gather_copy_out, split_with_sizes_copy), then frees the
  /// output: measured on one H200, one P_u device copy per unshard on the compute stream, offload
  /// or not (reports/h200-diagnosis-1204/call3/copy_out.py). The buffer the unshard filled plays
  /// the all-gather output; the unsharded parameter is a second one of the same P_u padded
  /// elements (FSDP2's is P_u unpadded: fewer by the padding, up to 8N-1 elements), allocated on
  /// the compute stream, copied into with copy_param (param_d2d_bytes), and the output freed after
  /// it. FSDP1 gathers into its padded flat parameter itself and has no copy-out.
  ParamTraffic(bool active, DType param, bool resident = false,
               PinnedBlocks blocks = PinnedBlocks::exact, bool copies = true, bool copy_out = false)
      : active_(active),
        copies_(copies),
        resident_(resident),
        copy_out_(copy_out),
        blocks_(blocks),
        param_(param) {}
  bool active() const { return active_; }
  /// The forward of one micro-batch, modelled as a copy phase at its start (the suite runs no
  /// forward compute), after the h2d stream has waited for the compute stream's work so far
  /// (FSDP's root pre-forward): for each unit, first to last, its shard P_u/N is copied on the h2d
  /// stream into its fresh unsharded parameter, the compute stream waits for it (the forward reads
  /// it), and the parameter is freed (reshard after forward), or with `resident` kept in place of
  /// the unit's previous copy (freed only now). Allocates the pinned host shards at the first call
  /// (once per case: FSDP's CPU-resident parameters, in the pinned peak). Without `copies`: each
  /// unit's unsharded parameter allocated and freed in turn, no wait, no copy, no host shards.
  void forward(RankBackend& be, const std::vector<UnitGrad>& units);
  /// Before unit u's backward: its unsharded parameter (u.padded elements, this rank's shard
  /// copied in) that the caller holds until the backward is issued, the compute stream waiting
  /// for its copy. The copy was issued by after_backward's prefetch after the previous unit's
  /// backward, else it is issued now on the h2d stream. Without `copies`: the parameter only,
  /// allocated on the compute stream, nothing copied and nothing waited for.
  Buffer before_backward(RankBackend& be, const UnitGrad& u);
  /// After unit u's backward is issued and before its gradient is synced, with the buffer
  /// before_backward returned: the reshard, then the prefetch of `next` (the unit whose backward
  /// comes next; none after the last). The reshard frees u's unsharded parameter, or with
  /// `resident` keeps it in place of the forward's copy (freed now, after the prefetch: NO_SHARD
  /// frees nothing). The prefetch copies next's shard on the h2d stream into its unsharded
  /// parameter, kept for its before_backward with no wait yet, so the copy runs while u's
  /// reduce-scatter and offload copies do, and a host blocked on u's D2H (FSDP1 at world size 1,
  /// FSDP2's later syncs) has already issued it. The order is FSDP1's _runtime_utils.py
  /// _post_backward_reshard (_reshard, then _prefetch_handle in its "_post_backward_prefetch"
  /// range, before the reduce and offload); FSDP2 prefetches from
  /// _fsdp_param_group.py FSDPParamGroup.pre_backward, yet its measured peaks hold one unit's
  /// unsharded parameter, none prefetched beside it (reports/h200-diagnosis-1204, the memory
  /// histories: `_fsdp_param.py` alloc_storage once at every peak, with offload and without).
  void after_backward(RankBackend& be, const UnitGrad& u, Buffer& params, const UnitGrad* next);
  /// Frees a prefetched copy that no backward will read (a step that failed before it) and the
  /// resident copies.
  void drop_prefetch() {
    next_.reset();
    for (Buffer& b : on_device_) b.reset();
  }

 private:
  /// u's unsharded parameter, with `copies` this rank's shard copied into it on the h2d stream;
  /// nothing waits for it yet.
  Buffer issue(RankBackend& be, const UnitGrad& u);
  Buffer fetch(RankBackend& be, const UnitGrad& u);
  /// With `copy_out`: u's unsharded parameter, copied on the compute stream from `gathered` (the
  /// all-gather output), which is freed; without: `gathered` itself.
  Buffer copy_out(RankBackend& be, const UnitGrad& u, Buffer gathered);
  /// next's copy issued on the h2d stream and kept in next_, with no wait yet.
  void prefetch(RankBackend& be, const UnitGrad& next);
  bool active_;
  bool copies_;
  bool resident_;
  bool copy_out_;
  PinnedBlocks blocks_;
  DType param_;
  std::vector<Buffer> on_device_;  // `resident`: per unit index, its latest device copy
  std::vector<Buffer> host_;       // per unit index: its sharded parameters, pinned, once per case
  Buffer next_;                    // prefetch()'s copy, for the unit next_unit_
  uint32_t next_unit_ = 0;
  Event next_copied_;  // recorded on the h2d stream after next_'s copy
};

}  // namespace shardaccum
