#include "bench/bench_cases.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "bench/case_runner.hpp"

namespace shardaccum {

double reduce_scatter_busbw_gbps(double bytes, double ms, int n) {
  if (ms <= 0 || n < 2) return 0;
  return bytes / (ms * 1e-3) / 1e9 * (n - 1) / n;
}

namespace {

struct Progress {
  size_t total = 0, done = 0, failed = 0;
  int rank = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  void case_done(const std::string& name, bool ok) {
    ++done;
    failed += ok ? 0 : 1;
    total = std::max(total, done);  // Google Benchmark's own warm-up may call a case again
    if (rank != 0) {
      (void)ok;  // its failures are printed where they are caught; rank 0 shows the run
      return;
    }
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double eta = done ? el / done * (total - done) : 0;
    std::fprintf(stderr, "[%zu/%zu] %s %s  (elapsed %.0f s, about %.0f s left)\n", done, total,
                 ok ? "done" : "FAILED", name.c_str(), el, eta);
  }
};

/// Per-step averages of what the measured steps reported.
struct Totals {
  StepMetrics sum;
  int steps = 0;
  void add(const StepMetrics& m) {
    sum.fold(m, [](auto a, auto b) { return a + b; });
    ++steps;
  }
  double per_step(double v) const { return steps ? v / steps : 0; }
};

double ceiling(const nlohmann::json& ctx, const char* key) {
  auto it = ctx.find(key);
  return it != ctx.end() && it->is_number() ? it->get<double>() : 0;
}

void run_case(benchmark::State& st, const CaseSpec& spec, const SuiteSettings& s, Progress& progress) {
  bool ok = false;
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
      if (const auto why = fit_problem(spec, b)) {
        if (progress.rank == 0) std::fprintf(stderr, "shardaccum_bench: %s %s\n", spec.name().c_str(), why->c_str());
        st.SkipWithError(why->c_str());
        progress.case_done(spec.name(), false);
        return;
      }
    }
    const CasePlan plan = spec.plan();
    const Prediction model = predict(plan, spec.world_size, backend.host_task_depth());
    CaseRunner runner(backend, plan);
    uint32_t step = 0;
    for (int w = 0; w < s.warmup; ++w) runner.step(step++, false);
    Totals t;
    std::vector<Totals> ranks(spec.world_size);  // every rank's own figures (gathered across processes)
    CaseVerdict verdict(spec.dtypes, spec.gen, spec.schedule.k(), spec.world_size);
    for (auto _ : st) {
      // The check runs after the step's end_step (StepDriver::run_step): outside its timed window.
      const bool check = checks_step(s.check, t.steps, s.steps);
      StepReport rep = runner.step(step++, check);
      st.SetIterationTime(rep.max.step_ms * 1e-3);
      t.add(rep.max);
      for (size_t r = 0; r < ranks.size() && r < rep.per_rank.size(); ++r) ranks[r].add(rep.per_rank[r]);
      if (check) verdict.add(rep.oracle);
    }
    const double max_err = verdict.max_rel_err();
    const bool correct = verdict.correct();
    auto& c = st.counters;
    const auto phase = [&](Phase p) { return t.per_step(t.sum.phase_ms[static_cast<int>(p)]); };
    c["step_ms"] = t.per_step(t.sum.step_ms);
    c["backward_ms"] = phase(Phase::backward);
    c["nccl_ms"] = phase(Phase::reduce_scatter);
    c["accumulate_ms"] = phase(Phase::accumulate);
    c["cpu_add_ms"] = phase(Phase::cpu_add);
    c["h2d_ms"] = phase(Phase::h2d);
    c["d2h_ms"] = phase(Phase::d2h);
    c["finalize_ms"] = phase(Phase::finalize);
    c["nccl_busbw_gbps"] = reduce_scatter_busbw_gbps(t.per_step(t.sum.nccl_input_bytes),
                                                     phase(Phase::reduce_scatter), spec.world_size);
    c["h2d_bytes"] = t.per_step(t.sum.h2d_bytes);
    c["d2h_bytes"] = t.per_step(t.sum.d2h_bytes);
    c["nccl_input_bytes"] = t.per_step(t.sum.nccl_input_bytes);
    c["reduce_scatter_calls"] = t.per_step(t.sum.reduce_scatter_calls);
    c["accumulate_bytes"] = t.per_step(t.sum.accumulate_bytes);
    c["cpu_add_bytes"] = t.per_step(t.sum.cpu_add_bytes);
    if (t.sum.bytes_from_cupti) {
      // h2d/d2h_bytes are CUPTI's; the backend's own accounting beside them, and kernel times.
      c["accounted_h2d_bytes"] = t.per_step(t.sum.accounted_h2d_bytes);
      c["accounted_d2h_bytes"] = t.per_step(t.sum.accounted_d2h_bytes);
      c["nccl_kernel_ms"] = t.per_step(t.sum.nccl_kernel_ms);
      c["accumulate_kernel_ms"] = t.per_step(t.sum.accumulate_kernel_ms);
      c["generate_kernel_ms"] = t.per_step(t.sum.generate_kernel_ms);
    }
    c["bytes_from_cupti"] = t.sum.bytes_from_cupti ? 1 : 0;
    c["peak_device_bytes"] = t.sum.peak_device_bytes;
    c["peak_pinned_bytes"] = t.sum.peak_pinned_bytes;
    c["model_h2d_bytes"] = model.h2d_bytes;
    c["model_d2h_bytes"] = model.d2h_bytes;
    c["model_nccl_input_bytes"] = model.nccl_input_bytes;
    c["model_peak_device_bytes"] = model.peak_device_bytes;
    c["model_peak_pinned_bytes"] = model.peak_pinned_bytes;
    // Per rank where ranks differ: the step time always, a peak when it is not the same everywhere
    // (the counters above are the max over ranks, as the design reports them).
    if (ranks.size() > 1) {
      bool peaks_differ = false;
      for (const Totals& r : ranks)
        peaks_differ = peaks_differ || r.sum.peak_device_bytes != t.sum.peak_device_bytes ||
                       r.sum.peak_pinned_bytes != t.sum.peak_pinned_bytes;
      for (size_t r = 0; r < ranks.size(); ++r) {
        const std::string sfx = "_rank" + std::to_string(r);
        c["step_ms" + sfx] = ranks[r].per_step(ranks[r].sum.step_ms);
        if (peaks_differ) {
          c["peak_device_bytes" + sfx] = ranks[r].sum.peak_device_bytes;
          c["peak_pinned_bytes" + sfx] = ranks[r].sum.peak_pinned_bytes;
        }
      }
    }
    c["max_rel_err"] = max_err;
    c["err_bound"] = verdict.bound();
    c["correct"] = correct ? 1 : 0;
    // Each phase against its ceiling measured in this run (cuda backend only).
    const nlohmann::json ctx = backend.context();
    const auto frac = [&](const char* name, double bytes, double ms, const char* key) {
      const double cap = ceiling(ctx, key);
      if (cap > 0 && ms > 0) c[name] = bytes / (ms * 1e-3) / 1e9 / cap;
    };
    frac("h2d_frac_ceiling", c["h2d_bytes"], c["h2d_ms"], "ceiling_h2d_gbps");
    frac("d2h_frac_ceiling", c["d2h_bytes"], c["d2h_ms"], "ceiling_d2h_gbps");
    frac("accumulate_frac_ceiling", t.per_step(t.sum.accumulate_bytes), c["accumulate_ms"],
         "ceiling_device_copy_gbps");
    frac("cpu_add_frac_ceiling", t.per_step(t.sum.cpu_add_bytes), c["cpu_add_ms"], "ceiling_host_add_gbps");
    if (const double cap = ceiling(ctx, "ceiling_reduce_scatter_busbw_gbps"); cap > 0 && c["nccl_busbw_gbps"] > 0)
      c["nccl_frac_ceiling"] = c["nccl_busbw_gbps"] / cap;
    st.SetLabel(std::string(backend.gpu_times() ? "" : "host wall-clock; ") +
                (correct ? "correct" : "WRONG max_rel_err=" + std::to_string(max_err)));
    ok = true;
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    if (progress.rank != 0) std::fprintf(stderr, "rank %d: %s: %s\n", progress.rank, spec.name().c_str(), e.what());
  }
  progress.case_done(spec.name(), ok);
}

Progress& progress_state() {
  static Progress progress;  // lives for the whole run of the registered cases
  return progress;
}

}  // namespace

void set_progress_total(size_t total) { progress_state().total = total; }

void set_progress_rank(int rank) { progress_state().rank = rank; }

RunTally run_tally() { return {progress_state().done, progress_state().failed}; }

void register_cases(const std::vector<CaseSpec>& cases, const SuiteSettings& settings) {
  Progress& progress = progress_state();
  progress.total = cases.size();
  for (const CaseSpec& spec : cases) {
    benchmark::RegisterBenchmark(spec.name().c_str(),
                                 [spec, settings, &progress](benchmark::State& st) {
                                   run_case(st, spec, settings, progress);
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(settings.steps);
  }
}

}  // namespace shardaccum
