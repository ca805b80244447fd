// --param-traffic on (docs/DESIGN.md §2, ParamTraffic) on the host backend: the parameters' H2D,
// 2 * K * Σ_u (P_u/N) * b_param, measured and modelled alike at worlds 1, 2 and 4, apart from the
// gradient path's bytes (unchanged from off), with the peaks of the model and the verdict of off;
// each unit's forward copy at the micro-batch's start and its backward copy right before its
// backward, which waits for it; the bound's copy engines count it; FSDP2's world-1 peaks as its
// memory histories give them; without offload the unsharded parameters held and nothing copied;
// the case name's segment, NO_SHARD without offload left as off, and the flag's refusals.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/cli.hpp"
#include "cli_options_support.hpp"
#include "faulty_backend.hpp"
#include "strategies/bound.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

using testing::cases_of;

using testing::design_says_correct;
using testing::expect_bytes_and_peaks_of_the_model;
using testing::make_layout;
using testing::run_two_steps;

CasePlan plan_of(const Layout& l, const char* sched, const char* offload, const char* mode,
                 const char* dtype, bool on) {
  CasePlan p{l,
             parse_schedule(sched, static_cast<int>(std::string(sched).size())),
             {"data-free", offload, mode},
             parse_dtype_triple(dtype),
             GenMode::dyadic,
             11,
             "t"};
  p.param_traffic = on;
  return p;
}

/// 2 * K * Σ_u (P_u/N) * b_param: a forward and a backward copy of every unit's padded shard in
/// each micro-batch, in the gradient dtype.
uint64_t expected_param_bytes(const CasePlan& p, int world) {
  uint64_t shards = 0;
  for (const FlatParam& u : p.layout.units) shards += shard_numel(u.numel, world);
  return 2 * static_cast<uint64_t>(p.schedule.k()) * shards * dtype_bytes(p.dtypes.grad);
}

TEST(ParamTraffic, BytesPeaksAndVerdictAtWorlds124) {
  for (const int world : {1, 2, 4}) {
    auto be = make_host_backend({world, 1});
    const Layout layout = make_layout({1, 1009, 3, 96});  // odd sizes: padded shards
    for (const char* offload : {"copy", "gpu-add", "cpu-add", "cpu-add-pageable"})
      for (const char* sched : {"nnnS", "nSnS", "SSSS"})
        for (const char* mode : {"flag", "shape"})
          for (const char* dtype : {"fp32-fp32-fp32", "bf16-bf16-fp32"}) {
            const CasePlan off = plan_of(layout, sched, offload, mode, dtype, false);
            const CasePlan on = plan_of(layout, sched, offload, mode, dtype, true);
            SCOPED_TRACE(on.strategy.name() + " " + sched + " world " + std::to_string(world) +
                         " " + dtype);
            const auto a = run_two_steps(*be, off);
            const auto b = run_two_steps(*be, on);
            EXPECT_EQ(a.measured.param_h2d_bytes, 0u);
            EXPECT_EQ(a.model.param_h2d_bytes, 0u);
            EXPECT_EQ(b.measured.param_h2d_bytes, expected_param_bytes(on, world));
            EXPECT_EQ(b.model.param_h2d_bytes, expected_param_bytes(on, world));
            // The gradient path's copies are those of off; the peaks are the model's.
            EXPECT_EQ(b.measured.h2d_bytes, a.measured.h2d_bytes);
            EXPECT_EQ(b.measured.d2h_bytes, a.measured.d2h_bytes);
            expect_bytes_and_peaks_of_the_model(b);
            // The pinned host shards stay for the case: Σ (P_u/N) * b_param above off's peak,
            // each rounded to a power of two under FSDP2's offload (one parameter per unit here).
            uint64_t host_params = 0;
            for (const FlatParam& u : layout.units) {
              const uint64_t bytes = shard_numel(u.numel, world) * dtype_bytes(on.dtypes.grad);
              host_params +=
                  std::string(offload) == "cpu-add-pageable" ? cached_host_bytes(bytes) : bytes;
            }
            EXPECT_EQ(b.measured.peak_pinned_bytes, a.measured.peak_pinned_bytes + host_params);
            EXPECT_GE(b.measured.peak_device_bytes, a.measured.peak_device_bytes);
            EXPECT_EQ(b.correct, a.correct);
            EXPECT_EQ(b.correct, design_says_correct(on.strategy, on.schedule));
            EXPECT_EQ(b.max_rel_err, a.max_rel_err);
          }
  }
}

