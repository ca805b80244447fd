// The bound (docs/DESIGN.md §6 "Bound") against hand-computed bytes and times at injected
// ceilings; the counters it writes.
#include <gtest/gtest.h>

#include "bench/bound_counters.hpp"
#include "bench/model_layouts.hpp"
#include "strategies/bound.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

CasePlan plan_for(const char* layout, const char* sched, const StrategySpec& s) {
  return CasePlan{load_layout(layout, {}),
                  parse_schedule(sched, 4),
                  s,
                  parse_dtype_triple("fp32-fp32-fp32"),
                  GenMode::dyadic,
                  1,
                  "t"};
}

StrategySpec spec(const char* offload) {
  StrategySpec s;
  s.binding = "data";
  s.offload = offload;
  return s;
}

double term(const Bound& b, const std::string& name) {
  for (const BoundTerm& t : b.terms)
    if (t.name == name) return t.ms;
  ADD_FAILURE() << "no term " << name;
  return -1;
}

// One rank's totals of one measured step that took `step_ms` (the other metrics 0).
CaseTotals one_step(double step_ms) {
  CaseTotals t(1);
  StepMetrics m;
  m.step_ms = step_ms;
  t.add(m, {m});
  return t;
}

bool has_term(const Bound& b, const std::string& name) {
  for (const BoundTerm& t : b.terms)
    if (t.name == name) return true;
  return false;
}

