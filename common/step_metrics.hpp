#pragma once
// What one rank measured over one step (docs/DESIGN.md §6, §7).
#include "common/streams.hpp"
#include <algorithm>
#include <array>
#include <cstdint>

namespace shardaccum {

/// What one rank measured over one step (or the sum of several), per step and rank.
struct StepMetrics {
  double step_ms = 0;                          // wall of the step on this rank (host or GPU time)
  std::array<double, kPhaseCount> phase_ms{};  // busy time per phase
  uint64_t h2d_bytes = 0, d2h_bytes = 0;       // counted where the copies are issued
  uint64_t d2h_pageable_bytes = 0;             // of d2h_bytes, those into pageable host memory
  /// --param-traffic on: the parameters' H2D (RankBackend::copy_param), not in h2d_bytes, which
  /// stay the gradient path's (what the model's validation compares).
  uint64_t param_h2d_bytes = 0;
  /// --param-traffic on with FSDP2's collectives: the all-gather's copy-out of each unshard into
  /// the unit's unsharded parameter, a device copy on the compute stream (RankBackend::copy_param).
  uint64_t param_d2d_bytes = 0;
  uint64_t nccl_input_bytes = 0;  // sum of reduce-scatter input sizes
  uint64_t reduce_scatter_calls = 0;
  /// Bytes read + written by the device adds and conversions (accumulate phase) and by the CPU
  /// adds (cpu_add phase): the numerators of their fractions of the copy / host-add ceilings.
  uint64_t accumulate_bytes = 0, cpu_add_bytes = 0;
  /// Bytes read + written by the division axis's passes (RankBackend::scale), on the device and on
  /// the host (an offloaded shard's `end`).
  uint64_t division_device_bytes = 0, division_host_bytes = 0;
  /// With a CUPTI collector: h2d_bytes/d2h_bytes are CUPTI's MEMCPY records of the step, the
  /// backend's own accounting stays in accounted_*; kernel times are CUPTI's (else 0).
  bool bytes_from_cupti = false;
  uint64_t accounted_h2d_bytes = 0, accounted_d2h_bytes = 0;
  double nccl_kernel_ms = 0, accumulate_kernel_ms = 0, generate_kernel_ms = 0;
  /// The reduce-scatters as the GPU spent them (docs/DESIGN.md §6, the gate), ms: nccl_ms = Σ (end
  /// − own start), nccl_wait_ms = Σ (latest rank's start − own start), nccl_link_ms = Σ (end −
  /// latest rank's start), the busbw denominator. The host backend: wall times, wait 0.
  double nccl_ms = 0, nccl_wait_ms = 0, nccl_link_ms = 0;
  /// |∪ reduce-scatters − ∪ compute-stream backward ops| and |∪ compute-stream backward ops|, ms on
  /// the GPU's clock: the communication not hidden by compute, and the backward as the GPU ran it.
  double exposed_comm_ms = 0, compute_ms = 0;
  /// |∪ CPU adds ∩ ∪ D2Hs|, ms: the CPU add's time beside D2H copies landing in host memory,
  /// placed on the host clock (the cuda backend; 0 on the host backend). With the CPU add's
  /// phase time it weighs the two host add ceilings (bench/counters.cpp,
  /// cpu_add_frac_shared_ceiling).
  double cpu_add_beside_d2h_ms = 0;

  /// Folds `o` in field by field with `op` (a max over ranks, a sum over steps); the peaks always
  /// take the max and bytes_from_cupti the or.
  template <class Op>
  void fold(const StepMetrics& o, Op op) {
    step_ms = op(step_ms, o.step_ms);
    for (int p = 0; p < kPhaseCount; ++p) phase_ms[p] = op(phase_ms[p], o.phase_ms[p]);
    for (auto f : {&StepMetrics::h2d_bytes, &StepMetrics::d2h_bytes, &StepMetrics::nccl_input_bytes,
                   &StepMetrics::reduce_scatter_calls, &StepMetrics::accumulate_bytes,
                   &StepMetrics::cpu_add_bytes, &StepMetrics::division_device_bytes,
                   &StepMetrics::division_host_bytes, &StepMetrics::accounted_h2d_bytes,
                   &StepMetrics::accounted_d2h_bytes, &StepMetrics::d2h_pageable_bytes,
                   &StepMetrics::param_h2d_bytes, &StepMetrics::param_d2d_bytes})
      this->*f = op(this->*f, o.*f);
    for (auto f :
         {&StepMetrics::nccl_kernel_ms, &StepMetrics::accumulate_kernel_ms,
          &StepMetrics::generate_kernel_ms, &StepMetrics::nccl_ms, &StepMetrics::nccl_wait_ms,
          &StepMetrics::nccl_link_ms, &StepMetrics::exposed_comm_ms, &StepMetrics::compute_ms,
          &StepMetrics::cpu_add_beside_d2h_ms})
      this->*f = op(this->*f, o.*f);
    peak_device_bytes = std::max(peak_device_bytes, o.peak_device_bytes);
    peak_pinned_bytes = std::max(peak_pinned_bytes, o.peak_pinned_bytes);
    peak_pageable_bytes = std::max(peak_pageable_bytes, o.peak_pageable_bytes);
    bytes_from_cupti = bytes_from_cupti || o.bytes_from_cupti;
  }
  uint64_t peak_device_bytes = 0, peak_pinned_bytes = 0;  // high watermarks since begin_step
  uint64_t peak_pageable_bytes = 0;  // pageable host memory's high watermark since begin_step
};

}  // namespace shardaccum
