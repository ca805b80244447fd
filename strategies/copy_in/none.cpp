// Copy-in `none`: the reduce-scatter reads the unit's unsharded gradient itself, held until the
// compute stream waits for that reduce-scatter; no-sync gradients accumulate in the grad dtype.
// Idealised: no copy and no second buffer (every triple then has grad == reduce).
#include "strategies/copy_in/copy_in.hpp"

namespace shardaccum {
namespace {

class NoCopyIn final : public CopyIn {
 public:
  bool separate_input() const override { return false; }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(CopyIn, NoCopyIn,
                          {.name = "none",
                           .description = "the reduce-scatter reads the gradient itself",
                           .follows = "idealised; FSDP1 and ZeRO-3 reduce the gradient in place "
                                      "when grad == reduce dtype",
                           .order = 10})

}  // namespace shardaccum
