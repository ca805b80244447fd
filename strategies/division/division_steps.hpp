#pragma once
// What a value of the division axis does (docs/DESIGN.md §3), apart from the axis's interface so
// that the oracle's bound can read it without the registry.
#include <utility>

#include "strategies/backend/backend.hpp"

namespace shardaccum {

/// What a division does at world size N. A pass is one in-place multiply by 1/factor
/// (RankBackend::scale, finalize phase) on the comm stream; a factor of 1 with its pass off is
/// skipped.
struct DivisionSteps {
  bool pre_pass = false;  // every sync: the unsharded gradient /= pre before the reduce-scatter
  double pre = 1;
  bool post_pass = false;  // every sync: the reduce-scatter's output /= post after it
  double post = 1;
  ReduceOp op = ReduceOp::sum;  // the reduce-scatter's reduction (avg: divides by N inside it)
  bool at_end = false;          // once, after the step's last micro-batch: the saved shard /= N
};

/// The steps of `end`, the axis's default (kDefaultDivision).
inline constexpr DivisionSteps kDivideAtEnd{.at_end = true};

/// FSDP1's and FairScale's (predivide, postdivide) factors for `world_size` >= 1:
/// torch/distributed/fsdp/_init_utils.py _get_gradient_predivide_factor (factor = 1; while N %
/// factor == 0 and N / factor > factor: factor *= 2), postdivide = N / predivide.
std::pair<double, double> gradient_divide_factors(int world_size);

}  // namespace shardaccum
