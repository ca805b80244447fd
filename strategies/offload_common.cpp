#include "strategies/offload_common.hpp"

namespace shardaccum::detail {

Buffer cast_to_accum(RankBackend& be, const Buffer& out, DType accum) {
  if (out.dtype() == accum) return {};
  Buffer cast = be.allocate(MemSpace::device, accum, out.numel(), Stream::compute);
  be.convert(cast, out, Stream::compute);
  return cast;
}

void d2h_into_saved(RankBackend& be, UnitGrad& u, const Buffer& src) {
  // A saved shard this step did not recognise (shape on the host) is overwritten in place.
  if (!u.saved || u.saved.numel() != src.numel() || u.saved.space() != MemSpace::pinned_host)
    u.saved = be.allocate(MemSpace::pinned_host, src.dtype(), src.numel(), Stream::copy);
  be.wait(Stream::copy, be.record(Stream::compute));
  be.copy(u.saved, src, Stream::copy);
}

}  // namespace shardaccum::detail
