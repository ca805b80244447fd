// Offload `cpu-add-pipelined` (idealised): cpu-add cut into chunks of --chunk-bytes, one pinned
// staging and one host task per chunk, so that the CPU add of chunk c runs while the D2H of chunk
// c+1 does. The CPU add's threads run on the GPU's NUMA node (the backend's placement). Bytes are
// cpu-add's; the pinned staging is one chunk per pending task instead of the whole shard.
#include <memory>

#include "strategies/offload/offload_policy.hpp"

namespace shardaccum {
namespace {

class CpuAddPipelined final : public OffloadPolicy {
 public:
  explicit CpuAddPipelined(const AxisArgs& a) : chunk_bytes_(a.chunk_bytes) {}

  bool offloaded() const override { return true; }

  bool add_to_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum, const Binding& binding,
                    const AddSite& site) const override {
    const Buffer cast = detail::cast_to_accum(be, out, accum);
    const Buffer& src = cast ? cast : out;
    const uint64_t n = src.numel(), c = detail::chunk_numel(chunk_bytes_, accum);
    be.wait(Stream::copy, be.record(Stream::comm));
    for (uint64_t off = 0; off < n; off += c) {
      const uint64_t len = std::min(c, n - off);
      auto staging =
          std::make_shared<Buffer>(be.allocate(MemSpace::pinned_host, accum, len, Stream::copy));
      be.copy(*staging, src.view(off, len), Stream::copy);  // D2H
      // After this chunk's copy only: the next chunk's D2H is issued while this add runs.
      be.host_task(be.record(Stream::copy), [&be, &u, &binding, staging, site, off, len] {
        be.near_device([&] {
          Buffer saved = u.saved.view(off, len);
          binding.add(be, saved, *staging, MemSpace::pinned_host, u, site);
        });
      });
    }
    return false;
  }

  SyncCost predicted_add(uint64_t shard_numel, const DTypeTriple& t) const override {
    const ShardBytes b(shard_numel, t);
    const uint64_t chunk = detail::chunk_numel(chunk_bytes_, t.accum) * dtype_bytes(t.accum);
    return {0, b.accum, b.cast, b.accum, false, chunk};
  }

 private:
  uint64_t chunk_bytes_;
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    OffloadPolicy, CpuAddPipelined,
    {.name = "cpu-add-pipelined",
     .description = "cpu-add in chunks: the CPU add of one chunk during the next chunk's D2H",
     .follows = "idealised: cpu-add with the copy and the CPU add overlapped (no framework does "
                "this)",
     .order = 35})

}  // namespace shardaccum
