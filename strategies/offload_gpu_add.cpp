// Offload `gpu-add` (DeepSpeed ZeRO async_accumulate_grad_in_cpu_via_gpu, ZeRO-3 partition_grads):
// H2D the saved shard into a device staging buffer, add on the GPU, D2H the sum back.
// Per later S: H2D shard*b_a, D2H shard*b_a; the first S of a step: D2H shard*b_a only.
#include "strategies/offload_common.hpp"

namespace shardaccum {
namespace {

class GpuAdd final : public OffloadPolicy {
 public:
  const char* name() const override { return "gpu-add"; }
  bool offloaded() const override { return true; }

  bool accumulate(RankBackend& be, UnitGrad& u, Buffer out, bool add, DType accum,
                  const Binding& binding, const AddSite& site) const override {
    const Buffer cast = detail::cast_to_accum(be, out, accum);
    const Buffer& src = cast ? cast : out;
    if (!add) {
      detail::d2h_into_saved(be, u, src);
      return true;
    }
    Buffer staging = be.allocate(MemSpace::device, accum, src.numel(), Stream::copy);
    be.copy(staging, u.saved, Stream::copy);  // H2D
    be.wait(Stream::compute, be.record(Stream::copy));
    binding.add(be, staging, src, MemSpace::device, u, site);
    be.wait(Stream::copy, be.record(Stream::compute));
    be.copy(u.saved, staging, Stream::copy);  // D2H
    return false;
  }

  SyncCost predicted(bool add, uint64_t a, uint64_t cast) const override {
    if (!add) return {0, a, cast, 0, true};
    return {a, a, cast + a, 0, false};
  }
};

}  // namespace

std::unique_ptr<OffloadPolicy> make_gpu_add() { return std::make_unique<GpuAdd>(); }

}  // namespace shardaccum
