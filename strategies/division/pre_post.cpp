// Division `pre-post` (PyTorch FSDP1, FairScale): every sync, the unsharded gradient is divided
// by the predivide factor before the reduce-scatter and its output by the postdivide factor after
// it, two device passes on the reduce-scatter's stream; a pass whose factor is 1 is skipped, as
// FSDP1's _div_if_needed (div_factor > 1) skips it.
#include "strategies/division/division.hpp"

namespace shardaccum {
namespace {

class DividePrePost final : public Division {
 public:
  DivisionSteps steps(int world_size) const override {
    const auto [pre, post] = gradient_divide_factors(world_size);
    return {.pre_pass = pre > 1, .pre = pre, .post_pass = post > 1, .post = post};
  }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    Division, DividePrePost,
    {.name = "pre-post",
     .description = "divide the unsharded gradient before the reduce-scatter and the shard after "
                    "it, by FSDP1's factors, on the device every sync",
     .follows = "PyTorch FSDP1 torch/distributed/fsdp/_runtime_utils.py _reduce_grad "
                "(_div_if_needed with _init_utils.py _get_gradient_predivide_factor); FairScale "
                "fairscale/nn/data_parallel/fully_sharded_data_parallel.py _post_backward_hook "
                "and _post_reduction_hook",
     .order = 30})

}  // namespace shardaccum
