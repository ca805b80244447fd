#pragma once
// One unit's gradient state on one rank, named as the step walks through it (docs/DESIGN.md §2-3):
//   grad  — the unsharded gradient (device, numel_padded, grad dtype): alive from a backward until
//           the unit's next reduce-scatter; kept alive across `n` micro-batches (no_sync).
//   saved — the saved shard (accum dtype): device without offload, pinned host with it; carried
//           between the sync micro-batches of a step, finalized, checked, then released.
//   kept  — offload copy-fsdp1 only: the device shard whose D2H made `saved` (FSDP1's
//           _saved_grad_shard), alive until the end of the backward micro-batch (docs/PRESETS.md
//           G3).
//   master — offload gpu-add-zero3 only: DeepSpeed ZeRO-3's fp32 optimizer gradient on the host
//           (pinned, fp32), copied at the accumulation boundary, alive until the step's end
//           (docs/PRESETS.md Z5).
//   partition — a bucket-copying case without offload (reduce_buckets.hpp copies_into_bucket) only:
//           this unit's part of DeepSpeed ZeRO-3's device gradient partition buffer
//           (grad_partitions_flat_buffer, stage3.py 791, allocated at initialisation there), held
//           from the step's start; the first S copies the reduce-scatter's output into it and it
//           becomes `saved` (partition_grads' `grad_buffer.copy_`, docs/PRESETS.md Z6).
#include <cstdint>
#include <string>
#include <vector>

#include "common/layout.hpp"
#include "strategies/backend/backend.hpp"

namespace shardaccum {

struct UnitGrad {
  uint32_t index = 0;
  std::string name;
  uint64_t numel = 0;   // true elements; the rest of numel_padded is zero padding
  uint64_t padded = 0;  // numel_padded = roundup(numel, N*8)
  uint64_t shard = 0;   // numel_padded / N
  Buffer grad;
  Buffer saved;
  Buffer kept;
  Buffer master;
  Buffer partition;
  uint64_t saved_version = 0;  // bumped by every checked add (binding data-free), as autograd does
  std::vector<uint64_t> pieces;  // param_pieces(): the shard cut at its parameters, Σ = shard
  // OffloadPolicy::flat_pinned: the pinned bytes its saved shard and its fp32 master gradient are
  // counted at (their shares of DeepSpeed's rounded buffers); 0: their own bytes.
  uint64_t pinned_saved_counted = 0;
  uint64_t pinned_master_counted = 0;
};

/// The element counts of a rank's shard of `unit`, cut where FSDP2 keeps separate tensors: one
/// piece per parameter, in named_parameters() order, each FSDP2's dim-0 shard, ceil(rows / N) rows
/// of the parameter (_fsdp_param.py FSDPParam._init_sharded_param pads dim 0 to a multiple of N and
/// chunks it). The suite's shard is one flat slice of shard_numel(numel, N) elements, so the pieces
/// are fitted to it: the unit's padding goes to the last; where the rows' padding is more than the
/// unit's (N ≥ 2), the excess is taken from the largest pieces (on gpt2 at N = 8, 672 of wte's
/// 4,825,344 elements), and in a pathological layout (more parameters of fewer rows than N than the
/// shard has elements) the last pieces are dropped. The pieces sum to the shard and none is 0. A
/// unit without a parameter list: one piece, the shard. World size 1: exactly the parameters'
/// numel, the last plus the unit's padding.
std::vector<uint64_t> param_pieces(const FlatParam& unit, int world_size);

/// Where an accumulation happens, for error messages: "unit 3 (layers.2), micro-batch 1".
struct AddSite {
  uint32_t unit = 0;
  const std::string* unit_name = nullptr;
  int micro_batch = 0;
  bool boundary = false;  // the step's last micro-batch: DeepSpeed's accumulation boundary
  std::string describe() const;
};

}  // namespace shardaccum
