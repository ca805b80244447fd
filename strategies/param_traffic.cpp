#include "strategies/param_traffic.hpp"

namespace shardaccum {

Buffer ParamTraffic::issue(RankBackend& be, const UnitGrad& u) {
  // The unit's unsharded parameter (P_u padded), this rank's shard copied into its slice; the
  // other ranks' slices are the all-gather's, whose traffic is not modelled (header).
  if (!copies_) return be.allocate(MemSpace::device, param_, u.padded, Stream::compute);
  Buffer dev = be.allocate(MemSpace::device, param_, u.padded, Stream::h2d);
  Buffer slice = dev.view(static_cast<uint64_t>(be.rank()) * u.shard, u.shard);
  be.copy_param(slice, host_[u.index], Stream::h2d);
  return dev;
}

Buffer ParamTraffic::fetch(RankBackend& be, const UnitGrad& u) {
  Buffer dev = issue(be, u);
  // The compute that reads the parameters (forward, backward) waits for their copy.
  if (copies_) be.wait(Stream::compute, be.record(Stream::h2d));
  return copy_out(be, u, std::move(dev));
}

Buffer ParamTraffic::copy_out(RankBackend& be, const UnitGrad& u, Buffer gathered) {
  if (!copy_out_) return gathered;
  Buffer param = be.allocate(MemSpace::device, param_, u.padded, Stream::compute);
  be.copy_param(param, gathered, Stream::compute);
  return param;  // `gathered`, the all-gather output, is freed here, after the copy-out
}

void ParamTraffic::forward(RankBackend& be, const std::vector<UnitGrad>& units) {
  if (!active_) return;
  if (copies_ && host_.empty()) {
    host_.resize(units.size());
    for (const UnitGrad& u : units)
      host_[u.index] = allocate_pinned(be, blocks_, param_, u.shard, u.pieces, Stream::h2d);
  }
  if (resident_) on_device_.resize(units.size());
  // The root's pre-forward: the streams that copy the parameters in wait for the compute stream
  // (the previous micro-batch's backward), so a forward's copies never run beside the backward
  // before it. FSDP1 _runtime_utils.py _root_pre_forward -> _wait_for_computation_stream (unshard
  // and pre-unshard streams); FSDP2 _fsdp_state.py FSDPState._root_pre_forward
  // (all_gather_copy_in_stream, where all_gather_inputs copies the offloaded shards, and
  // all_gather_stream wait_stream(current_stream)). Measured in FSDP1 and FSDP2 traces
  // (reports/h200-diagnosis-1204, call 3): each forward's first H2D starts after the last GEMM of
  // the backward before it.
  if (copies_) be.wait(Stream::h2d, be.record(Stream::compute));
  for (const UnitGrad& u : units) {  // forward order: first unit first
    Buffer copy = fetch(be, u);
    if (resident_) on_device_[u.index] = std::move(copy);  // the previous copy is freed now
  }
}

Buffer ParamTraffic::before_backward(RankBackend& be, const UnitGrad& u) {
  if (!active_) return {};
  if (next_ && next_unit_ == u.index) {
    // The backward reads the prefetched parameters.
    if (copies_) be.wait(Stream::compute, next_copied_);
    return copy_out(be, u, std::move(next_));
  }
  next_.reset();  // a prefetch for another unit (a step cut short): never read
  return fetch(be, u);
}

void ParamTraffic::after_backward(RankBackend& be, const UnitGrad& u, Buffer& params,
                                  const UnitGrad* next) {
  if (!active_) return;
  if (resident_) {
    // NO_SHARD frees nothing in its reshard: the prefetch's copy joins the unit's, and the
    // forward's copy is replaced (freed) only after it.
    if (next) prefetch(be, *next);
    if (params && u.index < on_device_.size()) on_device_[u.index] = std::move(params);
    return;
  }
  params.reset();  // reshard: the unsharded parameter is freed before the next one is fetched
  if (next) prefetch(be, *next);
}

void ParamTraffic::prefetch(RankBackend& be, const UnitGrad& next) {
  next_.reset();
  next_ = issue(be, next);
  next_unit_ = next.index;
  if (copies_) next_copied_ = be.record(Stream::h2d);
}

}  // namespace shardaccum
