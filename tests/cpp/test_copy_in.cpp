// The copy-in axis (docs/DESIGN.md §3; FSDP2's foreach_reduce_scatter_copy_in) and the dtype triple
// bf16-fp32-fp32 it casts for: verdicts, every byte and peak the model's, the input buffer's
// lifetime worked by hand, and the combinations refused before any work.
#include <gtest/gtest.h>

#include "bench/cli.hpp"
#include "bench/run_setup.hpp"
#include "cli_options_support.hpp"
#include "strategies/default_matrix.hpp"
#include "strategies/step_driver.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

using testing::cases_of;

using testing::design_says_correct;
using testing::expect_bytes_and_peaks_of_the_model;
using testing::make_layout;
using testing::Outcome;
using testing::run_two_steps;

struct CopyInParam {
  int world;
  const char* dtype;
  friend std::ostream& operator<<(std::ostream& os, const CopyInParam& p) {
    return os << "world " << p.world << ", " << p.dtype;
  }
};

class CopyInMatrix : public ::testing::TestWithParam<CopyInParam> {};

// chunk-cat with every default strategy, divisions end and collective (FSDP2's), on SSSS, nnnS
// and nSnS: the design's verdict (the copy-in changes what the reduce-scatter reads, not what is
// kept), exact at these power-of-two worlds with dyadic data, every counted byte the model's.
TEST_P(CopyInMatrix, VerdictAndBytesOfTheModel) {
  const auto [world, dtype] = GetParam();
  auto be = make_host_backend({world, 1});
  const Layout layout = make_layout({1, 1009, 3, 64});
  int cases = 0;
  for (const char* division : {"end", "collective"})
    for (StrategySpec s : default_strategies())
      for (const char* modes : {"SSSS", "nnnS", "nSnS"}) {
        s.division = division;
        s.copy_in = "chunk-cat";
        const Schedule sched = parse_schedule(modes, 4);
        const CasePlan plan{layout, sched, s, parse_dtype_triple(dtype), GenMode::dyadic, 7, "t"};
        SCOPED_TRACE(s.name() + " schedule " + modes + " world " + std::to_string(world) + " " +
                     dtype);
        const auto o = run_two_steps(*be, plan);
        EXPECT_EQ(o.correct, design_says_correct(s, sched)) << "max_rel_err " << o.max_rel_err;
        if (design_says_correct(s, sched)) {
          EXPECT_EQ(o.max_rel_err, 0.0);
        } else {
          EXPECT_GT(o.max_rel_err, 0.1);
        }
        expect_bytes_and_peaks_of_the_model(o);
        ++cases;
      }
  EXPECT_EQ(cases, static_cast<int>(2 * default_strategies().size() * 3));
}

INSTANTIATE_TEST_SUITE_P(
    Worlds, CopyInMatrix,
    ::testing::Values(CopyInParam{1, "fp32-fp32-fp32"}, CopyInParam{2, "fp32-fp32-fp32"},
                      CopyInParam{4, "fp32-fp32-fp32"}, CopyInParam{1, "bf16-fp32-fp32"},
                      CopyInParam{2, "bf16-fp32-fp32"}, CopyInParam{4, "bf16-fp32-fp32"},
                      CopyInParam{2, "bf16-bf16-fp32"}),
    [](const auto& info) {
      std::string d = info.param.dtype;
      for (char& c : d)
        if (c == '-') c = '_';
      return "world" + std::to_string(info.param.world) + "_" + d;
    });

Outcome run(const char* copy_in, const char* dtype, const char* modes,
            std::initializer_list<uint64_t> units, int world = 1) {
  auto be = make_host_backend({world, 1});
  StrategySpec s;
  s.copy_in = copy_in;
  const CasePlan plan{make_layout(units),
                      parse_schedule(modes, 4),
                      s,
                      parse_dtype_triple(dtype),
                      GenMode::dyadic,
                      5,
                      "t"};
  auto o = run_two_steps(*be, plan);
  EXPECT_TRUE(o.correct) << copy_in << " " << dtype << " " << modes;
  expect_bytes_and_peaks_of_the_model(o);
  return o;
}

// Two units of 1024 fp32 elements (4096 B each buffer) at world 1, no offload, SSSS, lookahead 1.
// none, at unit 0 of micro-batch 1: saved x2 + unit 1's gradient in flight + unit 0's gradient +
// out = 5 x 4096. chunk-cat: unit 1's input is dropped before unit 0's copy-in (FSDP2 waits for
// the previous reduce-scatter first), unit 0's gradient is freed after it: saved x2 + input +
// (gradient during the copy, or out after it) = 4 x 4096, one input buffer less.
TEST(CopyIn, InputBufferLifetimeWorkedByHand) {
  const Outcome none = run("none", "fp32-fp32-fp32", "SSSS", {1024, 1024});
  const Outcome cat = run("chunk-cat", "fp32-fp32-fp32", "SSSS", {1024, 1024});
  EXPECT_EQ(none.measured.peak_device_bytes, 5u * 4096);
  EXPECT_EQ(cat.measured.peak_device_bytes, 4u * 4096);
  EXPECT_EQ(none.measured.peak_device_bytes - cat.measured.peak_device_bytes, 4096u);
  // The reduce-scatters read as many bytes either way (the input is a same-dtype copy here).
  EXPECT_EQ(cat.measured.nccl_input_bytes, 4u * 2 * 4096);
  // The copy-in is a device convert, read + write, once per sync and unit: 8 x 2 x 4096 more.
  EXPECT_EQ(cat.measured.accumulate_bytes - none.measured.accumulate_bytes, 8u * 2 * 4096);
}

