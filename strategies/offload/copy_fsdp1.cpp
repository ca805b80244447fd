// Offload `copy-fsdp1`: what PyTorch FSDP1 (torch 2.11) does with CPUOffload on the gradient path,
// the overwrite included (docs/PRESETS.md G1-G5):
//  - G1: every S copies the shard (converted to the accum dtype if needed) D2H over the pinned
//    saved shard on the comm stream, the reduce-scatter's own (_runtime_utils.py _offload_grad
//    969-991 inside `with stream(state._post_backward_stream)`, 755), not on the copy stream;
//  - G2: whatever mode tracking says (prepare_gradient_for_backward, _flat_param.py 1644-1658), as
//    `copy`: every sync micro-batch but the last is lost;
//  - G3: at world size >= 2 that device shard (_saved_grad_shard, _runtime_utils.py 921-927) stays
//    alive until the end of the backward micro-batch (freed by prepare_gradient_for_optim,
//    _flat_param.py 1720-1723, from _post_backward_final_callback): +shard*b_a device per unit;
//  - G4: the backward micro-batch ends with the host waiting for the compute stream, which has
//    waited for the comm stream, so for every D2H (_runtime_utils.py 1107-1111,
//    current_stream().synchronize() after wait_stream(post_backward_stream));
//  - G5: at world size 1 FSDP1 runs NO_SHARD (_init_utils.py 426-437): the copy is blocking (the
//    host waits for it right after issuing it, _runtime_utils.py 984), and no _saved_grad_shard is
//    kept (_reduce_grad_no_shard 932-941): the device gradient itself is what stays until
//    _post_backward_final_callback points .grad at _cpu_grad (prepare_gradient_for_optim). With
//    copy-in `no-shard` (the preset's) `out` is that gradient; with `none`, a reduce-scatter copy.
//  - its pinned `_cpu_grad` (and, with --param-traffic on, `_local_shard`) is one caching-allocator
//    block per unit, rounded up to a power of two (PinnedBlocks::per_unit).
// Per S: D2H shard*b_a; H2D nothing (as `copy`).
#include "strategies/offload/offload_policy.hpp"

namespace shardaccum {
namespace {

class CopyFsdp1 final : public OffloadPolicy {
 public:
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
    if (be.world_size() == 1) be.host_wait(be.record(Stream::comm));  // NO_SHARD: blocking
    // _saved_grad_shard (or, under NO_SHARD, flat_param.grad itself: copy-in no-shard) stays on
    // the device until end_backward.
    u.kept = std::move(src);
  }

  // _cpu_grad, pinned through PyTorch's caching host allocator, one per FlatParameter
  // (_flat_param.py init_flat_param_attributes: `torch.zeros_like(..).pin_memory()`).
  PinnedBlocks pinned_blocks() const override { return PinnedBlocks::per_unit; }

  bool add_to_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum, const Binding&,
                    const AddSite& site) const override {
    start_saved(be, u, std::move(out), accum, site);
    return true;
  }

  SyncCost predicted_add(uint64_t shard_numel, const DTypeTriple& t) const override {
    return predicted_start(shard_numel, t);
  }

  uint64_t kept_bytes(uint64_t shard_numel, const DTypeTriple& t) const override {
    return shard_numel * dtype_bytes(t.accum);
  }

  void end_backward(RankBackend& be, std::span<UnitGrad> units) const override {
    be.host_wait(be.record(Stream::compute));  // G4: the host synchronises
    for (UnitGrad& u : units) u.kept.reset();  // G3: then _finalize_params frees the shards
  }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    OffloadPolicy, CopyFsdp1,
    {.name = "copy-fsdp1",
     .description = "FSDP1's CPU offload: D2H out over the saved shard on the reduce-scatter's "
                    "stream (wrong by design), the device shard kept until the micro-batch's end, "
                    "the host synchronised then; at world size 1 (NO_SHARD) a blocking copy",
     .follows = "torch/distributed/fsdp/_runtime_utils.py _offload_grad 969-991, "
                "_accumulate_sharded_grad 921-927, _post_backward_final_callback 1084-1117; "
                "_init_utils.py 426-437 (NO_SHARD at world size 1); pytorch#73784",
     .order = 41})

}  // namespace shardaccum
