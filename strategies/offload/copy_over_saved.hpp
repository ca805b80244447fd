#pragma once
// The body shared by offload `copy-fsdp1` (PyTorch FSDP1) and `copy-fairscale` (FairScale's FSDP),
// two systems whose CPU offload does the same on the gradient path (docs/PRESETS.md G1-G5):
//  - G1: every S copies the shard (converted to the accum dtype if needed) D2H over the pinned
//    saved shard on the comm stream, the reduce-scatter's own, right after it (FSDP1
//    _runtime_utils.py _offload_grad 969-991 in `with stream(state._post_backward_stream)`;
//    FairScale fully_sharded_data_parallel.py _post_reduction_hook 1771-1774, run on the
//    post_backward stream), not on the copy stream;
//  - G2: whatever mode tracking says, as `copy`: every sync micro-batch but the last is lost
//    (FSDP1 _flat_param.py prepare_gradient_for_backward 1644-1658; FairScale
//    _prep_grads_for_backward 2079-2080: a gradient on the CPU is dropped);
//  - G3: the device shard the D2H read (_saved_grad_shard; at world size 1 the gradient itself,
//    copy-in `no-shard`) stays alive until the end of the backward micro-batch (FSDP1
//    _runtime_utils.py 921-927, freed by _flat_param.py prepare_gradient_for_optim 1720-1723;
//    FairScale _post_reduction_hook 1760-1767, freed by _wait_for_post_backward 1856-1873);
//  - G4: the backward micro-batch ends with the host waiting for the compute stream, which has
//    waited for the comm stream, so for every D2H (FSDP1 _runtime_utils.py 1107-1111; FairScale
//    _wait_for_post_backward 1809-1811: current_stream().synchronize() after wait_stream);
//  - the pinned `_cpu_grad` (and, with --param-traffic on, the parameters' pinned shard) is one
//    caching-allocator block per unit, rounded up to a power of two (PinnedBlocks::per_unit):
//    FSDP1 _flat_param.py init_flat_param_attributes, FairScale _init_param_attributes 1329.
// The two differ at world size 1 only (G5): FSDP1 runs NO_SHARD and its copy is blocking
// (_runtime_utils.py 984: non_blocking only with a sharded strategy); FairScale's stays
// non-blocking (1772). Per S: D2H shard*b_a; H2D nothing (as `copy`).
#include "strategies/offload/offload_policy.hpp"

namespace shardaccum {

class CopyOverSavedShard : public OverwriteSaved {
 public:
  /// `blocking_at_world_one`: at world size 1 the host waits for each D2H right after issuing it.
  explicit CopyOverSavedShard(bool blocking_at_world_one)
      : blocking_at_world_one_(blocking_at_world_one) {}

  bool offloaded() const override { return true; }

  void start_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum,
                   const AddSite&) const override {
    Buffer cast = detail::cast_to_accum(be, out, accum);
    Buffer src = cast ? std::move(cast) : std::move(out);  // out is freed here when it was cast
    // A saved shard this step did not recognise (shape on the host) is overwritten in place.
    if (!u.saved || u.saved.numel() != src.numel() || u.saved.space() != MemSpace::pinned_host)
      u.saved =
          allocate_pinned(be, pinned_blocks(), src.dtype(), src.numel(), u.pieces, Stream::comm);
    be.copy(u.saved, src, Stream::comm);  // after the reduce-scatter on its stream: no event
    if (blocking_at_world_one_ && be.world_size() == 1) be.host_wait(be.record(Stream::comm));
    u.kept = std::move(src);  // G3: on the device until end_backward
  }

  PinnedBlocks pinned_blocks() const override { return PinnedBlocks::per_unit; }

  uint64_t kept_bytes(uint64_t shard_numel, const DTypeTriple& t) const override {
    return shard_numel * dtype_bytes(t.accum);
  }

  void end_backward(RankBackend& be, std::span<UnitGrad> units) const override {
    be.host_wait(be.record(Stream::compute));  // G4: the host synchronises
    for (UnitGrad& u : units) u.kept.reset();  // G3: then the shards are freed
  }

 private:
  bool blocking_at_world_one_;
};

}  // namespace shardaccum
