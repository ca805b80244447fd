#pragma once
// Shared helpers of the host-backend tests: run a case for two steps and read its verdict.
#include <gtest/gtest.h>

#include <memory>

#include "bench/case_runner.hpp"
#include "strategies/backend/host_backend.hpp"
#include "strategies/model.hpp"

namespace shardaccum::testing {

struct Outcome {
  double max_rel_err = 0;
  bool correct = true;
  StepMetrics measured;  // the checked step, max over ranks
  Prediction model;
};

inline Layout make_layout(std::initializer_list<uint64_t> numels) {
  Layout l{"test", {}};
  int i = 0;
  for (uint64_t n : numels) {
    std::string name = "u";
    name += std::to_string(i++);
    l.units.push_back({name, n});
  }
  return l;
}

/// Warm-up step 0, then step 1 checked by the oracle (a step after the first, docs/DESIGN.md §5).
inline Outcome run_two_steps(Backend& be, const CasePlan& plan) {
  CaseRunner runner(be, plan);
  runner.step(0, false);
  StepReport rep = runner.step(1, true);
  Outcome o;
  o.measured = rep.max;
  o.model = predict(plan, be.world_size());
  CaseVerdict verdict(plan.dtypes, plan.gen, plan.schedule.k(), be.world_size(),
                      division_steps(plan.strategy.division, be.world_size()));
  verdict.add(rep.oracle);
  o.max_rel_err = verdict.max_rel_err();
  o.correct = verdict.correct();
  return o;
}

/// Every counted byte and both peaks of a run equal the analytical model's (the host backend's
/// accounting is exact, docs/DESIGN.md §3 "Predicted bytes").
inline void expect_bytes_and_peaks_of_the_model(const Outcome& o) {
  EXPECT_EQ(o.measured.h2d_bytes, o.model.h2d_bytes);
  EXPECT_EQ(o.measured.d2h_bytes, o.model.d2h_bytes);
  EXPECT_EQ(o.measured.nccl_input_bytes, o.model.nccl_input_bytes);
  EXPECT_EQ(o.measured.reduce_scatter_calls, o.model.reduce_scatter_calls);
  EXPECT_EQ(o.measured.division_device_bytes, o.model.division_device_bytes);
  EXPECT_EQ(o.measured.division_host_bytes, o.model.division_host_bytes);
  EXPECT_EQ(o.measured.peak_device_bytes, o.model.peak_device_bytes);
  EXPECT_EQ(o.measured.peak_pinned_bytes, o.model.peak_pinned_bytes);
  EXPECT_EQ(o.measured.d2h_pageable_bytes, o.model.d2h_pageable_bytes);
  EXPECT_EQ(o.measured.peak_pageable_bytes, o.model.peak_pageable_bytes);
  EXPECT_EQ(o.measured.param_h2d_bytes, o.model.param_h2d_bytes);
  EXPECT_EQ(o.measured.param_d2d_bytes, o.model.param_d2d_bytes);
}

/// The outcome rule of docs/DESIGN.md §3, written out here as the tests' expectation (the code
/// under test never consults it): without offload every strategy is correct; with offload a case is
/// correct when the schedule has at most one S, or with mode flag and gpu-add or cpu-add (or their
/// -pipelined forms, or cpu-add-pageable).
inline bool design_says_correct(const StrategySpec& s, const Schedule& sched) {
  if (s.offload == "none") return true;
  if (sched.sync_count() <= 1) return true;
  return s.mode == "flag" &&
         (s.offload == "gpu-add" || s.offload == "cpu-add" || s.offload == "gpu-add-pipelined" ||
          s.offload == "cpu-add-pipelined" || s.offload == "cpu-add-pageable");
}

}  // namespace shardaccum::testing
