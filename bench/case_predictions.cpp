#include "bench/case_predictions.hpp"

namespace shardaccum {

CasePredictions predict_cases(const std::vector<CaseSpec>& cases, int host_task_depth) {
  CasePredictions out;
  for (const CaseSpec& c : cases)
    out.emplace(c.name(), predict(c.plan(), c.world_size, host_task_depth));
  return out;
}

}  // namespace shardaccum
