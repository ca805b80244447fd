// Division `collective` (PyTorch FSDP2): the reduce-scatter itself averages (NCCL ncclAvg), so
// there is no pass of its own. FSDP2 does this for reduce dtypes fp32 and bf16, the only ones of
// this suite (fp16, where FSDP2 divides before and after, has no dtype here); at world 1 it asks
// for SUM (NCCL's AVG is unreliable there), a copy either way.
#include "strategies/division/division.hpp"

namespace shardaccum {
namespace {

class DivideInCollective final : public Division {
 public:
  DivisionSteps steps(int world_size) const override {
    return {.op = world_size > 1 ? ReduceOp::avg : ReduceOp::sum};
  }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    Division, DivideInCollective,
    {.name = "collective",
     .description = "the reduce-scatter averages (NCCL ncclAvg): no pass of its own",
     .follows = "PyTorch FSDP2 torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py "
                "_get_gradient_divide_factors (ReduceOp.AVG for fp32/bf16, SUM at world 1)",
     .order = 20})

}  // namespace shardaccum
