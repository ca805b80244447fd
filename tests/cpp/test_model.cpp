// The analytical model against hand-computed literals (docs/DESIGN.md §3).
#include <gtest/gtest.h>

#include "bench/model_layouts.hpp"
#include "strategies/preset/preset.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

CasePlan plan_for(Layout l, const char* sched, const StrategySpec& s, const char* dtype) {
  return CasePlan{
      std::move(l), parse_schedule(sched, 4), s, parse_dtype_triple(dtype), GenMode::dyadic, 1,
      "t"};
}

// gpu-add with the division at the end, at ZeRO-3's lookahead: the zero3 preset until issue 16
// made it ZeRO-3's own copies (gpu-add-zero3, division pre); the literals below are gpu-add's.
const StrategySpec kGpuAdd{"data-free", "gpu-add", "flag", "end", Lookahead::unbounded};

// docs/DESIGN.md's example to check by hand: llama2-7b, N=2, fp32, sync, gpu-add.
TEST(Model, Llama2_7bSyncGpuAddMatchesTheDesignLiteral) {
  const Layout l = load_layout("llama2-7b", {SHARDACCUM_CONFIG_DIR});
  const Prediction p = predict(plan_for(l, "sync", kGpuAdd, "fp32-fp32-fp32"), 2);
  EXPECT_EQ(p.h2d_bytes, 40'430'493'696ull);
  EXPECT_EQ(p.d2h_bytes, 53'907'324'928ull);
  EXPECT_EQ(p.nccl_input_bytes, 4ull * 6'738'415'616ull * 4);  // s * P_u * b_r
  EXPECT_EQ(p.reduce_scatter_calls, 4ull * 35);
  // cpu-add moves the same D2H and no H2D; copy the same D2H too.
  const Prediction c =
      predict(plan_for(l, "sync", {"data-free", "cpu-add", "flag"}, "fp32-fp32-fp32"), 2);
  EXPECT_EQ(c.h2d_bytes, 0u);
  EXPECT_EQ(c.d2h_bytes, 53'907'324'928ull);
}

// uniform:2x1000 at N=3: numel_padded = roundup(1000, 24) = 1008, shard = 336 elements.
TEST(Model, SmallCaseByHand) {
  const Layout l = load_layout("uniform:2x1000", {});
  const auto fp32 = "fp32-fp32-fp32";
  // gpu-add on SSSS: D2H 4 * 2 * 336 * 4 = 10752; H2D 3 * 2 * 336 * 4 = 8064.
  Prediction p = predict(plan_for(l, "SSSS", kGpuAdd, fp32), 3);
  EXPECT_EQ(p.d2h_bytes, 10752u);
  EXPECT_EQ(p.h2d_bytes, 8064u);
  EXPECT_EQ(p.nccl_input_bytes, 4u * 2 * 1008 * 4);
  // Pinned: saved for both units (2 * 1344) + one device-side staging, no pinned staging.
  EXPECT_EQ(p.peak_pinned_bytes, 2u * 1344);
  // Device at ZeRO-3's lookahead (unbounded): unit 1's gradient 4032 is still held at unit 0's
  // later S: + grad 4032 + out 1344 + the device staging 1344 = 10752.
  EXPECT_EQ(p.peak_device_bytes, 10752u);
  // Lookahead 0, first S of unit 1: grad 4032 + out 1344 = 5376 (the largest moment).
  StrategySpec exposed = kGpuAdd;
  exposed.lookahead = Lookahead::zero;
  EXPECT_EQ(predict(plan_for(l, "SSSS", exposed, fp32), 3).peak_device_bytes, 5376u);

  // no-sync without offload, lookahead 0: after the n's both unsharded gradients are alive
  // (2 * 4032), then unit 1's out (1344) joins them: 9408.
  p = predict(plan_for(l, "nnnS", {"data", "none", "flag", "end", Lookahead::zero}, fp32), 3);
  EXPECT_EQ(p.peak_device_bytes, 9408u);
  // Lookahead 1 (the default): unit 1's gradient is held until unit 0's reduce-scatter, beside
  // unit 1's saved shard (its out) and unit 0's out: 2 * 4032 + 2 * 1344 = 10752.
  EXPECT_EQ(predict(plan_for(l, "nnnS", {"data", "none", "flag"}, fp32), 3).peak_device_bytes,
            10752u);
  EXPECT_EQ(p.peak_pinned_bytes, 0u);
  EXPECT_EQ(p.h2d_bytes + p.d2h_bytes, 0u);

  // cpu-add on SSSS: pinned saved (2 * 1344) + one pinned staging (1344) during a later S.
  p = predict(plan_for(l, "SSSS", {"data-free", "cpu-add", "flag"}, fp32), 3);
  EXPECT_EQ(p.peak_pinned_bytes, 3u * 1344);
  EXPECT_EQ(p.d2h_bytes, 10752u);
  EXPECT_EQ(p.h2d_bytes, 0u);

  // bf16-bf16-fp32: NCCL moves 2-byte elements, copies move the 4-byte accum dtype.
  p = predict(plan_for(l, "SSSS", kGpuAdd, "bf16-bf16-fp32"), 3);
  EXPECT_EQ(p.nccl_input_bytes, 4u * 2 * 1008 * 2);
  EXPECT_EQ(p.d2h_bytes, 10752u);
}

// The zero3 preset (gpu-add-zero3, docs/PRESETS.md Z4, Z5) on the same shards (336 elements of
// 4 B = 1344 B per unit, 2 units, N = 3), as DeepSpeed 0.19.8 moved them on one H200
// (reports/h200-reference/real-zero3-*.json: SSSS H2D 4P, D2H 5P; nnnS P and 2P).
TEST(Model, Zero3CopiesTheFirstShardBackAndTheLastIntoTheOptimizer) {
  const Layout l = load_layout("uniform:2x1000", {});
  Prediction p = predict(plan_for(l, "SSSS", preset("zero3"), "fp32-fp32-fp32"), 3);
  EXPECT_EQ(p.h2d_bytes, 4u * 2 * 1344);             // every S, the first's straight back included
  EXPECT_EQ(p.d2h_bytes, 4u * 2 * 1344 + 2 * 1344);  // and the boundary's fp32 copy
  // DeepSpeed's two pinned buffers, the gradient partition's and the optimizer's fp32 gradient
  // (one sub-group), each 2 * 1344 B rounded up to a power of two (zero3_pinned.hpp).
  EXPECT_EQ(p.peak_pinned_bytes, 4096u + 4096);
  // Division pre: every sync a pass (read + write) over the unsharded gradient (1008 * 4 B).
  EXPECT_EQ(p.division_device_bytes, 4u * 2 * 2 * 4032);
  p = predict(plan_for(l, "nnnS", preset("zero3"), "fp32-fp32-fp32"), 3);
  EXPECT_EQ(p.h2d_bytes, 2u * 1344);
  EXPECT_EQ(p.d2h_bytes, 2u * 2 * 1344);
  // bf16 accum: the boundary copy is still fp32 (4 B per element), the other copies 2 B.
  p = predict(plan_for(l, "SSSS", preset("zero3"), "bf16-bf16-bf16"), 3);
  EXPECT_EQ(p.h2d_bytes, 4u * 2 * 672);
  EXPECT_EQ(p.d2h_bytes, 4u * 2 * 672 + 2 * 1344);
}

// The zero3 preset's bytes per step against what DeepSpeed 0.19.8 ZeRO-3 moved on one H200
// (reports/h200-reference/real-zero3-uniform-16x64M.json, real-zero3-gpt2-xl.json: h2d_bytes and
// d2h_bytes of offload:cpu, world 1, K = 4, fp32): equal to the byte.
TEST(Model, Zero3MovesWhatDeepSpeedMoved) {
  struct Recorded {
    const char* model;
    const char* schedule;
    uint64_t h2d, d2h;
  };
  for (const Recorded& r : {Recorded{"uniform:16x64M", "SSSS", 17'179'869'184, 21'474'836'480},
                            Recorded{"uniform:16x64M", "nnnS", 4'294'967'296, 8'589'934'592},
                            Recorded{"gpt2-xl", "SSSS", 24'921'779'200, 31'152'224'000},
                            Recorded{"gpt2-xl", "nnnS", 6'230'444'800, 12'460'889'600}}) {
    const Layout l = load_layout(r.model, {SHARDACCUM_CONFIG_DIR});
    const Prediction p = predict(plan_for(l, r.schedule, preset("zero3"), "fp32-fp32-fp32"), 1);
    EXPECT_EQ(p.h2d_bytes, r.h2d) << r.model << " " << r.schedule;
    EXPECT_EQ(p.d2h_bytes, r.d2h) << r.model << " " << r.schedule;
  }
}

// The pipelined values at a 100-element chunk (400 B) of the 336-element shards above: chunks of
// 100, 100, 100 and 36 elements. Each moves its unpipelined form's bytes and holds its staging:
// gpu-add-pipelined the whole shard on the device (a ring of chunks stalled its H2D behind queued
// D2Hs), cpu-add-pipelined the whole shard in pinned memory per host task (a task per chunk
// filled the task queue and held up the issuing thread).
TEST(Model, PipelinedOffloadsMoveAndStageAsTheirUnpipelinedForms) {
  const Layout l = load_layout("uniform:2x1000", {});
  const auto plan_of = [&](const char* offload) {
    CasePlan c = plan_for(l, "SSSS", {"data-free", offload, "flag", "end", Lookahead::unbounded},
                          "fp32-fp32-fp32");
    c.chunk_bytes = 400;
    return c;
  };
  for (const auto& [piped, plain] :
       {std::pair{"gpu-add-pipelined", "gpu-add"}, std::pair{"cpu-add-pipelined", "cpu-add"}})
    for (int depth : {0, 2}) {
      SCOPED_TRACE(std::string(piped) + " host task depth " + std::to_string(depth));
      const Prediction p = predict(plan_of(piped), 3, depth), q = predict(plan_of(plain), 3, depth);
      EXPECT_EQ(p.d2h_bytes, q.d2h_bytes);
      EXPECT_EQ(p.h2d_bytes, q.h2d_bytes);
      EXPECT_EQ(p.peak_device_bytes, q.peak_device_bytes);
      EXPECT_EQ(p.peak_pinned_bytes, q.peak_pinned_bytes);
    }
  const Prediction g = predict(plan_of("gpu-add-pipelined"), 3);
  EXPECT_EQ(g.d2h_bytes, 10752u);  // gpu-add's bytes (above)
  EXPECT_EQ(g.h2d_bytes, 8064u);
  EXPECT_EQ(g.peak_device_bytes, 10752u);  // its staging of the whole shard (1344 bytes) included
  EXPECT_EQ(g.peak_pinned_bytes, 2u * 1344);
  const Prediction c = predict(plan_of("cpu-add-pipelined"), 3, 2);
  EXPECT_EQ(c.h2d_bytes, 0u);
  // Two saved shards, and one staging of the shard beside two pending tasks' stagings.
  EXPECT_EQ(c.peak_pinned_bytes, 2u * 1344 + 3 * 1344);
}

// A wrong cell moves what its state machine moved: shape cannot see the host shard, so gpu-add
// under shape never adds (no H2D) and copies every shard down.
TEST(Model, WrongCellsFollowTheirStateMachine) {
  const Layout l = load_layout("uniform:2x1000", {});
  const Prediction p =
      predict(plan_for(l, "SSSS", {"data-free", "gpu-add", "shape"}, "fp32-fp32-fp32"), 3);
  EXPECT_EQ(p.h2d_bytes, 0u);
  EXPECT_EQ(p.d2h_bytes, 10752u);
}

TEST(Model, PaddingRoundsToWorldTimesEight) {
  EXPECT_EQ(padded_numel(1, 4), 32u);
  EXPECT_EQ(shard_numel(1, 4), 8u);
  EXPECT_EQ(padded_numel(1009, 3), 1032u);  // prime numel
  EXPECT_EQ(padded_numel(64, 8), 64u);
}

}  // namespace
}  // namespace shardaccum