// The copy engines' term of the bound sees the parameters' H2D beside the gradient's.
TEST(ParamTraffic, BoundCountsTheParameterCopies) {
  const CasePlan on =
      plan_of(make_layout({64, 32}), "nS", "gpu-add", "flag", "fp32-fp32-fp32", true);
  const Prediction p = predict(on, 2);
  EXPECT_GT(p.param_h2d_bytes, 0u);
  EXPECT_EQ(bound_work(on, 2).h2d, p.h2d_bytes + p.param_h2d_bytes);
  CasePlan off = on;
  off.param_traffic = false;
  EXPECT_EQ(bound_work(off, 2).h2d, predict(off, 2).h2d_bytes);
}

/// Records, in issue order, "p<numel>" for a parameter copy, "w" for the compute stream waiting
/// on the event recorded on the h2d stream after it, "W" for the h2d stream waiting on one
/// recorded on the compute stream, "g<numel>" for a backward and "r<numel>" for a reduce-scatter
/// (of its input).
class RecordingRank final : public testing::ForwardingRank {
 public:
  RecordingRank(RankBackend& inner, std::string& ops) : ForwardingRank(inner), ops_(ops) {}
  // " p": a shard's H2D (on the h2d stream, from pinned memory); " o": FSDP2's all-gather
  // copy-out (on the compute stream, device to device).
  void copy_param(Buffer& d, const Buffer& s, Stream st) override {
    EXPECT_EQ(d.space(), MemSpace::device);
    const bool out = s.space() == MemSpace::device;
    EXPECT_EQ(st, out ? Stream::compute : Stream::h2d);
    if (!out) {
      EXPECT_EQ(s.space(), MemSpace::pinned_host);
    }
    ops_ += (out ? " o" : " p") + std::to_string(s.numel());
    in_.copy_param(d, s, st);
  }
  Event record(Stream s) override {
    const Event e = in_.record(s);
    if (s == Stream::h2d) h2d_ = e.id;
    if (s == Stream::compute) compute_ = e.id;
    return e;
  }
  void wait(Stream w, Event e) override {
    if (w == Stream::compute && e.id == h2d_) ops_ += " w";
    if (w == Stream::h2d && e.id == compute_) ops_ += " W";
    in_.wait(w, e);
  }
  void generate(Buffer& g, const GradKey& k, bool acc, Stream s) override {
    ops_ += " g" + std::to_string(g.numel());
    in_.generate(g, k, acc, s);
  }
  void reduce_scatter(Buffer& o, const Buffer& i, ReduceOp op) override {
    ops_ += " r" + std::to_string(i.numel());
    in_.reduce_scatter(o, i, op);
  }
  void begin_step() override {
    ops_.clear();  // the last step's calls only
    in_.begin_step();
  }

 private:
  std::string& ops_;
  uint64_t h2d_ = 0;
  uint64_t compute_ = 0;
};

TEST(ParamTraffic, EachUnitsCopyPrecedesItsForwardAndItsBackwardWhichWaitsForIt) {
  std::string ops;
  testing::WrappedBackend be(
      1, [&](RankBackend& r) { return std::make_unique<RecordingRank>(r, ops); });
  const CasePlan plan =
      plan_of(make_layout({40, 24}), "nS", "cpu-add", "flag", "fp32-fp32-fp32", true);
  EXPECT_TRUE(run_two_steps(be, plan).correct);
  // Per micro-batch: the h2d stream waits for the compute stream (FSDP's root pre-forward: the
  // forward's copies do not run beside the backward before them), then the forward's copies first
  // to last, each waited for; then the backward last unit first, each unit's copy waited for right
  // before its generator. The first unit's copy (40) is prefetched once the last unit's backward
  // is issued: before that unit's reduce-scatter in the S micro-batch, and waited for only by its
  // own backward.
  EXPECT_EQ(ops, " W p40 w p24 w p24 w g24 p40 w g40"            // n
                 " W p40 w p24 w p24 w g24 p40 r24 w g40 r40");  // S
}

// Without offload nothing is copied and nothing waits for a copy: the backward's generators and
// reduce-scatters only (the unsharded parameters are allocated on the compute stream).
TEST(ParamTraffic, WithoutOffloadNoCopyAndNoWait) {
  std::string ops;
  testing::WrappedBackend be(
      1, [&](RankBackend& r) { return std::make_unique<RecordingRank>(r, ops); });
  const CasePlan plan =
      plan_of(make_layout({40, 24}), "nS", "none", "flag", "fp32-fp32-fp32", true);
  EXPECT_TRUE(run_two_steps(be, plan).correct);
  EXPECT_EQ(ops, " g24 g40 g24 r24 g40 r40");
}

