// Copy-in `chunk-cat` (PyTorch FSDP2): before each reduce-scatter the unit's gradient is copied
// (and cast) into a new input buffer in the reduce dtype and freed; the input stays alive until
// the compute stream has waited for its reduce-scatter, which FSDP2 does at the next unit's
// post-backward (one group behind, ReduceScatterState). A no-sync gradient is held in the reduce
// dtype, the later micro-batches' gradients added into it.
#include "strategies/copy_in/copy_in.hpp"

namespace shardaccum {
namespace {

class ChunkCatCopyIn final : public CopyIn {
 public:
  bool separate_input() const override { return true; }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    CopyIn, ChunkCatCopyIn,
    {.name = "chunk-cat",
     .description = "copy/cast the gradient into a reduce-dtype input buffer, free the gradient",
     .follows = "PyTorch FSDP2 _fsdp_collectives.py foreach_reduce / "
                "foreach_reduce_scatter_copy_in (torch.ops.fsdp.chunk_cat), ReduceScatterState; "
                "_fsdp_param.py to_accumulated_grad_if_needed",
     .order = 20})

}  // namespace shardaccum
