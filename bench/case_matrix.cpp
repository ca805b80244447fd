#include "bench/case_matrix.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "strategies/param_traffic.hpp"
#include "strategies/preset/preset.hpp"

namespace shardaccum {
namespace {

/// The offload value of `st`, made for one question about it (its properties take no AxisArgs).
std::unique_ptr<OffloadPolicy> offload_policy(const StrategySpec& st) {
  return OffloadRegistry::get().make(st.offload, AxisArgs{});
}

}  // namespace

std::string CaseSpec::name() const {
  return "accum/model:" + layout->name + "/world:" + std::to_string(world_size) +
         "/schedule:" + schedule.modes + "/" + strategy.name() + "/dtype:" + dtypes.name() +
         (backward == Backward::gemm ? "/backward:gemm-T" + std::to_string(tokens) : "") +
         (param_traffic ? "/param-traffic:on" : "") +
         (autograd_accumulation ? "/grad-accumulation:autograd" : "") +
         (device_add_grid
              ? std::string("/device-add-grid:") + device_add_grid_name(*device_add_grid)
              : "") +
         (comm_priority ? std::string("/comm-priority:") + comm_priority_name(*comm_priority)
                        : "") +
         (hook_host_us ? "/hook-host-us:" + std::to_string(*hook_host_us) : "");
}

DeviceAddGrid CaseSpec::effective_device_add_grid() const {
  return device_add_grid ? *device_add_grid : default_device_add_grid(strategy);
}

DeviceAddGrid default_device_add_grid(const StrategySpec& st) {
  const PresetInfo* p = PresetRegistry::get().of(st);
  return p ? p->device_add_grid : DeviceAddGrid::two_per_sm;
}

CommPriority CaseSpec::effective_comm_priority() const {
  return comm_priority ? *comm_priority : default_comm_priority(strategy);
}

CommPriority default_comm_priority(const StrategySpec& st) {
  const PresetInfo* p = PresetRegistry::get().of(st);
  return p ? p->comm_priority : CommPriority::greatest;
}

uint32_t CaseSpec::effective_hook_host_us() const {
  return hook_host_us ? *hook_host_us : default_hook_host_us(strategy);
}

uint32_t default_hook_host_us(const StrategySpec& st) {
  const PresetInfo* p = PresetRegistry::get().of(st);
  return p ? p->hook_host_us : 0;
}

int CaseSpec::effective_host_threads() const {
  return host_threads == kHostThreadsAuto ? default_host_threads(strategy, world_size)
                                          : host_threads;
}

std::string CaseSpec::host_threads_setting(int share) const {
  if (!offload_policy(strategy)->takes_host_threads()) return "";
  const int n = effective_host_threads();
  if (n == 0)
    return share > 0 ? "host threads " + std::to_string(share) + " (the rank's share)"
                     : "host threads rank's share";
  return "host threads " + std::to_string(n) +
         (host_threads == kHostThreadsAuto ? " (torchrun)" : "");
}

int default_host_threads(const StrategySpec& st, int ranks_per_node) {
  const PresetInfo* p = PresetRegistry::get().of(st);
  return p && p->torchrun_threads && ranks_per_node > 1 ? 1 : 0;
}

bool offloads_params(const StrategySpec& st) { return offload_policy(st)->offloaded(); }

bool param_traffic_applies(const StrategySpec& st, int world_size) {
  return params_modelled(offloads_params(st), copy_in_in_place(st.copy_in, world_size));
}

CasePlan CaseSpec::plan() const {
  CasePlan p{*layout,
             schedule,
             strategy,
             dtypes,
             gen,
             seed,
             name(),
             backward,
             tokens,
             tf32,
             chunk_bytes,
             effective_host_threads(),
             param_traffic,
             autograd_accumulation,
             effective_device_add_grid(),
             effective_comm_priority()};
  p.hook_host_us = effective_hook_host_us();
  return p;
}

std::vector<CaseSpec> build_matrix(const MatrixAxes& a) {
  std::vector<CaseSpec> cases;
  for (const auto& m : a.models)
    for (int w : a.world_sizes)
      for (const auto& d : a.dtypes)
        for (const auto& st : a.strategies) {
          if (a.dtypes_all && d.grad != d.reduce && !copy_in_separate(st.copy_in)) continue;
          for (const auto& sc : a.schedules)
            // NO_SHARD without offload keeps its parameters whole on the GPU: the case is as
            // off, and so its name.
            cases.push_back(
                {m, w, sc, st, d, a.gen, a.seed, a.backward, a.tokens, a.tf32, a.chunk_bytes,
                 a.host_threads, a.param_traffic && param_traffic_applies(st, w),
                 a.autograd_accumulation, a.device_add_grid, a.comm_priority, a.hook_host_us});
        }
  return cases;
}

std::vector<LeftOutCase> leave_out_unrunnable(std::vector<CaseSpec>& cases) {
  std::vector<LeftOutCase> out;
  std::erase_if(cases, [&](const CaseSpec& c) {
    const PresetInfo* p = PresetRegistry::get().of(c.strategy);
    const std::string& m = c.schedule.modes;
    const bool interleaved =
        m != std::string(m.size(), 'S') && m != std::string(m.size() - 1, 'n') + "S";
    if (!p || p->refuses_interleaved.empty() || !interleaved) return false;
    out.push_back({c.name(), p->name + " runs S^K and n^(K-1)S only, not " + m + ": " +
                                 p->refuses_interleaved});
    return true;
  });
  return out;
}

std::vector<DType> gemm_grad_dtypes(const std::vector<CaseSpec>& cases) {
  std::vector<DType> out;
  for (DType t : {DType::fp32, DType::bf16})
    if (std::any_of(cases.begin(), cases.end(), [&](const CaseSpec& c) {
          return c.backward == Backward::gemm && c.dtypes.grad == t;
        }))
      out.push_back(t);
  return out;
}

std::vector<GemmCeilingCase> gemm_ceiling_cases(const std::vector<CaseSpec>& cases) {
  std::vector<GemmCeilingCase> out;
  for (const CaseSpec& c : cases) {
    if (c.backward != Backward::gemm) continue;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const GemmCeilingCase& g) {
      return g.layout->name == c.layout->name && g.tokens == c.tokens && g.grad == c.dtypes.grad;
    });
    if (!seen) out.push_back({c.layout, c.tokens, c.dtypes.grad});
  }
  return out;
}

