// Offload `gpu-add-pipelined` (idealised): gpu-add with the H2D on its own copy stream
// (Stream::h2d) and the D2H on Stream::copy, so that one direction's DMA engine runs while the
// other's does; the shard is cut into chunks of --chunk-bytes so that one unit pipelines with
// itself. Chunk c: H2D saved[c] into the staging's chunk c, add out[c] on the GPU, D2H back. Bytes
// are gpu-add's, and so is the device staging: the whole shard, one chunk per slot. A ring of two
// chunks (before 2026-12-03) made chunk c's H2D wait for chunk c-2's D2H, which the one copy
// stream queues behind every D2H issued before it: on one H200 the H2Ds of micro-batch 1 then
// waited through all of micro-batch 0's 77 ms of D2H (reports/h200-limit, trace-synthetic).
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
    // The H2D reads what this unit's previous D2H wrote: the only wait on the h2d stream, so the
    // H2D of this unit overlaps the D2H of the units before it.
    if (u.index < have_d2h_.size() && have_d2h_[u.index]) be.wait(Stream::h2d, last_d2h_[u.index]);
    const uint64_t chunks = (n + c - 1) / c;
    Buffer staging = be.allocate(MemSpace::device, accum, n, Stream::h2d);
    // Every chunk's H2D first, back to back on the h2d stream: none waits for a D2H.
    std::vector<Event> landed(chunks);
    for (uint64_t i = 0; i < chunks; ++i) {
      const uint64_t off = i * c, len = std::min(c, n - off);
      Buffer stage = staging.view(off, len);
      be.copy(stage, u.saved.view(off, len), Stream::h2d);
      landed[i] = be.record(Stream::h2d);
    }
    // Then per chunk, once it has landed: the add, and its D2H while later chunks still land.
    for (uint64_t i = 0; i < chunks; ++i) {
      const uint64_t off = i * c, len = std::min(c, n - off);
      Buffer stage = staging.view(off, len), saved = u.saved.view(off, len);
      be.wait(Stream::comm, landed[i]);
      binding.add(be, stage, src.view(off, len), MemSpace::device, u, site);
      be.wait(Stream::copy, be.record(Stream::comm));
      be.copy(saved, stage, Stream::copy);  // D2H
    }
    note_d2h(be, u);
    return false;
  }

  SyncCost predicted_add(uint64_t shard_numel, const DTypeTriple& t) const override {
    const ShardBytes b(shard_numel, t);
    return {b.accum, b.accum, b.cast + b.accum, 0, false};  // the staging: gpu-add's whole shard
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