// FSDP2's collectives (copy-in chunk-cat) add the all-gather's copy-out: each unshard's unsharded
// parameter copied out of the all-gather output on the compute stream, once the compute stream has
// waited for the shard's H2D (with offload), before the unit's forward or backward reads it; the
// backward's copy-out of a prefetched unit comes at its own backward, not at the prefetch. Without
// offload nothing is copied in, and only the copy-outs run.
TEST(ParamTraffic, Fsdp2CopiesEachUnshardOutOfTheAllGatherOnTheComputeStream) {
  for (const char* offload : {"cpu-add-pageable", "none"}) {
    SCOPED_TRACE(offload);
    std::string ops;
    testing::WrappedBackend be(
        1, [&](RankBackend& r) { return std::make_unique<RecordingRank>(r, ops); });
    CasePlan plan = plan_of(make_layout({40, 24}), "nS", offload, "flag", "fp32-fp32-fp32", true);
    plan.strategy.copy_in = "chunk-cat";
    plan.strategy.division = "collective";
    const auto o = run_two_steps(be, plan);
    EXPECT_TRUE(o.correct);
    expect_bytes_and_peaks_of_the_model(o);
    // 2 * K * Σ P_u * 4 bytes: a copy-out of every unit before its forward and its backward.
    EXPECT_EQ(o.measured.param_d2d_bytes, 2u * 2 * (40 + 24) * 4);
    if (std::string(offload) == "none")
      EXPECT_EQ(ops, " o40 o24 o24 g24 o40 g40"            // n
                     " o40 o24 o24 g24 r24 o40 g40 r40");  // S
    else
      EXPECT_EQ(ops, " W p40 w o40 p24 w o24 p24 w o24 g24 p40 w o40 g40"            // n
                     " W p40 w o40 p24 w o24 p24 w o24 g24 p40 r24 w o40 g40 r40");  // S
  }
  // FSDP1's collectives (copy-in none) have no copy-out.
  std::string ops;
  testing::WrappedBackend be(
      1, [&](RankBackend& r) { return std::make_unique<RecordingRank>(r, ops); });
  const auto o = run_two_steps(
      be, plan_of(make_layout({40, 24}), "nS", "none", "flag", "fp32-fp32-fp32", true));
  EXPECT_EQ(o.measured.param_d2d_bytes, 0u);
  EXPECT_EQ(o.model.param_d2d_bytes, 0u);
}

// FSDP2 at world size 1, in units of one unit's gradient G = P_u * 4 bytes (16 equal units, fp32,
// autograd's accumulation): the peaks that real FSDP2's memory histories give on uniform:16x64M
// (reports/h200-diagnosis-1204, call 3, net of the runner's activations and GEMM scratch). Without
// offload, nnnS: 15 accumulated gradients and the fresh one of the unit in backward, the reduce-
// scatter's input and output one group behind, and the unit's unsharded parameter = 19 G; with
// offload, nnnS: the 16 accumulated gradients, the fresh one and the unsharded parameter = 18 G,
// and SSSS 3 G. Without offload, nSnS: the 16 saved shards of the first S beside the 15
// accumulated gradients, the fresh one, the reduce-scatter's input and the unsharded parameter =
// 34 G (the output is added into its saved shard and freed): the real delta of +15 G over nnnS.
// The prefetched parameter is not beside the unit's at any of them.
TEST(ParamTraffic, Fsdp2PeaksAtWorld1AreThoseOfItsMemoryHistories) {
  auto be = make_host_backend({1, 1});
  const std::vector<std::string> common = {"--model",
                                           "uniform:16x1024",
                                           "--world-size",
                                           "1",
                                           "--schedule",
                                           "nnnS,nSnS,SSSS",
                                           "--k",
                                           "4",
                                           "--grad-accumulation",
                                           "autograd",
                                           "--param-traffic",
                                           "on"};
  const auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), common.begin(), common.end());
    return cases_of(std::move(more));
  };
  const uint64_t g = 1024 * 4;
  std::vector<std::pair<CaseSpec, uint64_t>> expected;
  for (const CaseSpec& c : with({"--preset", "fsdp2"}))
    expected.emplace_back(c, c.schedule.modes == "SSSS" ? 3 * g : 18 * g);
  for (const CaseSpec& c :
       with({"--binding", "data-free", "--offload", "none", "--mode", "flag", "--division",
             "collective", "--copy-in", "chunk-cat", "--lookahead", "1"}))
    expected.emplace_back(c, c.schedule.modes == "nSnS" ? 34 * g : 19 * g);
  ASSERT_EQ(expected.size(), 6u);
  for (const auto& [c, peak] : expected) {
    SCOPED_TRACE(c.name());
    ASSERT_TRUE(c.plan().param_traffic);
    const auto o = run_two_steps(*be, c.plan());
    EXPECT_EQ(o.measured.peak_device_bytes, peak);
    expect_bytes_and_peaks_of_the_model(o);
    EXPECT_TRUE(o.correct);
  }
}