std::vector<GenerateCeilingCase> generate_ceiling_cases(const std::vector<CaseSpec>& cases) {
  std::vector<GenerateCeilingCase> out;
  for (const CaseSpec& c : cases) {
    if (c.backward != Backward::synthetic || c.gen != GenMode::dyadic) continue;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const GenerateCeilingCase& g) {
      return g.layout->name == c.layout->name && g.grad == c.dtypes.grad;
    });
    if (!seen) out.push_back({c.layout, c.dtypes.grad});
  }
  return out;
}

std::string MatrixPart::text() const { return std::to_string(index) + "/" + std::to_string(count); }

MatrixPart parse_part(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument(
        "--part '" + text + "': " + why +
        " (give I/N with 1 <= I <= N, e.g. --part 2/3 for the second of three slices)");
  };
  const size_t slash = text.find('/');
  if (slash == std::string::npos) throw bad("expected I/N");
  // Digits only: stoi would take "+1", " 1" or "1x"; a cap keeps I and N far from int overflow.
  const auto number = [&](const std::string& s) {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos)
      throw bad("I and N must be whole numbers up to 100000");
    return std::stoi(s);
  };
  MatrixPart p{number(text.substr(0, slash)), number(text.substr(slash + 1))};
  if (p.count < 1 || p.count > 100000) throw bad("N must be 1..100000");
  if (p.index < 1 || p.index > p.count) throw bad("I must be 1..N");
  return p;
}

std::pair<size_t, size_t> part_range(size_t total, const MatrixPart& part) {
  const auto n = static_cast<size_t>(part.count), i = static_cast<size_t>(part.index);
  if (n > total)
    throw std::invalid_argument("--part " + part.text() + ": the matrix has only " +
                                std::to_string(total) + " case" + (total == 1 ? "" : "s") +
                                ", so some of " + std::to_string(n) +
                                " slices would be empty; give N <= " + std::to_string(total));
  return {(i - 1) * total / n, i * total / n};
}

std::vector<CaseSpec> select_part(const std::vector<CaseSpec>& cases, const MatrixPart& part) {
  const auto [b, e] = part_range(cases.size(), part);
  return {cases.begin() + static_cast<std::ptrdiff_t>(b),
          cases.begin() + static_cast<std::ptrdiff_t>(e)};
}

}  // namespace shardaccum
