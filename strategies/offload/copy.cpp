// Offload `copy`: D2H `out` over the saved shard whatever mode tracking says — the known-incorrect
// behaviour of FSDP1 and FairScale with CPU offload (pytorch issue 73784), kept so that the oracle
// is seen catching it: every sync micro-batch but the last is lost. Every S is the shared first-S
// path (start_saved).
#include "strategies/offload/offload_policy.hpp"

namespace shardaccum {
namespace {

class CopyOver final : public OverwriteSaved {
 public:
  bool offloaded() const override { return true; }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    OffloadPolicy, CopyOver,
    {.name = "copy",
     .description = "D2H out over the saved shard (wrong by design: the oracle catches it)",
     .follows = "FSDP1 and FairScale with CPU offload (pytorch#73784)",
     .order = 40})

}  // namespace shardaccum