// Without offload the unsharded parameters are held and nothing is copied: no parameter H2D, no
// pinned host shards, the gradient path's bytes and the verdict of off, the peaks of the model,
// at worlds 1, 2 and 4 with padded shards; at world 2 the peak holds at least the largest unit's
// unsharded parameter more than off's.
TEST(ParamTraffic, WithoutOffloadTheUnshardedParametersAreHeldAndNothingIsCopied) {
  for (const int world : {1, 2, 4}) {
    auto be = make_host_backend({world, 1});
    const Layout layout = make_layout({1, 1009, 3, 96});
    for (const char* sched : {"nnnS", "nSnS", "SSSS"})
      for (const char* dtype : {"fp32-fp32-fp32", "bf16-bf16-fp32"}) {
        const CasePlan off = plan_of(layout, sched, "none", "flag", dtype, false);
        const CasePlan on = plan_of(layout, sched, "none", "flag", dtype, true);
        SCOPED_TRACE(std::string(sched) + " world " + std::to_string(world) + " " + dtype);
        const auto a = run_two_steps(*be, off);
        const auto b = run_two_steps(*be, on);
        EXPECT_EQ(b.measured.param_h2d_bytes, 0u);
        EXPECT_EQ(b.model.param_h2d_bytes, 0u);
        EXPECT_EQ(b.measured.peak_pinned_bytes, a.measured.peak_pinned_bytes);
        EXPECT_EQ(b.measured.h2d_bytes, a.measured.h2d_bytes);
        EXPECT_EQ(b.measured.d2h_bytes, a.measured.d2h_bytes);
        expect_bytes_and_peaks_of_the_model(b);
        EXPECT_GT(b.measured.peak_device_bytes, a.measured.peak_device_bytes);
        EXPECT_LE(b.measured.peak_device_bytes,
                  a.measured.peak_device_bytes +
                      2 * padded_numel(1009, world) * dtype_bytes(on.dtypes.grad));
        EXPECT_EQ(b.correct, a.correct);
        EXPECT_EQ(b.max_rel_err, a.max_rel_err);
      }
  }
}

TEST(ParamTraffic, NameSegmentWhereThereIsAParameterPathAndRefusals) {
  // Off (the default): no name has the segment, no plan copies parameters.
  for (const CaseSpec& c : cases_of({"--offload", "all"})) {
    EXPECT_EQ(c.name().find("param-traffic"), std::string::npos) << c.name();
    EXPECT_FALSE(c.plan().param_traffic);
  }
  // On: every case ends with the segment but NO_SHARD without offload (copy-in no-shard at world
  // size 1), which runs and is named as off.
  const std::vector<CaseSpec> on = cases_of(
      {"--offload", "all", "--copy-in", "all", "--world-size", "1,2", "--param-traffic", "on"});
  ASSERT_FALSE(on.empty());
  int left_as_off = 0, none_with = 0;
  for (const CaseSpec& c : on) {
    const bool offloaded = c.strategy.offload != "none";
    const bool no_shard = c.strategy.copy_in == "no-shard" && c.world_size == 1;
    const bool with = offloaded || !no_shard;
    left_as_off += with ? 0 : 1;
    none_with += with && !offloaded ? 1 : 0;
    EXPECT_EQ(c.plan().param_traffic, with) << c.name();
    const std::string seg = "/param-traffic:on";
    const std::string n = c.name();
    EXPECT_EQ(n.size() > seg.size() && n.compare(n.size() - seg.size(), seg.size(), seg) == 0, with)
        << n;
  }
  EXPECT_GT(left_as_off, 0);
  EXPECT_GT(none_with, 0);
  const auto refusal = [](std::vector<std::string> args) {
    try {
      cases_of(std::move(args));
    } catch (const CliError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string bogus = refusal({"--param-traffic", "bogus"});
  EXPECT_NE(bogus.find("--param-traffic"), std::string::npos) << bogus;
  EXPECT_NE(bogus.find("bogus"), std::string::npos) << bogus;
  // A run of NO_SHARD without offload only would model nothing it asked for.
  const std::string none = refusal(
      {"--offload", "none", "--copy-in", "no-shard", "--world-size", "1", "--param-traffic", "on"});
  EXPECT_NE(none.find("--param-traffic"), std::string::npos) << none;
  EXPECT_NE(none.find("no-shard"), std::string::npos) << none;
  // At world size 2 the same strategy shards and holds its unsharded parameters: accepted.
  EXPECT_EQ(refusal({"--offload", "none", "--copy-in", "no-shard", "--world-size", "2",
                     "--param-traffic", "on"}),
            "");
}

}  // namespace
}  // namespace shardaccum
