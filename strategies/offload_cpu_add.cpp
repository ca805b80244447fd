// Offload `cpu-add` (FSDP2 foreach_reduce with offload): D2H `out` into a pinned staging buffer,
// wait for that copy's event, add on the CPU into the saved shard.
// Per S: D2H shard*b_a; H2D nothing.
#include <memory>

#include "strategies/offload_common.hpp"

namespace shardaccum {
namespace {

class CpuAdd final : public OffloadPolicy {
 public:
  const char* name() const override { return "cpu-add"; }
  bool offloaded() const override { return true; }

  bool accumulate(RankBackend& be, UnitGrad& u, Buffer out, bool add, DType accum,
                  const Binding& binding, const AddSite& site) const override {
    const Buffer cast = detail::cast_to_accum(be, out, accum);
    const Buffer& src = cast ? cast : out;
    if (!add) {
      detail::d2h_into_saved(be, u, src);
      return true;
    }
    auto staging = std::make_shared<Buffer>(be.allocate(MemSpace::pinned_host, accum, src.numel(), Stream::copy));
    be.wait(Stream::copy, be.record(Stream::compute));
    be.copy(*staging, src, Stream::copy);  // D2H
    // The CPU may read staging only once the copy has landed; the add runs as a host task so the
    // rank goes on issuing the next units' work meanwhile. The task owns staging.
    be.host_task(be.record(Stream::copy), [&be, &u, &binding, staging, site] {
      binding.add(be, u.saved, *staging, MemSpace::pinned_host, u, site);
    });
    return false;
  }

  SyncCost predicted(bool add, uint64_t a, uint64_t cast) const override {
    return {0, a, cast, add ? a : 0, !add};
  }
};

}  // namespace

std::unique_ptr<OffloadPolicy> make_cpu_add() { return std::make_unique<CpuAdd>(); }

}  // namespace shardaccum
