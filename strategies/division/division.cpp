#include "strategies/division/division.hpp"

namespace shardaccum {

void Division::finalize(RankBackend& be, UnitGrad& u) const {
  if (!u.saved) return;
  const double inv_n = 1.0 / be.world_size();
  if (u.saved.space() == MemSpace::pinned_host) {
    // After the last D2H into saved has landed and after every CPU add queued before it.
    be.host_task(be.record(Stream::copy),
                 [&be, &u, inv_n] { be.scale(u.saved, inv_n, Stream::copy); });
  } else {
    be.scale(u.saved, inv_n, Stream::compute);
  }
}

}  // namespace shardaccum
