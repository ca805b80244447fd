// Offload `copy`: D2H `out` over the saved shard whatever mode tracking says — the known-incorrect
// behaviour of FSDP1 and FairScale with CPU offload (pytorch issue 73784), kept so that the oracle
// is seen catching it: every sync micro-batch but the last is lost.
#include "strategies/offload_common.hpp"

namespace shardaccum {
namespace {

class CopyOver final : public OffloadPolicy {
 public:
  const char* name() const override { return "copy"; }
  bool offloaded() const override { return true; }

  bool accumulate(RankBackend& be, UnitGrad& u, Buffer out, bool /*add: ignored*/, DType accum,
                  const Binding&, const AddSite&) const override {
    const Buffer cast = detail::cast_to_accum(be, out, accum);
    detail::d2h_into_saved(be, u, cast ? cast : out);
    return true;
  }

  SyncCost predicted(bool, uint64_t a, uint64_t cast) const override { return {0, a, cast, 0, true}; }
};

}  // namespace

std::unique_ptr<OffloadPolicy> make_copy_offload() { return std::make_unique<CopyOver>(); }

}  // namespace shardaccum
