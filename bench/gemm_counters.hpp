#pragma once
// The counters of --backward gemm (docs/DESIGN.md §2, §7): the backward's GEMM rate and the tokens
// a rank processes per second, beside the dense GEMM ceiling of the JSON context.
#include <benchmark/benchmark.h>

#include "bench/counters.hpp"
#include "strategies/case_plan.hpp"

namespace shardaccum {

/// The GEMM FLOPs of one step of `plan` on one rank: K micro-batches of gemm_flops per unit
/// (4 * T * numel of every parameter with a GEMM); 0 with the synthetic backward.
double backward_step_flops(const CasePlan& plan);

/// With --backward gemm only: `backward_tflops` = backward_step_flops / the per-step mean of
/// phase_ms[backward] (the GEMMs and the generator, 1e12 FLOP/s), and `tokens_per_s` = tokens * K
/// / the per-step mean step_ms, each per rank and written plain (a ratio of per-step means), where
/// its time is above 0. Nothing for the synthetic backward or before any step.
void write_gemm_counters(benchmark::UserCounters& c, const CaseTotals& t, const CasePlan& plan);

}  // namespace shardaccum
