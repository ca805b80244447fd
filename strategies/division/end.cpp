// Division `end`: the sum is reduce-scattered as is and divided by N once, on the finished saved
// shard (Division::finalize). Idealised: one rounding in the accum dtype, but on an offloaded
// shard a pass of the host over every byte at the end of the step.
#include "strategies/division/division.hpp"

namespace shardaccum {
namespace {

class DivideAtEnd final : public Division {
 public:
  DivisionSteps steps(int) const override { return kDivideAtEnd; }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(Division, DivideAtEnd,
                          {.name = "end",
                           .description = "divide by N once, on the finished saved shard",
                           .follows = "idealised (one rounding); no system divides exactly here",
                           .order = 10})

}  // namespace shardaccum