// bf16-fp32-fp32, one unit of 1024 elements at world 1, nnnS: the first n's gradient (2048 B) is
// held as an fp32 copy (4096 B; both alive during the cast), each later micro-batch's fresh bf16
// gradient added into it and freed; at S the copy-in (4096 B) beside the held gradient, which is
// then freed, then out (4096 B) beside the input: peak 8192 B, the reduce-scatter reads 4096 B.
TEST(CopyIn, NoSyncGradientHeldInTheReduceDtypeWorkedByHand) {
  const Outcome o = run("chunk-cat", "bf16-fp32-fp32", "nnnS", {1024});
  EXPECT_EQ(o.measured.peak_device_bytes, 8192u);
  EXPECT_EQ(o.measured.nccl_input_bytes, 4096u);
  EXPECT_EQ(o.measured.reduce_scatter_calls, 1u);
  EXPECT_EQ(o.max_rel_err, 0.0);
  // Device bytes: the cast 2048 + 4096, three adds into the held gradient (2048 + 2 x 4096
  // each), the copy-in 4096 + 4096; out becomes the saved shard as it is (fp32 = accum).
  EXPECT_EQ(o.measured.accumulate_bytes, 6144u + 3 * 10240 + 8192);
}

TEST(CopyIn, CaseNamesShowItOnlyWhenNotTheDefault) {
  StrategySpec s;
  EXPECT_EQ(s.name().find("copy-in"), std::string::npos);
  s.copy_in = "chunk-cat";
  EXPECT_NE(s.name().find("/copy-in:chunk-cat"), std::string::npos) << s.name();
  EXPECT_FALSE(s == StrategySpec{});
  EXPECT_TRUE(copy_in_separate("chunk-cat"));
  EXPECT_FALSE(copy_in_separate(kDefaultCopyIn));
  EXPECT_THROW(copy_in_separate("chunkcat"), std::invalid_argument);
}

// A cast from grad to reduce dtype happens only in a copy-in: without one the strategy (and so
// the step driver) refuses it before any allocation, naming both flags.
TEST(CopyIn, GradNotReduceWithoutCopyInIsRefusedBeforeAnyWork) {
  auto be = make_host_backend({2, 1});
  const CasePlan plan{make_layout({64}),
                      parse_schedule("nnnS", 4),
                      StrategySpec{},
                      parse_dtype_triple("bf16-fp32-fp32"),
                      GenMode::dyadic,
                      5,
                      "t"};
  std::string msg;
  be->run([&](RankBackend& rb) {
    try {
      StepDriver driver(rb, plan);
    } catch (const std::invalid_argument& e) {
      if (rb.rank() == 0) msg = e.what();
    }
  });
  EXPECT_NE(msg.find("--dtype bf16-fp32-fp32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--copy-in chunk-cat"), std::string::npos) << msg;
  EXPECT_THROW(parse_dtype_triple("fp32-bf16-fp32"), std::invalid_argument);
  EXPECT_THROW(parse_dtype_triple("bf16-fp32-bf16"), std::invalid_argument);
}

std::string refusal(const std::vector<std::string>& args) {
  try {
    validate_cases(cases_of(args));
  } catch (const CliError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(CopyIn, CliProductAndRefusals) {
  // --copy-in applies to every strategy, presets too; the name carries it.
  const auto both = cases_of({"--preset", "fsdp2", "--copy-in", "all", "--schedule", "nnnS"});
  ASSERT_EQ(both.size(), 3u);
  EXPECT_EQ(both[0].strategy.copy_in, "none");
  EXPECT_EQ(both[1].strategy.copy_in, "chunk-cat");
  EXPECT_EQ(both[2].strategy.copy_in, "no-shard");
  EXPECT_NE(both[1].name().find("/copy-in:chunk-cat/"), std::string::npos) << both[1].name();
  // --dtype all leaves bf16-fp32-fp32 out where there is no copy-in, keeps it where there is.
  size_t uncast = 0, cast = 0;
  for (const CaseSpec& c : cases_of(
           {"--preset", "fsdp2", "--copy-in", "all", "--dtype", "all", "--schedule", "nnnS"})) {
    if (c.dtypes.grad == c.dtypes.reduce) continue;
    (c.strategy.copy_in == "none" ? uncast : cast) += 1;
  }
  EXPECT_EQ(uncast, 0u);
  EXPECT_EQ(cast, 1u);
  // Given by name without a copy-in: refused, naming the flags and the fix.
  const std::string e = refusal({"--dtype", "bf16-fp32-fp32", "--schedule", "nnnS"});
  EXPECT_NE(e.find("--dtype bf16-fp32-fp32"), std::string::npos) << e;
  EXPECT_NE(e.find("--copy-in chunk-cat"), std::string::npos) << e;
  EXPECT_EQ(refusal({"--dtype", "bf16-fp32-fp32", "--copy-in", "chunk-cat"}), "<no error>");
  try {
    cases_of({"--copy-in", "chunkcat"});
    ADD_FAILURE() << "an unknown --copy-in value was accepted";
  } catch (const std::exception& ex) {
    EXPECT_NE(std::string(ex.what()).find("--copy-in"), std::string::npos) << ex.what();
  }
}

}  // namespace
}  // namespace shardaccum
