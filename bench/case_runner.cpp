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
  StepMetrics& m = rep.max;
  for (const StepMetrics& s : rep.per_rank) {
    m.step_ms = std::max(m.step_ms, s.step_ms);
    for (int p = 0; p < kPhaseCount; ++p) m.phase_ms[p] = std::max(m.phase_ms[p], s.phase_ms[p]);
    m.h2d_bytes = std::max(m.h2d_bytes, s.h2d_bytes);
    m.d2h_bytes = std::max(m.d2h_bytes, s.d2h_bytes);
    m.nccl_input_bytes = std::max(m.nccl_input_bytes, s.nccl_input_bytes);
    m.reduce_scatter_calls = std::max(m.reduce_scatter_calls, s.reduce_scatter_calls);
    m.accumulate_bytes = std::max(m.accumulate_bytes, s.accumulate_bytes);
    m.cpu_add_bytes = std::max(m.cpu_add_bytes, s.cpu_add_bytes);
    m.bytes_from_cupti = m.bytes_from_cupti || s.bytes_from_cupti;
    m.accounted_h2d_bytes = std::max(m.accounted_h2d_bytes, s.accounted_h2d_bytes);
    m.accounted_d2h_bytes = std::max(m.accounted_d2h_bytes, s.accounted_d2h_bytes);
    m.nccl_kernel_ms = std::max(m.nccl_kernel_ms, s.nccl_kernel_ms);
    m.accumulate_kernel_ms = std::max(m.accumulate_kernel_ms, s.accumulate_kernel_ms);
    m.generate_kernel_ms = std::max(m.generate_kernel_ms, s.generate_kernel_ms);
    m.peak_device_bytes = std::max(m.peak_device_bytes, s.peak_device_bytes);
    m.peak_pinned_bytes = std::max(m.peak_pinned_bytes, s.peak_pinned_bytes);
  }
  return rep;
}

}  // namespace shardaccum
