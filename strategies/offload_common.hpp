#pragma once
// Pieces the offload policies share: `out` in the accum dtype, and the first shard of a step.
#include "strategies/strategy.hpp"

namespace shardaccum::detail {

/// `out` converted to the accum dtype on the device (copies move b_a bytes, docs/DESIGN.md §3), or an
/// empty buffer when out already has it. The caller keeps both alive until its copies are done.
Buffer cast_to_accum(RankBackend& be, const Buffer& out, DType accum);

/// Plain D2H of `src` into u.saved (allocated in pinned memory if absent): the first shard of a
/// step for every offload policy, and `copy`'s every shard.
void d2h_into_saved(RankBackend& be, UnitGrad& u, const Buffer& src);

}  // namespace shardaccum::detail
