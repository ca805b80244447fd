#include "strategies/param_traffic.hpp"

namespace shardaccum {

Buffer ParamTraffic::issue(RankBackend& be, const UnitGrad& u) {
  Buffer dev = be.allocate(MemSpace::device, param_, u.shard, Stream::h2d);
  be.copy_param(dev, host_[u.index], Stream::h2d);
  return dev;
}

Buffer ParamTraffic::fetch(RankBackend& be, const UnitGrad& u) {
  Buffer dev = issue(be, u);
  // The compute that reads the parameters (forward, backward) waits for their copy.
  be.wait(Stream::compute, be.record(Stream::h2d));
  return dev;
}

void ParamTraffic::forward(RankBackend& be, const std::vector<UnitGrad>& units) {
  if (!active_) return;
  if (host_.empty()) {
    host_.resize(units.size());
    for (const UnitGrad& u : units)
      host_[u.index] = allocate_pinned(be, blocks_, param_, u.shard, u.pieces, Stream::h2d);
  }
  if (resident_) on_device_.resize(units.size());
  for (const UnitGrad& u : units) {  // forward order: first unit first
    Buffer copy = fetch(be, u);
    if (resident_) on_device_[u.index] = std::move(copy);  // the previous copy is freed now
  }
}

Buffer ParamTraffic::before_backward(RankBackend& be, const UnitGrad& u) {
  if (!active_) return {};
  if (next_ && next_unit_ == u.index) {
    be.wait(Stream::compute, next_copied_);  // the backward reads the prefetched parameters
    return std::move(next_);
  }
  next_.reset();  // a prefetch for another unit (a step cut short): never read
  return fetch(be, u);
}

void ParamTraffic::after_backward(const UnitGrad& u, Buffer& params) {
  if (resident_ && params && u.index < on_device_.size()) {
    on_device_[u.index] = std::move(params);  // the forward's copy is freed now
    return;
  }
  params.reset();
}

void ParamTraffic::prefetch(RankBackend& be, const UnitGrad& next) {
  if (!active_) return;
  next_.reset();
  next_ = issue(be, next);
  next_unit_ = next.index;
  next_copied_ = be.record(Stream::h2d);
}

}  // namespace shardaccum
