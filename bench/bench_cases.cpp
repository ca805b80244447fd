#include "bench/bench_cases.hpp"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>

#include "bench/bound_counters.hpp"
#include "bench/gemm_counters.hpp"

namespace shardaccum {

namespace {

void run_case(benchmark::State& st, const CaseSpec& spec, const Prediction& model,
              const SuiteSettings& s, Progress& progress) {
  bool ok = false;
  // Every entry names its case's K and world size: a run may have several of each (the report
  // checks them against the name, scripts/shardaccum_report/loading.py).
  st.counters["k"] = spec.schedule.k();
  st.counters["world_size"] = spec.world_size;
  try {
    if (const auto it = s.skip.find(spec.name()); it != s.skip.end()) {
      st.SkipWithError(it->second.c_str());
      progress.case_done(spec.name(), false);
      return;
    }
    Backend& backend = s.pool->get(spec.world_size);
    if (backend.gpu_times()) {  // the device side of the fit, after the context, NCCL and a trim
      backend.release_cached_memory();
      MemoryBudget b = s.budget;
      b.ranks_per_process = static_cast<int>(backend.local_ranks().size());
      b.device_free_bytes = least_device_free(backend);
      b.host_available_bytes = 0;  // checked before the backend started
      if (const auto why = fit_problem(spec, model, b)) {
        if (progress.rank() == 0)
          std::fprintf(stderr, "shardaccum_bench: %s %s\n", spec.name().c_str(), why->c_str());
        st.SkipWithError(why->c_str());
        progress.case_done(spec.name(), false);
        return;
      }
    }
    CaseRunner runner(backend, spec.plan(), s.recorder);
    uint32_t step = 0;
    for (int w = 0; w < s.warmup; ++w) runner.step(step++, false);
    CaseTotals t(
        spec.world_size);  // the max over ranks and every rank's own (gathered across processes)
    CaseVerdict verdict(spec.dtypes, spec.gen, spec.schedule.k(), spec.world_size,
                        division_steps(spec.strategy.division, spec.world_size));
    for (auto _ : st) {
      // The check runs after the step's end_step (StepDriver::run_step): outside its timed window.
      const bool check = checks_step(s.check, t.steps, s.steps);
      StepReport rep = runner.step(step++, check);
      st.SetIterationTime(rep.max.step_ms * 1e-3);
      t.add(rep.max, rep.per_rank);
      if (check) verdict.add(rep.oracle);
    }
    write_counters(st.counters, t, model, backend.ceilings(), verdict, spec.world_size);
    write_gemm_counters(st.counters, t, spec.plan());
    const std::string bound_by =
        write_bound_counters(st.counters, t, spec.plan(), backend.ceilings(), spec.world_size);
    const std::string threads = spec.host_threads_setting(backend.host_add_threads());
    st.SetLabel(std::string(backend.gpu_times() ? "" : "host wall-clock; ") +
                (verdict.correct() ? "correct"
                                   : "WRONG max_rel_err=" + std::to_string(verdict.max_rel_err())) +
                "; lookahead " + lookahead_name(spec.strategy.effective_lookahead()) +
                "; device add grid " + device_add_grid_name(spec.effective_device_add_grid()) +
                "; comm priority " + comm_priority_name(spec.effective_comm_priority()) +
                (spec.effective_hook_host_us() > 0
                     ? "; hook host " + std::to_string(spec.effective_hook_host_us()) + " us"
                     : "") +
                (threads.empty() ? "" : "; " + threads) + "; bound by " + bound_by);
    ok = true;
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    if (progress.rank() != 0)
      std::fprintf(stderr, "rank %d: %s: %s\n", progress.rank(), spec.name().c_str(), e.what());
  }
  progress.case_done(spec.name(), ok);
}

}  // namespace

void register_cases(const std::vector<CaseSpec>& cases, const SuiteSettings& settings,
                    Progress& progress) {
  progress.set_total(cases.size());
  // One copy shared by every case: a copy per case (it holds every case's prediction and skip
  // message) made memory grow with the square of the case count (2 GB at 2,592 cases).
  const auto shared = std::make_shared<const SuiteSettings>(settings);
  for (const CaseSpec& spec : cases) {
    const Prediction model = settings.models.at(spec.name());
    benchmark::RegisterBenchmark(spec.name().c_str(),
                                 [spec, model, shared, &progress](benchmark::State& st) {
                                   run_case(st, spec, model, *shared, progress);
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(settings.steps);
  }
}

}  // namespace shardaccum
