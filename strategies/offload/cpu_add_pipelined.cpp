// Offload `cpu-add-pipelined` (idealised): cpu-add whose D2H is cut into chunks of --chunk-bytes,
// one event each, and whose host task adds the chunks as soon as they have landed (all that have,
// in one add), while the later chunks' D2H still run: the CPU add of chunk c overlaps the D2H of
// chunk c+1 within a unit, as it overlaps the next unit's D2H across units. One host task and one
// pinned staging of the shard per unit, as cpu-add (bytes and pinned peak are cpu-add's). Its
// threads run on the GPU's NUMA node (the backend's placement). A host task per chunk (until
// 2026-12-03) filled the backend's queue of pending tasks four times as fast, so the issuing thread
// waited for queue space and fell behind the GPU: on one H200 with the gemm backward its step was
// 650 ms against cpu-add's 488 (reports/README.md, the command at fb8bb29).
#include <memory>
#include <vector>

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
    auto staging =
        std::make_shared<Buffer>(be.allocate(MemSpace::pinned_host, accum, n, Stream::copy));
    be.wait(Stream::copy, be.record(Stream::comm));
    std::vector<Event> landed;  // per chunk: its D2H done
    for (uint64_t off = 0; off < n; off += c) {
      const uint64_t len = std::min(c, n - off);
      Buffer stage = staging->view(off, len);
      be.copy(stage, src.view(off, len), Stream::copy);  // D2H
      landed.push_back(be.record(Stream::copy));
    }
    // Queued behind the first chunk only; each later chunk is waited for inside the task. One
    // add covers every chunk landed by then: while the adds lag the copies it is one add per
    // unit, as cpu-add's, chunk by chunk only once they have caught up. An add per chunk
    // regardless ran at 0.92-0.94 of cpu-add's rate on one H200 (64 MiB chunks, 92.4 against
    // 99.8 GB/s, reports/h200-experiments-1204/README.md): each add is an
    // OpenMP region whose threads all wait for the slowest.
    be.host_task(landed.front(), [&be, &u, &binding, staging, site, landed, n, c] {
      be.near_device([&] {
        for (size_t i = 0; i < landed.size();) {
          be.host_wait(landed[i]);
          size_t j = i + 1;
          while (j < landed.size() && be.host_ready(landed[j])) ++j;
          const uint64_t off = i * c, len = std::min(j * c, n) - off;
          Buffer saved = u.saved.view(off, len), stage = staging->view(off, len);
          binding.add(be, saved, stage, MemSpace::pinned_host, u, site);
          i = j;
        }
      });
    });
    return false;
  }

  SyncCost predicted_add(uint64_t shard_numel, const DTypeTriple& t) const override {
    const ShardBytes b(shard_numel, t);
    return {0, b.accum, b.cast, b.accum, false};  // cpu-add's: one staging of the shard per task
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
