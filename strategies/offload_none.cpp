// Offload `none`: the saved shard lives on the device. The first S keeps `out` as the saved shard
// (or a converted copy when the accum dtype is wider); later S micro-batches add on the GPU.
// Moves nothing over PCIe.
#include "strategies/offload_common.hpp"

namespace shardaccum {
namespace {

class NoOffload final : public OffloadPolicy {
 public:
  const char* name() const override { return "none"; }
  bool offloaded() const override { return false; }

  bool accumulate(RankBackend& be, UnitGrad& u, Buffer out, bool add, DType accum,
                  const Binding& binding, const AddSite& site) const override {
    if (add) {
      binding.add(be, u.saved, out, MemSpace::device, u, site);
      return false;
    }
    Buffer cast = detail::cast_to_accum(be, out, accum);
    u.saved = cast ? std::move(cast) : std::move(out);
    return true;
  }

  // The saved shard stays on the device: out itself, or its conversion (counted by the model).
  SyncCost predicted(bool add, uint64_t, uint64_t) const override { return {0, 0, 0, 0, !add}; }
};

}  // namespace

std::unique_ptr<OffloadPolicy> make_no_offload() { return std::make_unique<NoOffload>(); }

}  // namespace shardaccum
