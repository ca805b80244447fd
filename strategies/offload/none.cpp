// Offload `none`: the saved shard lives on the device. The first S keeps `out` as the saved shard
// (or a converted copy when the accum dtype is wider: the shared start_saved); later S
// micro-batches add on the GPU. Moves nothing over PCIe.
#include "strategies/offload/offload_policy.hpp"

namespace shardaccum {
namespace {

class NoOffload final : public OffloadPolicy {
 public:
  bool offloaded() const override { return false; }
  bool add_to_saved(RankBackend& be, UnitGrad& u, Buffer out, DType, const Binding& binding,
                    const AddSite& site) const override {
    binding.add(be, u.saved, out, MemSpace::device, u, site);
    return false;
  }
  SyncCost predicted_add(uint64_t, const DTypeTriple&) const override {
    return {0, 0, 0, 0, false};
  }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(OffloadPolicy, NoOffload,
                          {.name = "none",
                           .description = "saved shard on the GPU; later syncs add on the GPU",
                           .follows = "FSDP1, FSDP2, ZeRO without CPU offload",
                           .order = 10})

}  // namespace shardaccum
