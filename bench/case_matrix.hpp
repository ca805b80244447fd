#pragma once
// The case matrix as axes (STYLE.md, NVBench): model x world size x schedule x strategy x dtype.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/ceilings.hpp"
#include "strategies/step_driver.hpp"

namespace shardaccum {

/// The values of every axis, already validated.
struct MatrixAxes {
  std::vector<std::shared_ptr<const Layout>> models;
  std::vector<int> world_sizes;
  std::vector<Schedule> schedules;
  std::vector<StrategySpec> strategies;
  std::vector<DTypeTriple> dtypes;
  /// --dtype all: a triple with grad != reduce is left out with a strategy without a copy-in
  /// (validate(spec, dtypes) refuses it); given by name, validate_cases refuses it instead.
  bool dtypes_all = false;
  GenMode gen = GenMode::dyadic;
  uint64_t seed = 0x5a5a;
  Backward backward = Backward::synthetic;  // --backward; with gemm, --tokens and --tf32 below
  uint64_t tokens = 0;
  bool tf32 = false;
  uint64_t chunk_bytes = kDefaultChunkBytes;  // --chunk-bytes (the pipelined offloads)
  int host_threads = kHostThreadsAuto;        // --host-threads (cpu-add-pageable)
  bool param_traffic = false;          // --param-traffic on (kept where param_traffic_applies)
  bool autograd_accumulation = false;  // --grad-accumulation autograd
  /// --device-add-grid torch or two-per-sm; nullopt (auto): each strategy's
  /// default_device_add_grid.
  std::optional<DeviceAddGrid> device_add_grid;
  /// --comm-priority greatest or default; nullopt (auto): each strategy's default_comm_priority.
  std::optional<CommPriority> comm_priority;
  /// --hook-host-us N; nullopt (auto): each strategy's default_hook_host_us.
  std::optional<uint32_t> hook_host_us;
  /// What resolving the axes left out and why (a world size above the GPUs), for stderr.
  std::vector<std::string> notes;
};

/// One benchmark case.
struct CaseSpec {
  std::shared_ptr<const Layout> layout;
  int world_size = 1;
  Schedule schedule;
  StrategySpec strategy;
  DTypeTriple dtypes;
  GenMode gen = GenMode::dyadic;
  uint64_t seed = 0;
  Backward backward = Backward::synthetic;
  uint64_t tokens = 0;
  bool tf32 = false;
  uint64_t chunk_bytes = kDefaultChunkBytes;  // --chunk-bytes: not in the name (one per run)
  /// --host-threads as given (kHostThreadsAuto: default_host_threads); not in the name, the label
  /// says it where the offload takes it (OffloadPolicy::takes_host_threads).
  int host_threads = kHostThreadsAuto;
  /// --param-traffic on; only ever true where param_traffic_applies.
  bool param_traffic = false;
  /// --grad-accumulation autograd (CasePlan::autograd_accumulation).
  bool autograd_accumulation = false;
  /// --device-add-grid as given; nullopt (auto): default_device_add_grid(strategy).
  std::optional<DeviceAddGrid> device_add_grid;
  /// --comm-priority as given; nullopt (auto): default_comm_priority(strategy).
  std::optional<CommPriority> comm_priority;
  /// --hook-host-us as given; nullopt (auto): default_hook_host_us(strategy).
  std::optional<uint32_t> hook_host_us;

