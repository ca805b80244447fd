#include "bench/memory_fit.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "strategies/model.hpp"
#if defined(SHARDACCUM_HAVE_CUDA)
#include "strategies/backend/cuda_backend.hpp"
#endif

namespace shardaccum {
namespace {

std::string gb(uint64_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f GB", static_cast<double>(bytes) / 1e9);
  return s;
}

/// Per rank by the model, and what this process holds in host memory for its ranks.
struct Need {
  uint64_t device = 0, pinned = 0, host_process = 0;
};

Need need_of(const Prediction& p, const MemoryBudget& b, int ranks_per_process) {
  Need n{p.peak_device_bytes, p.peak_pinned_bytes, 0};
  n.host_process =
      (b.host_backend ? n.device + n.pinned : n.pinned) * static_cast<uint64_t>(ranks_per_process);
  return n;
}

/// The need of a variant of the case (what would fit): another case, predicted here.
Need need_of(const CaseSpec& c, const MemoryBudget& b, int ranks_per_process) {
  return need_of(predict(c.plan(), c.world_size, b.host_task_depth), b, ranks_per_process);
}

bool fits(const Need& n, const MemoryBudget& b) {
  const bool host_ok = b.host_available_bytes == 0 || n.host_process <= b.host_bytes();
  const bool device_ok = b.host_backend || b.device_free_bytes == 0 || n.device <= b.device_bytes();
  return host_ok && device_ok;
}

std::string per_rank(const Need& n, const MemoryBudget& b) {
  return b.host_backend ? gb(n.host_process) + " of host memory in this process"
                        : gb(n.device) + " device and " + gb(n.pinned) + " pinned per rank";
}

}  // namespace

uint64_t least_device_free(Backend& backend) {
  const std::vector<int> local = backend.local_ranks();
  std::vector<std::vector<uint8_t>> per_rank(backend.world_size());
  backend.run([&](RankBackend& r) {
    const uint64_t free = r.memory_snapshot().device_free_bytes;
    per_rank[r.rank()].resize(sizeof free);
    std::memcpy(per_rank[r.rank()].data(), &free, sizeof free);
  });
  backend.allgather(per_rank);  // across the processes of a launch: every process decides alike
  uint64_t least = UINT64_MAX;
  for (const auto& b : per_rank) {
    if (b.size() != sizeof(uint64_t)) continue;
    uint64_t v = 0;
    std::memcpy(&v, b.data(), sizeof v);
    least = std::min(least, v);
  }
  return least == UINT64_MAX ? 0 : least;
}

uint64_t host_memory_margin(uint64_t available_bytes) {
  return (2ull << 30) + available_bytes / 20;
}

uint64_t host_memory_available() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

std::optional<std::string> fit_problem(const CaseSpec& c, const Prediction& model,
                                       const MemoryBudget& b) {
  const Need n = need_of(model, b, b.ranks_per_process);
  if (fits(n, b)) return std::nullopt;

  std::ostringstream m;
  m << "does not fit this machine, skipped: by the model ";
  if (b.host_backend) {
    m << "its " << c.world_size << " rank(s) need " << gb(n.host_process)
      << " of host memory (the host backend holds every rank's gradients)";
  } else {
    m << "each rank needs " << gb(n.device) << " of device memory and " << gb(n.pinned)
      << " of pinned host memory (" << gb(n.host_process) << " for the " << b.ranks_per_process
      << " rank(s) of this process)";
  }
  // Only the budgets known at this point (the host's is checked before any backend starts).
  std::vector<std::string> has;
  if (b.host_available_bytes)
    has.push_back(gb(b.host_bytes()) + " of host memory for it (MemAvailable " +
                  gb(b.host_available_bytes) + " minus a " + gb(b.host_margin_bytes) + " margin)");
  if (!b.host_backend && b.device_free_bytes)
    has.push_back(gb(b.device_bytes()) + " of device memory per rank (free " +
                  gb(b.device_free_bytes) + " minus a " + gb(b.device_margin_bytes) + " margin)");
  for (size_t i = 0; i < has.size(); ++i) m << (i ? " and " : "; the machine has ") << has[i];
  if (!b.host_backend && !b.device_free_bytes) m << " (device memory not known yet: not checked)";

  // What would fit, by the same model: more ranks (same ranks per process), another offload, bf16.
  // More ranks help a GPU run only when they do not share this host: counted as one process per
  // GPU on its own host (--launcher env). The host backend holds every rank in one process.
  std::vector<std::string> would;
  for (int w = c.world_size * 2; w <= 4096 && !b.host_backend; w *= 2) {
    CaseSpec more = c;
    more.world_size = w;
    const Need nw = need_of(more, b, 1);
    if (fits(nw, b)) {
      would.push_back("--world-size " + std::to_string(w) + " with one process per GPU and host (" +
                      per_rank(nw, b) + ")");
      break;
    }
  }
  for (const std::string& o : OffloadRegistry::get().names()) {
    if (c.strategy.offload == o) continue;
    CaseSpec other = c;
    other.strategy.offload = o;
    const Need no = need_of(other, b, b.ranks_per_process);
    if (fits(no, b)) would.push_back("--offload " + o + " (" + per_rank(no, b) + ")");
  }
  for (const char* d : {"bf16-bf16-fp32", "bf16-bf16-bf16"}) {
    CaseSpec half = c;
    half.dtypes = parse_dtype_triple(d);
    if (half.dtypes.name() == c.dtypes.name() ||
        !oracle_resolves(half.dtypes, c.gen, c.schedule.k(), c.world_size,
                         division_steps(c.strategy.division, c.world_size)))  // refused
      continue;
    const Need nd = need_of(half, b, b.ranks_per_process);
    if (fits(nd, b)) would.push_back(std::string("--dtype ") + d + " (" + per_rank(nd, b) + ")");
  }
  if (would.empty()) {
    m << ". Nothing fits by the model with "
      << (b.host_backend ? "" : "a --world-size up to 4096, ")
      << "another --offload or a bf16 --dtype: use a smaller --model";
  } else {
    m << ". Would fit, by the model: ";
    for (size_t i = 0; i < would.size(); ++i) m << (i ? "; " : "") << would[i];
  }
  return m.str();
}

MemoryBudget run_budget(const std::vector<CaseSpec>& cases, const BackendChoice& choice,
                        bool processes) {
  MemoryBudget budget;
  budget.host_available_bytes = host_memory_available();
  budget.host_margin_bytes = host_memory_margin(budget.host_available_bytes);
  budget.host_backend = choice.name == "host";
  budget.host_task_depth = choice.name == "cuda" ? kCudaHostTaskDepth : 0;
  budget.device_margin_bytes = kDeviceMemoryMargin;
#if defined(SHARDACCUM_HAVE_CUDA)
  // The devices' free memory before any world starts (primary contexts only): NCCL and the pool
  // take more later, which each case's own check then sees (bench_cases.cpp).
  // Under a multi-process launch only the per-case check (bench_cases.cpp) reads the devices: its
  // figure is gathered from every process, so all of them skip alike.
  if (choice.name == "cuda" && !processes) {
    int w = 1;
    for (const auto& c : cases) w = std::max(w, c.world_size);
    const int gpus = cuda_device_count();
    uint64_t least = UINT64_MAX;
    for (int d = 0; d < std::min(w, gpus); ++d) least = std::min(least, cuda_device_free_bytes(d));
    budget.device_free_bytes = least == UINT64_MAX ? 0 : least;
  }
#else
  (void)cases;
  (void)processes;
#endif
  return budget;
}

std::map<std::string, std::string> up_front_fit_skips(const std::vector<CaseSpec>& cases,
                                                      const CasePredictions& models,
                                                      const MemoryBudget& budget, bool processes) {
  std::map<std::string, std::string> skips;
  for (const auto& c : cases) {
    MemoryBudget b = budget;
    b.ranks_per_process = processes ? 1 : c.world_size;
    if (auto why = fit_problem(c, models.at(c.name()), b)) {
      std::fprintf(stderr, "shardaccum_bench: %s %s\n", c.name().c_str(), why->c_str());
      skips.emplace(c.name(), *why);
    }
  }
  return skips;
}

}  // namespace shardaccum
