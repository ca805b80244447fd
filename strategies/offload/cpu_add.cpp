// Offload `cpu-add` (FSDP2 foreach_reduce with offload): D2H `out` into a pinned staging buffer,
// wait for that copy's event, add on the CPU into the saved shard.
// Per S: D2H shard*b_a; H2D nothing.
#include <memory>

#include "strategies/offload/offload_policy.hpp"

namespace shardaccum {
namespace {

class CpuAdd final : public OffloadPolicy {
 public:
  bool offloaded() const override { return true; }

  bool add_to_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum, const Binding& binding,
                    const AddSite& site) const override {
    const Buffer cast = detail::cast_to_accum(be, out, accum);
    const Buffer& src = cast ? cast : out;
    auto staging = std::make_shared<Buffer>(
        be.allocate(MemSpace::pinned_host, accum, src.numel(), Stream::copy));
    be.wait(Stream::copy, be.record(Stream::comm));
    be.copy(*staging, src, Stream::copy);  // D2H
    // The CPU may read staging only once the copy has landed; the add runs as a host task so the
    // rank goes on issuing the next units' work meanwhile. The task owns staging.
    be.host_task(be.record(Stream::copy), [&be, &u, &binding, staging, site] {
      binding.add(be, u.saved, *staging, MemSpace::pinned_host, u, site);
    });
    return false;
  }

  SyncCost predicted_add(uint64_t shard_numel, const DTypeTriple& t) const override {
    const ShardBytes b(shard_numel, t);
    return {0, b.accum, b.cast, b.accum, false};
  }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(OffloadPolicy, CpuAdd,
                          {.name = "cpu-add",
                           .description = "D2H out into pinned staging, add on the CPU",
                           .follows = "FSDP2 foreach_reduce with CPUOffloadPolicy",
                           .order = 30})

}  // namespace shardaccum
