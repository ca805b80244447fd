#include "bench/case_runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "profiling/trace.hpp"

namespace shardaccum {

CheckMode parse_check_mode(const std::string& s) {
  if (s == "every") return CheckMode::every;
  if (s == "last") return CheckMode::last;
  throw std::invalid_argument("--check '" + s +
                              "': expected every (check each measured step) or last");
}

const char* check_mode_name(CheckMode m) { return m == CheckMode::every ? "every" : "last"; }

bool checks_step(CheckMode mode, int index, int steps) {
  return mode == CheckMode::every || index + 1 == steps;
}

CaseRunner::CaseRunner(Backend& backend, CasePlan plan, trace::TraceRecorder* recorder)
    : backend_(backend),
      plan_(std::move(plan)),
      recorder_(recorder),
      drivers_(backend.world_size()) {
  backend_.release_cached_memory();  // the previous case's cached fragments
}

CaseRunner::~CaseRunner() = default;

void CaseRunner::gather_other_processes(StepReport& rep) {
  static_assert(std::is_trivially_copyable_v<StepMetrics> &&
                    std::is_trivially_copyable_v<OracleResult>,
                "the ranks' figures travel between processes as bytes");
  const std::vector<int> local = backend_.local_ranks();
  const int n = backend_.world_size();
  if (static_cast<int>(local.size()) == n) return;  // every rank is a thread of this process
  const size_t oracle_bytes = rep.oracle.empty() ? 0 : sizeof(OracleResult);
  std::vector<std::vector<uint8_t>> blobs(n);
  for (int r : local) {
    blobs[r].resize(sizeof(StepMetrics) + oracle_bytes);
    std::memcpy(blobs[r].data(), &rep.per_rank[r], sizeof(StepMetrics));
    if (oracle_bytes)
      std::memcpy(blobs[r].data() + sizeof(StepMetrics), &rep.oracle[r], oracle_bytes);
  }
  backend_.allgather(blobs);
  for (int r = 0; r < n; ++r) {
    if (blobs[r].size() != sizeof(StepMetrics) + oracle_bytes)
      throw std::runtime_error(
          "rank " + std::to_string(r) + " sent " + std::to_string(blobs[r].size()) +
          " bytes of step figures, expected " + std::to_string(sizeof(StepMetrics) + oracle_bytes));
    std::memcpy(&rep.per_rank[r], blobs[r].data(), sizeof(StepMetrics));
    if (oracle_bytes)
      std::memcpy(&rep.oracle[r], blobs[r].data() + sizeof(StepMetrics), oracle_bytes);
  }
}

StepReport CaseRunner::step(uint32_t step, bool check) {
  const int n = backend_.world_size();
  StepReport rep;
  rep.per_rank.resize(n);
  rep.oracle.resize(check ? n : 0);
  // --trace: each rank thread records this step, unless it is a warm-up step.
  trace::TraceRecorder* rec = recorder_ && recorder_->records_step(step) ? recorder_ : nullptr;
  // SHARDACCUM_MEMORY_LOG=1: what every rank holds after each step, to see a long run stay flat.
  static const bool memory_log = [] {
    const char* v = std::getenv("SHARDACCUM_MEMORY_LOG");
    return v && *v && std::string(v) != "0";
  }();
  backend_.run([&](RankBackend& be) {
    const int r = be.rank();
    trace::ThreadTraceScope trace_scope(rec, r, plan_.name, step);
    if (!drivers_[r]) drivers_[r] = std::make_unique<StepDriver>(be, plan_);
    rep.per_rank[r] = drivers_[r]->run_step(step, check, check ? &rep.oracle[r] : nullptr);
    if (memory_log) {
      const MemorySnapshot m = be.memory_snapshot();
      std::fprintf(stderr,
                   "memory: step %u rank %d device_free=%llu pool_reserved=%llu pool_used=%llu "
                   "pinned_capacity=%llu events=%llu buffers=%llu cupti_records=%llu rss=%llu %s\n",
                   step, r, static_cast<unsigned long long>(m.device_free_bytes),
                   static_cast<unsigned long long>(m.pool_reserved_bytes),
                   static_cast<unsigned long long>(m.pool_used_bytes),
                   static_cast<unsigned long long>(m.pinned_capacity_bytes),
                   static_cast<unsigned long long>(m.live_events),
                   static_cast<unsigned long long>(m.live_buffers),
                   static_cast<unsigned long long>(m.cupti_records),
                   static_cast<unsigned long long>(m.host_rss_bytes), plan_.name.c_str());
    }
  });
  gather_other_processes(rep);
  for (const StepMetrics& s : rep.per_rank)
    rep.max.fold(s, [](auto a, auto b) { return std::max(a, b); });
  return rep;
}

}  // namespace shardaccum