  /// `accum/model:M/world:N/schedule:S/binding:B/offload:O/mode:T/dtype:D` (docs/DESIGN.md §7),
  /// then `/backward:gemm-T<tokens>` with the gemm backward only (synthetic names stay as they
  /// were), then `/param-traffic:on` with param_traffic only (names without it stay as they were),
  /// then `/grad-accumulation:autograd` with autograd_accumulation only, then
  /// `/device-add-grid:G` when --device-add-grid named G (left out under auto, as the lookahead at
  /// its default: the case's label says which grid it ran), then `/comm-priority:P` when
  /// --comm-priority named P (likewise), then `/hook-host-us:N` when --hook-host-us named N
  /// (likewise).
  std::string name() const;
  /// device_add_grid as given, else default_device_add_grid(strategy).
  DeviceAddGrid effective_device_add_grid() const;
  /// comm_priority as given, else default_comm_priority(strategy).
  CommPriority effective_comm_priority() const;
  /// hook_host_us as given, else default_hook_host_us(strategy).
  uint32_t effective_hook_host_us() const;
  /// host_threads as given, else default_host_threads(strategy, world_size).
  int effective_host_threads() const;
  /// The label's segment for the CPU add's threads when the offload takes --host-threads
  /// (OffloadPolicy::takes_host_threads): "host threads N", "host threads 1 (torchrun)" when auto
  /// chose it, for 0 "host threads S (the rank's share)" with `share` the backend's
  /// (Backend::host_add_threads) or "host threads rank's share" where that is 0; "" for every
  /// other offload.
  std::string host_threads_setting(int share = 0) const;
  /// The plan, its device_add_grid, comm_priority and hook_host_us the effective ones.
  CasePlan plan() const;
};

/// --device-add-grid auto's choice for `st`: the grid of the preset whose combination `st` is
/// (PresetRegistry::of; PresetInfo::device_add_grid: torch for the real systems, whose adds are
/// PyTorch's), else DeviceAddGrid::two_per_sm (the suite's idealised strategies, `ideal` too).
DeviceAddGrid default_device_add_grid(const StrategySpec& st);

/// --comm-priority auto's choice for `st`: the comm stream priority of the preset whose
/// combination `st` is (PresetRegistry::of; PresetInfo::comm_priority: 0 for FSDP1, FairScale and
/// DeepSpeed), else CommPriority::greatest (the suite's idealised strategies, as FSDP2's).
CommPriority default_comm_priority(const StrategySpec& st);

/// --hook-host-us auto's choice for `st`: the host time per unit of the preset whose combination
/// `st` is (PresetRegistry::of; PresetInfo::hook_host_us: measured for FSDP1, docs/PRESETS.md H1),
/// else 0 (the suite's idealised strategies issue from C++ with no hooks).
uint32_t default_hook_host_us(const StrategySpec& st);

/// --host-threads auto's choice for `st` at `ranks_per_node` ranks on one node: 1 for the
/// combination (PresetRegistry::of: any copy-in and lookahead) of a preset launched by torchrun
/// (PresetInfo::torchrun_threads: torchrun sets OMP_NUM_THREADS=1 when nproc_per_node > 1,
/// torch/distributed/run.py 849-861) when ranks_per_node > 1, else 0 (the rank's share). The
/// suite's threaded mode puts every rank on one node, and so does one torchrun of it, so a case
/// passes its world size; a run over several nodes gives --host-threads instead.
int default_host_threads(const StrategySpec& st, int ranks_per_node);

/// True when `st` offloads (OffloadPolicy::offloaded()): --param-traffic on copies its parameters.
bool offloads_params(const StrategySpec& st);
/// True when --param-traffic on has something to model in `st`'s cases at `world_size`: the
/// copies of an offloaded strategy, or the unsharded parameters of any strategy but NO_SHARD
/// without offload (params_modelled, strategies/param_traffic.hpp).
bool param_traffic_applies(const StrategySpec& st, int world_size);

/// The gradient dtypes of the --backward gemm cases among `cases`, each once (fp32 first): the
/// dtypes of the run's dense GEMM ceiling.
std::vector<DType> gemm_grad_dtypes(const std::vector<CaseSpec>& cases);
/// The distinct (layout, tokens, gradient dtype) of the --backward gemm cases among `cases`, in
/// their order: what the cuda backend measures each layout's GEMM backward alone for.
std::vector<GemmCeilingCase> gemm_ceiling_cases(const std::vector<CaseSpec>& cases);
/// The distinct (layout, gradient dtype) of the synthetic cases with dyadic values among `cases`,
/// in their order: what the cuda backend measures each layout's generator alone for.
std::vector<GenerateCeilingCase> generate_ceiling_cases(const std::vector<CaseSpec>& cases);

/// The product of the axes, in a stable order (model, world, dtype, strategy, schedule).
std::vector<CaseSpec> build_matrix(const MatrixAxes& axes);

/// A case the matrix leaves out because its system cannot run it, and why.
struct LeftOutCase {
  std::string name;    // CaseSpec::name()
  std::string reason;  // "zero3 runs S^K and n^(K-1)S only, not nSnS: <refuses_interleaved>"
};

/// Removes from `cases` those of a preset that runs no interleaved schedule
/// (PresetInfo::refuses_interleaved) on one that is neither S^K nor n^(K-1)S, and returns them with
/// the reason: not error cases, since no configuration of that system runs them (PRESETS.md Z7).
std::vector<LeftOutCase> leave_out_unrunnable(std::vector<CaseSpec>& cases);

/// One of N slices of the case matrix (`--part I/N`): index I in 1..count. 1/1 is the whole matrix.
struct MatrixPart {
  int index = 1;
  int count = 1;
  /// "I/N", as written in the JSON context (`part`) and on the command line.
  std::string text() const;
};

/// Parses `--part I/N` (decimal, 1 <= I <= N <= 100000). Throws std::invalid_argument naming
/// --part and the fix for anything else ("0/3", "4/3", "x", "1/", "+1/2").
MatrixPart parse_part(const std::string& text);

/// The half-open range [begin, end) of slice `part` over `total` cases: [floor((I-1)*total/N),
/// floor(I*total/N)). The N slices are contiguous, cover every case exactly once in order, and
/// their sizes differ by at most 1. Throws std::invalid_argument naming
/// --part when a slice would be empty (N > total).
std::pair<size_t, size_t> part_range(size_t total, const MatrixPart& part);

/// The cases of slice `part` of `cases` (see part_range), in their order.
std::vector<CaseSpec> select_part(const std::vector<CaseSpec>& cases, const MatrixPart& part);

}  // namespace shardaccum
