// Offload `gpu-add` (DeepSpeed ZeRO async_accumulate_grad_in_cpu_via_gpu, ZeRO-3 partition_grads):
// H2D the saved shard into a device staging buffer, add on the GPU, D2H the sum back.
// Per later S: H2D shard*b_a, D2H shard*b_a; the first S of a step (shared start_saved): D2H only.
#include "strategies/offload/offload_policy.hpp"

namespace shardaccum {
namespace {

class GpuAdd final : public OffloadPolicy {
 public:
  bool offloaded() const override { return true; }

  bool add_to_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum, const Binding& binding,
                    const AddSite& site) const override {
    const Buffer cast = detail::cast_to_accum(be, out, accum);
    detail::add_on_device(be, u, cast ? cast : out, accum, binding, site);
    return false;
  }

  SyncCost predicted_add(uint64_t shard_numel, const DTypeTriple& t) const override {
    const ShardBytes b(shard_numel, t);
    return {b.accum, b.accum, b.cast + b.accum, 0, false};
  }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(OffloadPolicy, GpuAdd,
                          {.name = "gpu-add",
                           .description = "H2D the saved shard, add on the GPU, D2H the sum",
                           .follows = "DeepSpeed ZeRO async_accumulate_grad_in_cpu_via_gpu",
                           .order = 20})

}  // namespace shardaccum
