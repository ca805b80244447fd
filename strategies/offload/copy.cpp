// Offload `copy`: D2H `out` over the saved shard whatever mode tracking says — the known-incorrect
// behaviour of FSDP1 and FairScale with CPU offload (pytorch issue 73784), kept so that the oracle
// is seen catching it: every sync micro-batch but the last is lost. Every S is the shared first-S
// path (start_saved).
#include "strategies/offload/offload_policy.hpp"

namespace shardaccum {
namespace {

class CopyOver final : public OffloadPolicy {
 public:
  bool offloaded() const override { return true; }
  bool add_to_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum, const Binding&,
                    const AddSite& site) const override {
    start_saved(be, u, std::move(out), accum, site);
    return true;
  }
  SyncCost predicted_add(uint64_t shard_numel, const DTypeTriple& t) const override {
    return predicted_start(shard_numel, t);
  }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    OffloadPolicy, CopyOver,
    {.name = "copy",
     .description = "D2H out over the saved shard (wrong by design: the oracle catches it)",
     .follows = "FSDP1 and FairScale with CPU offload (pytorch#73784)",
     .order = 40})

}  // namespace shardaccum
