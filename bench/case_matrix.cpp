#include "bench/case_matrix.hpp"

namespace shardaccum {

std::string CaseSpec::name() const {
  return "accum/model:" + layout->name + "/world:" + std::to_string(world_size) +
         "/schedule:" + schedule.modes + "/" + strategy.name() + "/dtype:" + dtypes.name();
}

CasePlan CaseSpec::plan() const {
  return CasePlan{*layout, schedule, strategy, dtypes, gen, seed, name()};
}

std::vector<CaseSpec> build_matrix(const MatrixAxes& a) {
  std::vector<CaseSpec> cases;
  for (const auto& m : a.models)
    for (int w : a.world_sizes)
      for (const auto& d : a.dtypes)
        for (const auto& st : a.strategies)
          for (const auto& sc : a.schedules) cases.push_back({m, w, sc, st, d, a.gen, a.seed});
  return cases;
}

}  // namespace shardaccum
