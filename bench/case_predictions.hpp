#pragma once
// The analytical model's prediction of every case (strategies/model.hpp), computed once per run
// and passed to the fit check, the pinned arena's size and the counters (docs/DESIGN.md §5).
#include <map>
#include <string>
#include <vector>

#include "bench/case_matrix.hpp"
#include "strategies/model.hpp"

namespace shardaccum {

/// Case name -> its prediction.
using CasePredictions = std::map<std::string, Prediction>;

/// predict() of every case with `host_task_depth` (the backend's pending CPU adds:
/// kCudaHostTaskDepth on the cuda backend, 0 on the host backend). Throws std::invalid_argument as
/// predict() does.
CasePredictions predict_cases(const std::vector<CaseSpec>& cases, int host_task_depth);

}  // namespace shardaccum