// The case: one H200, uniform:16x64M, K=4, world 1, gpu-add on SSSS.
TEST(Bound, GpuAddOnOneH200IsItsD2hAtTheCopyCeiling) {
  const BoundWork w = bound_work(plan_for("uniform:16x64M", "SSSS", spec("gpu-add")), 1);
  EXPECT_EQ(w.h2d, 12'884'901'888ull);         // 3 later S * 16 units * 64 Mi * 4 B
  EXPECT_EQ(w.d2h, 17'179'869'184ull);         // 4 S * 16 * 64 Mi * 4
  EXPECT_EQ(w.link, 0u);                       // world 1: no link
  EXPECT_EQ(w.host, 16ull * 2 * 268'435'456);  // the host division: r + w of 16 saved shards
  Ceilings c;
  c.h2d_gbps = 55.2;
  c.d2h_gbps = 55.2;
  c.bidir_gbps = 101.5;
  const Bound b = case_bound(w, c, 1, DType::fp32);
  ASSERT_TRUE(b.ms.has_value());
  EXPECT_NEAR(*b.ms, 311.2, 0.05);  // 17.18 GB / 55.2 GB/s; both directions give 296.2
  EXPECT_EQ(b.by, "copy engines");
  EXPECT_FALSE(has_term(b, "host memory"));  // its ceiling is 0: left out
  EXPECT_FALSE(has_term(b, "link"));
  // Critical path: unit 0's last D2H after the last backward, 268 MB / 55.2 GB/s.
  EXPECT_NEAR(term(b, "critical path"), 4.863, 0.001);
}

// The same case with the other divisions: the host's division pass (2 * 8 MiB) is gone; `pre`
// adds its pass over each unsharded gradient every sync, 4 S * 2 units * (r + w) 4 MiB = 64 MiB,
// unit 0's last one (8 MiB) after the last backward; FSDP1's and FSDP2's have none at world 1.
TEST(Bound, DivisionsMoveThePassToTheDeviceOrDropIt) {
  StrategySpec s = spec("cpu-add");
  s.division = "pre";
  const BoundWork pre = bound_work(plan_for("uniform:2x1M", "SSSS", s), 1);
  EXPECT_EQ(pre.host, 75'497'472u);  // 92'274'688 less the division's 16 MiB
  EXPECT_EQ(pre.device, 167'772'160u);
  EXPECT_EQ(pre.tail_host, 12'582'912u);  // unit 0's last CPU add only
  EXPECT_EQ(pre.tail_device, 8'388'608u);
  for (const char* d : {"pre-post", "collective"}) {
    s.division = d;
    const BoundWork w = bound_work(plan_for("uniform:2x1M", "SSSS", s), 1);
    EXPECT_EQ(w.host, 75'497'472u) << d;
    EXPECT_EQ(w.device, 100'663'296u) << d;
    EXPECT_EQ(w.tail_device, 0u) << d;
  }
}

// cpu-add, uniform:2x1M, world 1, SSSS: 3 later S per unit add on the CPU.
TEST(Bound, CpuAddIsBoundByHostMemory) {
  const BoundWork w = bound_work(plan_for("uniform:2x1M", "SSSS", spec("cpu-add")), 1);
  // 2 units * 3 adds * 3 * 4 MiB + the division's 2 * 4 MiB per unit.
  EXPECT_EQ(w.host, 92'274'688u);
  EXPECT_EQ(w.d2h, 33'554'432u);
  EXPECT_EQ(w.h2d, 0u);
  // Generator 8 * 4 MiB + the world-1 reduce-scatter copy (in + out) 8 * 8 MiB.
  EXPECT_EQ(w.device, 100'663'296u);
  EXPECT_EQ(w.tail_host, 20'971'520u);  // unit 0's last CPU add (12 MiB) + its division (8 MiB)
  Ceilings c;
  c.d2h_gbps = 50;
  c.host_add_gbps = 10;
  c.device_copy_gbps = 2000;
  // The first CPU add (micro-batch 1, unit 1) waits for its D2H behind micro-batch 0's two.
  EXPECT_EQ(w.head_d2h, 12'582'912u);
  const Bound b = case_bound(w, c, 1, DType::fp32);
  EXPECT_NEAR(term(b, "host memory"), 9.2274688, 1e-9);
  EXPECT_NEAR(term(b, "copy engines"), 0.67108864, 1e-9);  // only d2h measured
  EXPECT_NEAR(term(b, "device memory"), 0.050331648, 1e-9);
  // The larger of: backward 32 MiB + RS copy 8 MiB at 2000, D2H 4 MiB at 50, host 20 MiB at 10
  // (2.20 ms); and 12 MiB of D2H at 50, then all 92 MB of host work at 10 (9.48 ms).
  EXPECT_EQ(b.by, "critical path");
  EXPECT_NEAR(*b.ms, 0.25165824 + 9.2274688, 1e-9);
  c.host_add_gbps = 100;  // a faster CPU, a slower device: the backward's path is the longer one
  c.device_copy_gbps = 20;
  EXPECT_NEAR(term(case_bound(w, c, 1, DType::fp32), "critical path"),
              1.6777216 + 0.4194304 + 0.08388608 + 0.2097152, 1e-9);
  // Pipelined in 1 MiB chunks, the first add waits for one chunk of its shard only.
  CasePlan piped = plan_for("uniform:2x1M", "SSSS", spec("cpu-add-pipelined"));
  piped.chunk_bytes = 1 << 20;
  EXPECT_EQ(bound_work(piped, 1).head_d2h, 9'437'184u);
  EXPECT_EQ(bound_work(plan_for("uniform:2x1M", "SSSS", spec("gpu-add")), 1).head_d2h, 0u);
}

// The CPU adds and the D2Hs share host memory (Ceilings::host_memory_gbps, both measured at
// once): the same cpu-add case, 92.27 MB of adds and 33.55 MB of D2H, at host add 10 GB/s alone
// and 11 GB/s for both together: 125.83 MB / 11 GB/s = 11.44 ms, above the adds' 9.23 alone.
// The critical path: 12.58 MB of D2H at 50 (0.25 ms), then the adds and the 20.97 MB of D2H
// still to land, 113.25 MB at 11 (10.30 ms): 10.55 ms, below the term. Without host work
// (gpu-add, the mean in the collective) its copies alone make no host memory term.
TEST(Bound, CpuAddsAndTheirCopiesShareHostMemory) {
  const BoundWork w = bound_work(plan_for("uniform:2x1M", "SSSS", spec("cpu-add")), 1);
  Ceilings c;
  c.d2h_gbps = 50;
  c.host_add_gbps = 10;
  c.host_memory_gbps = 11;
  const Bound b = case_bound(w, c, 1, DType::fp32);
  EXPECT_NEAR(term(b, "host memory"), (92'274'688.0 + 33'554'432.0) / 11e9 * 1e3, 1e-9);
  EXPECT_NEAR(term(b, "critical path"),
              0.25165824 + (92'274'688.0 + 33'554'432.0 - 12'582'912.0) / 11e9 * 1e3, 1e-9);
  EXPECT_EQ(b.by, "host memory");
  // Host memory faster than the adds alone need: the adds' own ceiling binds, as before.
  c.host_memory_gbps = 1000;
  EXPECT_NEAR(term(case_bound(w, c, 1, DType::fp32), "host memory"), 9.2274688, 1e-9);
  c.host_memory_gbps = 0.001;
  StrategySpec gpu = spec("gpu-add");
  gpu.division = "collective";
  const BoundWork g = bound_work(plan_for("uniform:2x1M", "SSSS", gpu), 1);
  EXPECT_EQ(g.host, 0u);
  EXPECT_GT(g.h2d + g.d2h, 0u);
  EXPECT_DOUBLE_EQ(term(case_bound(g, c, 1, DType::fp32), "host memory"), 0.0);
  // A case that moved more through host memory than the ceiling: the ceiling is raised to it.
  c.host_memory_gbps = 11;
  EXPECT_DOUBLE_EQ(bound_ceilings(c, 0, 12.5).host_memory_gbps, 12.5);
  EXPECT_DOUBLE_EQ(bound_ceilings(c, 0, 9.0).host_memory_gbps, 11.0);
  EXPECT_DOUBLE_EQ(bound_ceilings(Ceilings{}, 0, 12.5).host_memory_gbps, 0.0);
}

// The add time-shared between alone (10 GB/s) and beside a D2H at full rate (8 GB/s): the same
// cpu-add case's 20.97 MB of D2H after the head take 0.42 ms at 50 GB/s, each ms of which costs
// the adds 1 - 8/10 = 0.2 ms: 9.2274688 + 0.08388608 ms after the 0.25 ms head. Host memory
// shared by rate (11 GB/s here for both at once) would allow 10.30 ms; a faster one (1000 GB/s)
// would let the adds run at their own rate, 9.23 ms, beside D2Hs that the run saw slow them down.
// One H200 (uniform:16x64M cpu-add-pipelined SSSS, 2026-12-04 fifth run's ceilings: alone 116.46,
// beside D2Hs 95.15, D2H 55.28 GB/s): 38.65 GB of adds and 12.88 GB of D2H after a 77.7 ms head:
// 331.9 + 233.1 * 0.183 = 374.6 ms, against 342.8 at 150.34 GB/s shared by rate.
TEST(Bound, TheCpuAddBesideD2hsIsTimeSharedBetweenTheTwoRatesMeasured) {
  const BoundWork w = bound_work(plan_for("uniform:2x1M", "SSSS", spec("cpu-add")), 1);
  Ceilings c;
  c.d2h_gbps = 50;
  c.host_add_gbps = 10;
  c.host_memory_gbps = 1000;
  c.host_add_during_d2h_gbps = 8;
  EXPECT_NEAR(host_after_head_ms(w, c), 9.2274688 + 0.4194304 * 0.2, 1e-9);
  EXPECT_NEAR(term(case_bound(w, c, 1, DType::fp32), "critical path"),
              0.25165824 + 9.2274688 + 0.08388608, 1e-9);
  c.host_memory_gbps = 11;  // shared by rate the larger: 113.25 MB at 11 GB/s
  EXPECT_NEAR(host_after_head_ms(w, c), 113'246'208.0 / 11e9 * 1e3, 1e-9);
  c.host_add_during_d2h_gbps = 12;  // read above the add alone: no cost, never a gain
  c.host_memory_gbps = 1000;
  EXPECT_NEAR(host_after_head_ms(w, c), 9.2274688, 1e-9);
  c.host_add_during_d2h_gbps = 0;  // not measured: by rate only
  EXPECT_NEAR(host_after_head_ms(w, c), 9.2274688, 1e-9);
  // Few adds and many D2Hs: the D2Hs still to land at their own ceiling.
  c.host_add_during_d2h_gbps = 8;
  c.d2h_gbps = 1;
  EXPECT_NEAR(host_after_head_ms(w, c), 20.97152, 1e-9);
  // The H200 figures above, by hand.
  BoundWork h;
  h.host = 38'654'705'664;
  h.d2h = 17'179'869'184;
  h.head_d2h = 4'294'967'296;
  Ceilings hc;
  hc.d2h_gbps = 55.28;
  hc.host_add_gbps = 116.46;
  hc.host_add_during_d2h_gbps = 95.15;
  hc.host_memory_gbps = 150.34;
  EXPECT_NEAR(host_after_head_ms(h, hc), 374.56, 0.01);
  hc.host_add_during_d2h_gbps = 0;
  EXPECT_NEAR(host_after_head_ms(h, hc), 342.82, 0.01);
}

// A rate beside D2Hs read too low is raised to the one at which the case's own step fits: the
// cpu-add case above (adds 9.23 ms alone at 10 GB/s, D2Hs after the head 0.42 ms at 50) in a
// 9.5 ms step with a 0.25 ms head leaves 9.25 ms, 0.021 ms of cost for 0.42 ms of D2H: a rate of
// 10 * (1 - 0.0497) = 9.50 GB/s. In a 10 ms step the cost could be 1.24 times the D2Hs' own ms
// (a rate below 0): nothing is raised; in a 9.4 ms step (9.15 after the head, below the adds
// alone) the rate is above the add's own and the cost 0.
TEST(Bound, ARateBesideD2hsReadLowNeverPutsTheBoundAboveTheStep) {
  const CasePlan p = plan_for("uniform:2x1M", "SSSS", spec("cpu-add"));
  const BoundWork w = bound_work(p, 1);
  Ceilings c;
  c.d2h_gbps = 50;
  c.host_add_gbps = 10;
  c.host_add_during_d2h_gbps = 1;
  const auto seen = [&](double step_ms) {
    StepMetrics m;
    m.cpu_add_bytes = w.host;
    m.d2h_bytes = w.d2h;
    m.step_ms = step_ms;
    CaseTotals t(1);
    t.add(m, {m});
    return host_add_during_d2h_seen_gbps(t, w, c, 0.25165824);
  };
  const double after = 9.5 - 0.25165824, d2h_ms = 0.4194304;
  EXPECT_NEAR(seen(9.5), 10 * (1 - (after - 9.2274688) / d2h_ms), 1e-9);
  EXPECT_NEAR(seen(9.5), 9.50235, 1e-5);
  EXPECT_EQ(seen(10.0), 0.0);  // the step leaves room for more than the cost: nothing to raise
  EXPECT_GT(seen(9.4), 10.0);  // below the adds alone: a rate beside D2Hs costs nothing
  c.host_add_during_d2h_gbps = 1;
  EXPECT_NEAR(bound_ceilings(c, 0, 0, seen(9.5)).host_add_during_d2h_gbps, 9.50235, 1e-5);
  EXPECT_NEAR(host_after_head_ms(w, bound_ceilings(c, 0, 0, seen(9.5))), after, 1e-9);
  EXPECT_DOUBLE_EQ(bound_ceilings(c, 0, 0, seen(10.0)).host_add_during_d2h_gbps, 1.0);
  EXPECT_DOUBLE_EQ(bound_ceilings(Ceilings{}, 0, 0, 9.0).host_add_during_d2h_gbps, 0.0);
  // The counters: a run whose ceiling read 1 GB/s beside D2Hs is bounded at its own step.
  StepMetrics m;
  m.cpu_add_bytes = w.host;
  m.d2h_bytes = w.d2h;
  m.phase_ms[static_cast<int>(Phase::cpu_add)] = 9.3;
  m.step_ms = 9.5;
  CaseTotals t(1);
  t.add(m, {m});
  benchmark::UserCounters out;
  EXPECT_EQ(write_bound_counters(out, t, p, c, 1), "critical path");
  EXPECT_NEAR(out.at("bound_ms").value, 9.5, 1e-9);
  EXPECT_NEAR(out.at("bound_host_add_during_d2h_gbps").value, 9.50235, 1e-5);
}

// The first CPU add (micro-batch 1, unit 1) also waits for the backward that made its gradient:
// micro-batch 0's two units and its own, 3 Mi generator elements, 3.15 ms at 1e9 elements/s,
// after which come the 92.27 MB of host work at 10 GB/s; its D2H head alone is 0.25 ms.
TEST(Bound, TheFirstCpuAddWaitsForTheBackwardThatMadeItsGradient) {
  const BoundWork w = bound_work(plan_for("uniform:2x1M", "SSSS", spec("cpu-add")), 1);
  EXPECT_EQ(w.head_elements, 3u * 1'048'576);
  EXPECT_DOUBLE_EQ(w.head_flops, 0.0);  // synthetic: no GEMM
  Ceilings c;
  c.d2h_gbps = 50;
  c.host_add_gbps = 10;
  c.generate_gelems = 1;
  const Bound b = case_bound(w, c, 1, DType::fp32);
  EXPECT_NEAR(term(b, "critical path"), 3.145728 + 9.2274688, 1e-9);
  EXPECT_EQ(b.by, "critical path");
  // With the GEMM backward the head counts the GEMMs of those three units too.
  CasePlan g = plan_for("uniform:2x1M", "SSSS", spec("cpu-add"));
  g.backward = Backward::gemm;
  g.tokens = 1024;
  const BoundWork wg = bound_work(g, 1);
  EXPECT_DOUBLE_EQ(wg.head_flops, 3.0 * 4 * 1024 * 1'048'576);
  EXPECT_DOUBLE_EQ(wg.flops, 8.0 * 4 * 1024 * 1'048'576);
}

// The synthetic backward at the generator's own measured rate (1e9 elements/s here): 2 units *
// 4 micro-batches * 1 Mi elements = 8.39 ms, in series on the compute stream.
// A host add ceiling read lower than the case's own CPU adds ran is raised to their rate, and a
// faster ceiling is kept; without a measured ceiling nothing is made up.
TEST(Bound, TheHostAddCeilingIsNeverBelowWhatTheCaseReached) {
  Ceilings c;
  c.host_add_gbps = 72.8;
  c.d2h_gbps = 55.3;
  EXPECT_DOUBLE_EQ(bound_ceilings(c, 120.0).host_add_gbps, 120.0);
  EXPECT_DOUBLE_EQ(bound_ceilings(c, 60.0).host_add_gbps, 72.8);
  EXPECT_DOUBLE_EQ(bound_ceilings(c, 120.0).d2h_gbps, 55.3);  // the other ceilings as they are
  EXPECT_DOUBLE_EQ(bound_ceilings(Ceilings{}, 120.0).host_add_gbps, 0.0);
  // The rate seen: the fastest rank's bytes over its cpu_add busy time (2 GB in 20 ms = 100 GB/s).
  CaseTotals t(2);
  StepMetrics r0, r1;
  r0.cpu_add_bytes = r1.cpu_add_bytes = 2'000'000'000;
  r0.phase_ms[static_cast<int>(Phase::cpu_add)] = 20;
  r1.phase_ms[static_cast<int>(Phase::cpu_add)] = 40;
  t.add(r1, {r0, r1});
  EXPECT_NEAR(host_add_seen_gbps(t), 100.0, 1e-9);
  EXPECT_EQ(host_add_seen_gbps(CaseTotals(1)), 0.0);  // no CPU add: nothing seen
  // The host division's pass counts too: 1.1 GB in its finalize phase's 10 ms = 110 GB/s.
  StepMetrics d;
  d.cpu_add_bytes = 2'000'000'000;
  d.phase_ms[static_cast<int>(Phase::cpu_add)] = 40;
  d.division_host_bytes = 1'100'000'000;
  d.phase_ms[static_cast<int>(Phase::finalize)] = 10;
  CaseTotals td(1);
  td.add(d, {d});
  EXPECT_NEAR(host_add_seen_gbps(td), 110.0, 1e-9);
  // And what went through host memory per ms of the step: (2 + 0.5 + 0.25) GB in 50 ms.
  d.h2d_bytes = 250'000'000;
  d.d2h_bytes = 500'000'000;
  d.step_ms = 50;
  CaseTotals tm(1);
  tm.add(d, {d});
  EXPECT_NEAR(host_memory_seen_gbps(tm), 55.0, 1e-9);
  // After a head of 10 ms whose 0.25 GB of D2H landed before any add: 2.5 GB in 40 ms.
  EXPECT_NEAR(host_memory_seen_gbps(tm, 250'000'000, 10.0), 62.5, 1e-9);
  // A head that moved most of the bytes: the whole step's rate is the higher, and is kept.
  EXPECT_NEAR(host_memory_seen_gbps(tm, 2'000'000'000, 10.0), 55.0, 1e-9);
}

// A host memory ceiling read far too low (1 GB/s) is raised to what the case reached, so that
// neither the host memory term nor the critical path (the head, then every later host byte) comes
// out above the step the case ran: its own bytes in a 10 ms step, of which the head is 3.15 ms
// (the generator at 1e9 elements/s). At the whole step's rate, 12.58 GB/s, the critical path would
// be 3.15 + 113.25 MB / 12.58 GB/s = 12.15 ms.
TEST(Bound, AHostMemoryCeilingReadLowNeverPutsTheBoundAboveTheStep) {
  const CasePlan p = plan_for("uniform:2x1M", "SSSS", spec("cpu-add"));
  const BoundWork w = bound_work(p, 1);
  StepMetrics m;
  m.cpu_add_bytes = w.host;
  m.d2h_bytes = w.d2h;
  m.h2d_bytes = w.h2d;
  m.phase_ms[static_cast<int>(Phase::cpu_add)] = 5.0;
  m.step_ms = 10.0;
  CaseTotals t(1);
  t.add(m, {m});
  Ceilings c;
  c.d2h_gbps = 50;
  c.host_add_gbps = 10;
  c.host_memory_gbps = 1;
  c.generate_gelems = 1;
  ASSERT_NEAR(host_head_ms(w, c, DType::fp32), 3.145728, 1e-9);
  benchmark::UserCounters out;
  EXPECT_EQ(write_bound_counters(out, t, p, c, 1), "critical path");
  // The later bytes over the step after the head: the critical path is then exactly the step.
  const double after = static_cast<double>(w.host + w.h2d + w.d2h - w.head_d2h);
  EXPECT_NEAR(after, 113'246'208.0, 0.5);
  EXPECT_NEAR(out.at("bound_host_memory_gbps").value, after / (10.0 - 3.145728) * 1e3 / 1e9, 1e-9);
  EXPECT_NEAR(out.at("bound_ms").value, 10.0, 1e-9);
}

TEST(Bound, SyntheticBackwardIsTheGeneratorAtItsRate) {
  CasePlan p = plan_for("uniform:2x1M", "nnnS", spec("none"));
  const BoundWork w = bound_work(p, 1);
  EXPECT_EQ(w.backward_elements, 8'388'608u);
  Ceilings c;
  c.generate_gelems = 1;
  Bound b = case_bound(w, c, 1, DType::fp32);
  EXPECT_EQ(b.by, "compute");
  EXPECT_NEAR(*b.ms, 8.388608, 1e-9);
  c.device_copy_gbps = 2000;  // unit 0's RS copy (8 MiB) and division (8 MiB) follow it
  b = case_bound(w, c, 1, DType::fp32);
  EXPECT_EQ(b.by, "critical path");
  EXPECT_NEAR(*b.ms, 8.388608 + 0.008388608, 1e-9);
  // The generator's rate is measured with dyadic values: random ones are not bounded by it.
  p.gen = GenMode::random;
  EXPECT_EQ(bound_work(p, 1).backward_elements, 0u);
  // With --backward gemm the generator follows each GEMM on the same stream: the two add up.
  CasePlan g = plan_for("uniform:2x1M", "nnnS", spec("none"));
  g.backward = Backward::gemm;
  g.tokens = 1024;
  Ceilings gc;
  gc.generate_gelems = 1;
  gc.gemm_tflops_fp32 = 400;
  const BoundWork gw = bound_work(g, 1);
  EXPECT_NEAR(term(case_bound(gw, gc, 1, DType::fp32), "compute"),
              gw.flops / 400e12 * 1e3 + 8.388608, 1e-9);
}

// The synthetic generator fills the SMs: the kernels beside it go only as much faster than in
// series as the measured sm_overlap. uniform:2x1M, SSSS, none, the mean in the collective, world
// 1: the generator writes 8 x 4 MiB; beside it 8 reduce-scatter copies (in + out, 8 MiB each) and
// 6 adds (src + 2 dst, 12 MiB each): 136 MiB. At 1e9 elements/s and 20 GB/s: 8.388608 ms +
// 7.1303168 ms, over an overlap of 1.25: 12.41538 ms, above the compute term's 8.39 and the
// device memory term's (136 + 32 MiB) / 20 GB/s = 8.81 ms.
TEST(Bound, SyntheticGeneratorSharesTheSmsAsMeasured) {
  StrategySpec none = spec("none");
  none.division = "collective";
  const BoundWork w = bound_work(plan_for("uniform:2x1M", "SSSS", none), 1);
  EXPECT_EQ(w.generator_device, 33'554'432u);
  EXPECT_EQ(w.device - w.generator_device, 142'606'336u);
  Ceilings c;
  c.generate_gelems = 1;
  c.device_copy_gbps = 20;
  c.sm_overlap = 1.25;
  const Bound b = case_bound(w, c, 1, DType::fp32);
  EXPECT_NEAR(term(b, "compute + device memory"), (8.388608 + 7.1303168) / 1.25, 1e-9);
  EXPECT_NEAR(term(b, "device memory"), 176'160'768 / 20e9 * 1e3, 1e-9);
  EXPECT_EQ(b.by, "compute + device memory");
  // An overlap read below 1 (noise) counts as 1: kernels in series are the slowest they can run.
  c.sm_overlap = 0.9;
  EXPECT_NEAR(term(case_bound(w, c, 1, DType::fp32), "compute + device memory"),
              8.388608 + 7.1303168, 1e-9);
  // Not measured: no term.
  c.sm_overlap = 0;
  EXPECT_FALSE(has_term(case_bound(w, c, 1, DType::fp32), "compute + device memory"));
  // A GEMM backward: the kernels can run beside the GEMMs, whose sharing is not measured.
  CasePlan g = plan_for("uniform:2x1M", "SSSS", none);
  g.backward = Backward::gemm;
  g.tokens = 1024;
  c.sm_overlap = 1.25;
  c.gemm_tflops_fp32 = 400;
  EXPECT_FALSE(
      has_term(case_bound(bound_work(g, 1), c, 1, DType::fp32), "compute + device memory"));
}

// The pipelined values move and add what gpu-add and cpu-add do; only the tail shrinks: unit 0's
// whole D2H still follows its last reduce-scatter, but one chunk's add (1 MiB chunks here).
TEST(Bound, PipelinedOffloadsKeepTheWorkAndShrinkTheTailToOneChunk) {
  for (const char* name : {"gpu-add", "cpu-add"}) {
    const CasePlan plain = plan_for("uniform:2x1M", "SSSS", spec(name));
    CasePlan piped =
        plan_for("uniform:2x1M", "SSSS", spec((std::string(name) + "-pipelined").c_str()));
    piped.chunk_bytes = 1 << 20;  // a 4 MiB shard in 4 chunks
    const BoundWork a = bound_work(plain, 1), b = bound_work(piped, 1);
    SCOPED_TRACE(name);
    EXPECT_EQ(b.h2d, a.h2d);
    EXPECT_EQ(b.d2h, a.d2h);
    EXPECT_EQ(b.host, a.host);
    EXPECT_EQ(b.device, a.device);
    EXPECT_EQ(b.tail_d2h, 4'194'304u);  // the whole shard
    EXPECT_EQ(b.tail_d2h, a.tail_d2h);
  }
  CasePlan g = plan_for("uniform:2x1M", "SSSS", spec("gpu-add-pipelined"));
  g.chunk_bytes = 1 << 20;
  EXPECT_EQ(bound_work(g, 1).tail_device, 3u << 20);  // src + 2 * dst of one 1 MiB chunk
  CasePlan c = plan_for("uniform:2x1M", "SSSS", spec("cpu-add-pipelined"));
  c.chunk_bytes = 3 << 20;  // chunks 3 MiB and 1 MiB: the last one trails the D2H
  EXPECT_EQ(bound_work(c, 1).tail_host, (3u << 20) + (8u << 20));  // its add + the division
  // The case at the default 128 MiB chunk: gpu-add's bytes, both directions at once.
  const BoundWork w = bound_work(plan_for("uniform:16x64M", "SSSS", spec("gpu-add-pipelined")), 1);
  EXPECT_EQ(w.h2d, 12'884'901'888ull);
  EXPECT_EQ(w.d2h, 17'179'869'184ull);
  EXPECT_EQ(w.tail_device, 3ull * 134'217'728);
}

// gemm backward, T=1024: 4 * 1024 * 64 Mi FLOPs per unit and micro-batch.
TEST(Bound, GemmBackwardIsBoundByComputeAndItsTail) {
  CasePlan p = plan_for("uniform:2x64M", "nnnS", spec("none"));
  p.backward = Backward::gemm;
  p.tokens = 1024;
  const BoundWork w = bound_work(p, 1);
  EXPECT_DOUBLE_EQ(w.flops, 2'199'023'255'552.0);
  // Generator: 2 units * 256 MiB * (1 + 2 + 2 + 2: it reads what it accumulates into).
  EXPECT_EQ(w.backward_device, 3'758'096'384u);
  EXPECT_EQ(w.device, 3'758'096'384ull + 1'073'741'824 + 1'073'741'824);  // + RS copy + division
  Ceilings c;
  c.gemm_tflops_fp32 = 400;
  Bound b = case_bound(w, c, 1, DType::fp32);
  EXPECT_EQ(b.by, "compute");  // alone, the critical path is the backward: no tail at ceiling 0
  EXPECT_NEAR(*b.ms, 5.49755813888, 1e-6);
  EXPECT_TRUE(case_bound(w, c, 1, DType::bf16).terms.empty());  // no bf16 ceiling
  c.device_copy_gbps = 4000;
  b = case_bound(w, c, 1, DType::fp32);
  // Unit 0's reduce-scatter copy and division (1 GiB together) follow the last GEMM.
  EXPECT_EQ(b.by, "critical path");
  EXPECT_NEAR(*b.ms, 5.49755813888 + 0.268435456, 1e-6);
  EXPECT_NEAR(term(b, "device memory"), 1.476395008, 1e-9);
}

// The layout's own GEMM backward alone sets the compute ceiling of its gemm cases: uniform:2x64M at
// T=1024 has 2 * 4 * 1024 * 64 Mi = 549.76 GFLOP per micro-batch; measured alone in 2.0 ms that
// is 274.88 TFLOP/s, below the dense 400, so compute is 4 * 2.0 ms, where the dense ceiling gave
// 5.50. Another layout, token count, dtype or the synthetic backward keeps the dense ceiling.
TEST(Bound, GemmCasesAreBoundAtTheirOwnShapesRate) {
  CasePlan p = plan_for("uniform:2x64M", "nnnS", spec("none"));
  p.backward = Backward::gemm;
  p.tokens = 1024;
  Ceilings c;
  c.gemm_tflops_fp32 = 400;
  const double flops = 2.0 * 4 * 1024 * 67'108'864;
  c.gemm_backward = {{"uniform:2x64M", 1024, DType::fp32, 2.0, flops},
                     {"uniform:2x64M", 2048, DType::fp32, 1.0, 2 * flops},
                     {"uniform:2x64M", 1024, DType::bf16, 1.0, flops},
                     {"gpt2-xl", 1024, DType::fp32, 1.0, flops}};
  const Ceilings at = at_own_shapes(c, p);
  EXPECT_NEAR(at.gemm_tflops_fp32, 274.877906944, 1e-6);
  EXPECT_DOUBLE_EQ(at.gemm_tflops_bf16, 0.0);
  EXPECT_DOUBLE_EQ(at.h2d_gbps, c.h2d_gbps);
  const Bound b = case_bound(bound_work(p, 1), at, 1, DType::fp32);
  EXPECT_EQ(b.by, "compute");
  EXPECT_NEAR(*b.ms, 8.0, 1e-9);  // 4 micro-batches at 2.0 ms each
  // Not its entry: the dense ceiling stays.
  p.tokens = 512;
  EXPECT_DOUBLE_EQ(at_own_shapes(c, p).gemm_tflops_fp32, 400.0);
  p.tokens = 1024;
  p.backward = Backward::synthetic;
  EXPECT_DOUBLE_EQ(at_own_shapes(c, p).gemm_tflops_fp32, 400.0);
  // The counters name the rate the bound used, where it is the layout's own.
  p.backward = Backward::gemm;
  const CaseTotals t = one_step(9.0);
  benchmark::UserCounters uc;
  EXPECT_EQ(write_bound_counters(uc, t, p, c, 1), "compute");
  ASSERT_TRUE(uc.count("bound_gemm_tflops"));
  EXPECT_NEAR(uc.at("bound_gemm_tflops").value, 274.877906944, 1e-6);
  EXPECT_NEAR(uc.at("bound_ratio").value, 9.0 / 8.0, 1e-9);
  c.gemm_backward.clear();
  benchmark::UserCounters dense;
  write_bound_counters(dense, t, p, c, 1);
  EXPECT_EQ(dense.count("bound_gemm_tflops"), 0u);
}

// The layout's own generator alone sets the generator rate of its synthetic dyadic cases:
// uniform:2x64M writes 2 * 64 Mi = 134,217,728 elements a micro-batch; alone in 1.0 ms that is
// 134.217728 Gelem/s, below the one-buffer 150, so compute is 4 * 1.0 ms where the one-buffer rate
// gave 3.579. Another layout or dtype, random values, or a gemm case keep the one-buffer rate.
TEST(Bound, SyntheticCasesAreBoundAtTheirOwnLayoutsGeneratorRate) {
  CasePlan p = plan_for("uniform:2x64M", "nnnS", spec("none"));
  Ceilings c;
  c.generate_gelems = 150;
  c.generate_layouts = {{"uniform:2x64M", DType::fp32, 1.0, 134'217'728},
                        {"uniform:2x64M", DType::bf16, 0.5, 134'217'728},
                        {"gpt2-xl", DType::fp32, 9.0, 134'217'728}};
  EXPECT_NEAR(case_bound(bound_work(p, 1), c, 1, DType::fp32).ms.value(), 536'870'912 / 150e6,
              1e-9);
  const Ceilings at = at_own_shapes(c, p);
  EXPECT_NEAR(at.generate_gelems, 134.217728, 1e-9);
  const Bound b = case_bound(bound_work(p, 1), at, 1, DType::fp32);
  EXPECT_EQ(b.by, "compute");
  EXPECT_NEAR(*b.ms, 4.0, 1e-9);  // 4 micro-batches at 1.0 ms each
  // Not its entry, or nothing measured at one buffer (no ceilings): the rate stays.
  p.gen = GenMode::random;
  EXPECT_DOUBLE_EQ(at_own_shapes(c, p).generate_gelems, 150.0);
  p.gen = GenMode::dyadic;
  p.backward = Backward::gemm;
  EXPECT_DOUBLE_EQ(at_own_shapes(c, p).generate_gelems, 150.0);
  p.backward = Backward::synthetic;
  Ceilings none;
  none.generate_layouts = c.generate_layouts;
  EXPECT_DOUBLE_EQ(at_own_shapes(none, p).generate_gelems, 0.0);
  // The counters name the rate the bound used, where it is the layout's own.
  const CaseTotals t = one_step(4.4);
  benchmark::UserCounters uc;
  EXPECT_EQ(write_bound_counters(uc, t, p, c, 1), "compute");
  ASSERT_TRUE(uc.count("bound_generate_gelems"));
  EXPECT_NEAR(uc.at("bound_generate_gelems").value, 134.217728, 1e-9);
  EXPECT_NEAR(uc.at("bound_ratio").value, 1.1, 1e-9);
  c.generate_layouts.clear();
  benchmark::UserCounters dense;
  write_bound_counters(dense, t, p, c, 1);
  EXPECT_EQ(dense.count("bound_generate_gelems"), 0u);
}

// World 2, no offload: the reduce-scatter's input, half of it over the link (nccl-tests' busbw).
TEST(Bound, WorldTwoIsBoundByTheLink) {
  const BoundWork w = bound_work(plan_for("uniform:2x1M", "SSSS", spec("none")), 2);
  EXPECT_EQ(w.link, 33'554'432u);  // 4 S * 2 units * 4 MiB
  // Generator 32 MiB, 6 device adds of out (2 MiB) + 2 * saved (2 MiB), division 2 * 2 * 2 MiB.
  EXPECT_EQ(w.device, 33'554'432ull + 37'748'736 + 8'388'608);
  EXPECT_EQ(w.h2d + w.d2h + w.host, 0u);
  Ceilings c;
  c.reduce_scatter_busbw_gbps = 100;
  c.device_copy_gbps = 2000;
  const Bound b = case_bound(w, c, 2, DType::fp32);
  EXPECT_EQ(b.by, "link");
  EXPECT_NEAR(*b.ms, 0.16777216, 1e-9);
  EXPECT_NEAR(term(b, "critical path"), 0.016777216 + 0.02097152 + 0.00524288, 1e-9);
  EXPECT_FALSE(has_term(case_bound(w, c, 1, DType::fp32), "link"));  // world 1: no link term
}

TEST(Bound, NoCeilingsLeavesTheBoundAbsent) {
  const BoundWork w = bound_work(plan_for("uniform:2x1M", "SSSS", spec("cpu-add")), 1);
  const Bound b = case_bound(w, Ceilings{}, 1, DType::fp32);
  EXPECT_TRUE(b.terms.empty());
  EXPECT_FALSE(b.ms.has_value());
  EXPECT_EQ(b.by, "no ceilings");
}

TEST(Bound, CountersWriteTheRatioAndNothingWithoutCeilings) {
  const CasePlan p = plan_for("uniform:2x1M", "SSSS", spec("cpu-add"));
  const CaseTotals t = one_step(18.4549376);  // twice the host-memory bound below
  benchmark::UserCounters c;
  Ceilings ceil;
  ceil.host_add_gbps = 10;
  EXPECT_EQ(write_bound_counters(c, t, p, ceil, 1), "host memory");
  ASSERT_TRUE(c.count("bound_ms"));
  EXPECT_NEAR(c.at("bound_ms").value, 9.2274688, 1e-9);
  EXPECT_NEAR(c.at("bound_ratio").value, 2.0, 1e-9);
  benchmark::UserCounters none;
  EXPECT_EQ(write_bound_counters(none, t, p, Ceilings{}, 1), "no ceilings");
  EXPECT_EQ(none.count("bound_ms") + none.count("bound_ratio"), 0u);
}

}  // namespace
}  // namespace shardaccum
