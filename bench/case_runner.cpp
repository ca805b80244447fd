#include "bench/case_runner.hpp"

#include <algorithm>

#include "profiling/trace.hpp"

namespace shardaccum {

CaseRunner::CaseRunner(Backend& backend, CasePlan plan)
    : backend_(backend), plan_(std::move(plan)), drivers_(backend.world_size()) {}

CaseRunner::~CaseRunner() = default;

StepReport CaseRunner::step(uint32_t step, bool check) {
  const int n = backend_.world_size();
  StepReport rep;
  rep.per_rank.resize(n);
  rep.oracle.resize(check ? n : 0);
  // --trace: each rank thread records this step, unless it is a warm-up step.
  trace::TraceRecorder* rec = trace::process_recorder();
  if (rec && !rec->records_step(step)) rec = nullptr;
  backend_.run([&](RankBackend& be) {
    const int r = be.rank();
    trace::ThreadTraceScope trace_scope(rec, r, plan_.name);
    if (!drivers_[r]) drivers_[r] = std::make_unique<StepDriver>(be, plan_);
    rep.per_rank[r] = drivers_[r]->run_step(step, check, check ? &rep.oracle[r] : nullptr);
  });
  for (const StepMetrics& s : rep.per_rank)
    rep.max.fold(s, [](auto a, auto b) { return std::max(a, b); });
  return rep;
}

}  // namespace shardaccum
