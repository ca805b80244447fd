#pragma once
// The analytical model (docs/DESIGN.md §3 "Predicted bytes"): what one rank moves and holds in one
// step, derived from the layout, schedule, dtypes and the strategy's own axis values — never from
// the backend's accounting, which it is compared against.
#include <cstdint>

#include "strategies/case_plan.hpp"

namespace shardaccum {

/// Per rank and optimizer step. Bytes, not GB.
struct Prediction {
  uint64_t nccl_input_bytes = 0;  // s * P_u * b_r (the gradient, or the copy-in's input buffer)
  uint64_t reduce_scatter_calls = 0;
  uint64_t h2d_bytes = 0;  // gpu-add: (s-1) * (P_u/N) * b_a when mode tracking sees the shard
  uint64_t d2h_bytes = 0;  // offloaded: s * (P_u/N) * b_a
  /// Unsharded gradients (or copy-in inputs) alive or in flight at once + out + staging + device
  /// saved.
  uint64_t peak_device_bytes = 0;
  uint64_t peak_pinned_bytes = 0;  // saved for every unit + staging
  /// cpu-add-pageable: (s-1) * (P_u/N) * b_a of the D2H into pageable memory when mode tracking
  /// sees the shard; its peak is the largest fresh pageable shard (one alive at a time).
  uint64_t d2h_pageable_bytes = 0, peak_pageable_bytes = 0;
  /// --param-traffic on (offloaded strategies): 2 * K * Σ_u (P_u/N) * b_param, the shard of each
  /// unit copied before its forward and before its backward in every micro-batch (b_param =
  /// dtype_bytes(grad)); not in h2d_bytes. The pinned peak holds Σ_u (P_u/N) * b_param more (the
  /// host shards, once per case) and the device peak one unit's shard during its backward (or
  /// forward copy).
  uint64_t param_h2d_bytes = 0;
  /// --param-traffic on with the copy-in `chunk-cat` (FSDP2's collectives): 2 * K * Σ_u P_u *
  /// b_param, the all-gather's copy-out of every unshard (ParamTraffic `copy_out`), offload or
  /// not; the unit's all-gather output and its unsharded parameter are both alive during it.
  uint64_t param_d2d_bytes = 0;
  /// The division axis's passes, read + write: per sync 2 * P_u * b_g (pre; b_r with a copy-in) and
  /// 2 * (P_u/N) * b_r (post) on the device; `end` 2 * (P_u/N) * b_a per saved shard where it lives
  /// (host when offloaded). In place: no term of the peaks.
  uint64_t division_device_bytes = 0, division_host_bytes = 0;
};

/// Walks the schedule as the step driver does (the unsharded gradients held per the strategy's
/// lookahead, docs/DESIGN.md §2), asking the strategy's mode tracking (a fresh
/// instance) at each sync micro-batch and its offload policy for the bytes of what it decided.
/// `host_task_depth` is the backend's RankBackend::host_task_depth(): CPU adds that may still be
/// pending, each with its pinned staging buffer (0 on the host backend: the prediction is exact;
/// above 0 the pinned peak is the worst case). Throws std::invalid_argument for an unknown axis
/// value.
Prediction predict(const CasePlan& plan, int world_size, int host_task_depth = 0);

}  // namespace shardaccum
