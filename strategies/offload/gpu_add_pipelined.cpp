// Offload `gpu-add-pipelined` (idealised): gpu-add with the H2D on its own copy stream
// (Stream::h2d) and the D2H on Stream::copy, so that one direction's DMA engine runs while the
// other's does; the shard is cut into chunks of --chunk-bytes so that one unit pipelines with
// itself. Chunk c: H2D saved[c] into staging c%2 (issued before chunk c-1's D2H), add out[c] on the
// GPU, D2H back. Bytes are gpu-add's; the device staging is two chunks (a ring) instead of the
// whole shard.
#include <vector>

#include "strategies/offload/offload_policy.hpp"

namespace shardaccum {
namespace {

class GpuAddPipelined final : public OffloadPolicy {
 public:
  explicit GpuAddPipelined(const AxisArgs& a)
      : chunk_bytes_(a.chunk_bytes), last_d2h_(a.units), have_d2h_(a.units, false) {}

  bool offloaded() const override { return true; }

  void start_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum,
                   const AddSite& site) const override {
    OffloadPolicy::start_saved(be, u, std::move(out), accum, site);
    note_d2h(be, u);
  }

  bool add_to_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum, const Binding& binding,
                    const AddSite& site) const override {
    const Buffer cast = detail::cast_to_accum(be, out, accum);
    const Buffer& src = cast ? cast : out;
    const uint64_t n = src.numel(), c = detail::chunk_numel(chunk_bytes_, accum);
    // The H2D reads what this unit's previous D2H wrote: the only wait on the copy stream, so the
    // H2D of this unit overlaps the D2H of the unit before it.
    if (u.index < have_d2h_.size() && have_d2h_[u.index]) be.wait(Stream::h2d, last_d2h_[u.index]);
    const uint64_t chunks = (n + c - 1) / c;
    Buffer ring[2];
    Event landed[2], freed[2];  // per ring slot: its H2D done; the D2H that last read it
    // The H2D of chunk i into slot i % 2, after the D2H of chunk i - 2 has read that slot.
    auto h2d = [&](uint64_t i) {
      const uint64_t off = i * c, len = std::min(c, n - off);
      Buffer& slot = ring[i % 2];
      if (!slot) slot = be.allocate(MemSpace::device, accum, len, Stream::h2d);  // chunks 0, 1
      if (i >= 2) be.wait(Stream::h2d, freed[i % 2]);
      Buffer stage = slot.view(0, len);
      be.copy(stage, u.saved.view(off, len), Stream::h2d);
      landed[i % 2] = be.record(Stream::h2d);
    };
    h2d(0);
    for (uint64_t i = 0; i < chunks; ++i) {
      if (i + 1 < chunks) h2d(i + 1);  // issued before chunk i's D2H: both directions at once
      const uint64_t off = i * c, len = std::min(c, n - off);
      Buffer stage = ring[i % 2].view(0, len), saved = u.saved.view(off, len);
      be.wait(Stream::comm, landed[i % 2]);
      binding.add(be, stage, src.view(off, len), MemSpace::device, u, site);
      be.wait(Stream::copy, be.record(Stream::comm));
      be.copy(saved, stage, Stream::copy);  // D2H
      freed[i % 2] = be.record(Stream::copy);
    }
    note_d2h(be, u);
    return false;
  }

  SyncCost predicted_add(uint64_t shard_numel, const DTypeTriple& t) const override {
    const ShardBytes b(shard_numel, t);
    const uint64_t ring = std::min(shard_numel, 2 * detail::chunk_numel(chunk_bytes_, t.accum)) *
                          dtype_bytes(t.accum);
    return {b.accum, b.accum, b.cast + ring, 0, false};
  }

 private:
  void note_d2h(RankBackend& be, const UnitGrad& u) const {
    if (u.index >= have_d2h_.size()) return;
    last_d2h_[u.index] = be.record(Stream::copy);
    have_d2h_[u.index] = true;
  }

  uint64_t chunk_bytes_;
  // Per unit, the copy-stream event after its last D2H (this rank's strategy only).
  mutable std::vector<Event> last_d2h_;
  mutable std::vector<bool> have_d2h_;
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    OffloadPolicy, GpuAddPipelined,
    {.name = "gpu-add-pipelined",
     .description = "gpu-add in chunks, H2D and D2H on two copy streams at once",
     .follows = "idealised: gpu-add with both DMA engines busy (no framework does this)",
     .order = 25})

}  // namespace shardaccum
