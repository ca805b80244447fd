#pragma once
// What defines a case apart from the backend: layout, schedule, strategy, dtypes, generator.
#include <cstdint>
#include <string>

#include "common/dtype.hpp"
#include "common/gradient_gen.hpp"
#include "common/layout.hpp"
#include "strategies/backend/comm_priority.hpp"
#include "strategies/backend/device_add_grid.hpp"
#include "strategies/reduce_buckets.hpp"
#include "strategies/schedule.hpp"
#include "strategies/strategy.hpp"

namespace shardaccum {

/// What the backward of a unit runs (docs/DESIGN.md §2): the generator kernel alone (synthetic), or
/// cuBLAS GEMMs on the unit's parameter shapes before it (gemm, the cuda backend only).
enum class Backward { synthetic, gemm };

/// Everything that defines a case except the backend.
struct CasePlan {
  Layout layout;
  Schedule schedule;
  StrategySpec strategy;
  DTypeTriple dtypes;
  GenMode gen = GenMode::dyadic;
  uint64_t seed = 0x5a5a;
  std::string name;  // the benchmark case name, put on the step's NVTX range
  Backward backward = Backward::synthetic;
  uint64_t tokens = 0;  // T, the GEMMs' token rows with gemm; 0 with synthetic
  bool tf32 = false;    // fp32 GEMMs may use TF32 tensor cores (--tf32)
  /// The pipelined offloads' chunk in bytes of the accum dtype (--chunk-bytes; others ignore it).
  uint64_t chunk_bytes = kDefaultChunkBytes;
  /// cpu-add-pageable's CPU add threads (--host-threads; others ignore it); 0: the rank's share.
  int host_threads = 0;
  /// --param-traffic on, for an offloaded strategy (CaseSpec keeps it off for the others): each
  /// unit's parameter shard copied H2D before its forward and its backward (ParamTraffic).
  bool param_traffic = false;
  /// --grad-accumulation autograd: a backward after an `n` writes a fresh gradient and adds it into
  /// the unit's gradient, which it then frees (autograd's AccumulateGrad: `variable.grad +=
  /// new_grad`, torch/csrc/autograd/functions/accumulate_grad.h), as FSDP1 and FSDP2 accumulate;
  /// false (in-place): the backward accumulates straight into it (a fused accumulation, Megatron's
  /// gradient_accumulation_fusion).
  bool autograd_accumulation = false;
  /// How the case's device adds launch (RankBackend::set_device_add_grid, set by StepDriver):
  /// `torch` for a real system's strategy, every SM as PyTorch's `+=`; `two_per_sm`, the suite's
  /// idealised add (CaseSpec::plan resolves --device-add-grid auto).
  DeviceAddGrid device_add_grid = DeviceAddGrid::two_per_sm;
  /// The comm stream's priority for the case (RankBackend::set_comm_priority, set by StepDriver):
  /// `normal` (0) for FSDP1's, FairScale's and DeepSpeed's strategies, `greatest` for FSDP2's and
  /// the idealised ones (CaseSpec::plan resolves --comm-priority auto).
  CommPriority comm_priority = CommPriority::greatest;
  /// Lookahead::buckets' bucket in elements: DeepSpeed's reduce_bucket_size default (5e8,
  /// deepspeed/runtime/zero/config.py DeepSpeedZeroConfig.reduce_bucket_size, 0.19.8); tests set
  /// less to see buckets flushed within a micro-batch.
  uint64_t reduce_bucket_elements = kZero3ReduceBucketElements;
  /// Host time in µs spent on the issuing thread before each unit's backward is issued
  /// (RankBackend::host_busy; --hook-host-us, CaseSpec::plan resolves auto from the preset's
  /// PresetInfo::hook_host_us): the Python of a real system's hooks, which the GPU waits for
  /// only where the host cannot run ahead of it (after a blocking copy). 0: none.
  uint32_t hook_host_us = 0;
};

}  // namespace shardaccum
