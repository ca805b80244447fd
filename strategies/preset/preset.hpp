#pragma once
// Presets (docs/DESIGN.md §3): a strategy named after the real system it models, one file each in
// this folder, registered with SHARDACCUM_REGISTER_PRESET. `--preset NAME` replaces the axis flags.
#include <string>
#include <string_view>
#include <vector>

#include "strategies/backend/comm_priority.hpp"
#include "strategies/strategy.hpp"

namespace shardaccum {

struct PresetInfo {
  std::string name;         // e.g. "fsdp2"
  std::string description;  // one line
  std::string follows;      // the system and its configuration, e.g. "PyTorch FSDP2 fully_shard"
  StrategySpec spec;  // its lookahead left nullopt: `lookahead` below is the strategy's default
  int order = 0;      // report order (ties: by name)
  /// How far the system's backward runs ahead of its reduce-scatters (docs/DESIGN.md §2), with the
  /// source in `follows` or the preset's comment.
  Lookahead lookahead = Lookahead::one;
  /// Non-empty: the system runs only S^K (a reduction every micro-batch) and n^(K-1)S (one
  /// reduction after K backwards), never an interleaved schedule; this says why, with the source.
  /// The case matrix leaves such cases out (leave_out_unrunnable, the context's left_out_cases).
  std::string refuses_interleaved = {};
  /// How the system's device adds launch (--device-add-grid auto, default_device_add_grid): every
  /// SM, as PyTorch's `+=` (FSDP1, FSDP2, FairScale and DeepSpeed add with PyTorch's kernels), or
  /// the suite's two blocks per SM for an idealised preset.
  DeviceAddGrid device_add_grid = DeviceAddGrid::torch;
  /// The priority of the stream its reduce-scatters run on (--comm-priority auto,
  /// default_comm_priority; comm_priority.hpp gives each system's source): 0 for FSDP1, FairScale
  /// and DeepSpeed, the device's greatest for FSDP2 and the idealised presets.
  CommPriority comm_priority = CommPriority::normal;
  /// The system runs under torchrun, which sets OMP_NUM_THREADS=1 when it starts more than one
  /// process on a node (torch/distributed/run.py 849-861, docs/PRESETS.md F3): under
  /// --host-threads auto its CPU add gets 1 intra-op thread when more than one rank shares the
  /// node (default_host_threads), else the rank's share.
  bool torchrun_threads = false;
  /// Host time in µs that the system's Python spends per unit's backward beyond the suite's own
  /// issuing (its hooks, autograd's engine), spent on the issuing thread before the unit's backward
  /// is issued (--hook-host-us auto, default_hook_host_us; CasePlan::hook_host_us). It delays the
  /// GPU only where the host cannot run ahead: after a blocking copy. Measured, with the source in
  /// the preset's file; 0 where not measured (docs/PRESETS.md "Host time per unit").
  uint32_t hook_host_us = 0;
};

class PresetRegistry {
 public:
  static PresetRegistry& get();
  /// Registers a preset; throws std::logic_error for a duplicate name. (Its axis values are checked
  /// by a test: static initialisers may run before the values register.)
  bool add(PresetInfo p);
  const std::vector<PresetInfo>& entries() const { return entries_; }
  std::vector<std::string> names() const;
  const PresetInfo* find(std::string_view name) const;
  /// The preset whose binding, offload, mode and division `s` has, whatever its copy-in and
  /// lookahead, or null: the system a combination follows, so that `--copy-in` changes neither
  /// its default lookahead nor which of its schedules are left out. No two presets share those
  /// four values (a test checks it).
  const PresetInfo* of(const StrategySpec& s) const;

 private:
  std::vector<PresetInfo> entries_;
};

/// The strategy of preset `name`. Throws std::invalid_argument naming --preset and the presets.
StrategySpec preset(std::string_view name);

}  // namespace shardaccum

/// In a preset's .cpp, inside namespace shardaccum: registers the PresetInfo given.
#define SHARDACCUM_REGISTER_PRESET(Tag, ...)                                                       \
  namespace {                                                                                      \
  [[maybe_unused]] const bool kPreset##Tag =                                                       \
      ::shardaccum::PresetRegistry::get().add(::shardaccum::PresetInfo __VA_ARGS__);               \
  }
