// World size and K as axes (issue 18, item 2): --k takes a list (canonical names expand per K, a
// literal keeps its own K and must match one), --world-size skips sizes above the GPUs of a cuda
// run and keeps the host's, `all` wherever a finite list exists; and a mistyped flag gets the
// nearest known one.
#include <gtest/gtest.h>

#include <filesystem>

#include "bench/cli.hpp"
#include "bench/cli_suggest.hpp"
#include "cli_options_support.hpp"
#include "strategies/default_matrix.hpp"

namespace shardaccum {
namespace {

using testing::parsed;

/// The axes on a backend of `max_world` ranks; `gpu_world`: one GPU per rank (cuda, one process).
MatrixAxes axes(const std::vector<std::string>& args, int max_world = 1024,
                bool gpu_world = false) {
  return resolve_axes(parsed(args), "uniform:2x4", 2, max_world, gpu_world);
}

std::vector<std::string> modes(const MatrixAxes& a) {
  std::vector<std::string> out;
  for (const Schedule& s : a.schedules) out.push_back(s.modes);
  return out;
}

std::string cli_error(const std::vector<std::string>& args, int max_world = 1024,
                      bool gpu_world = false) {
  try {
    axes(args, max_world, gpu_world);
  } catch (const CliError& e) {
    return e.what();
  }
  return "<no error>";
}

using Strings = std::vector<std::string>;

TEST(KAxis, CanonicalNamesExpandOncePerK) {
  EXPECT_EQ(modes(axes({"--k", "3,4", "--schedule", "no-sync,sync"})),
            (Strings{"nnS", "SSS", "nnnS", "SSSS"}));
  EXPECT_EQ(modes(axes({"--k", "5", "--k", "3", "--schedule", "no-sync"})),
            (Strings{"nnnnS", "nnS"}));  // repeats add up, in order
  EXPECT_EQ(modes(axes({"--k", "3,8", "--schedule", "all"})).size(), 8u);
  EXPECT_EQ(modes(axes({"--schedule", "sync"})), (Strings{"SSSS"}));  // K 4 by default
}

TEST(KAxis, ALiteralKeepsItsOwnKAndMustMatchOne) {
  EXPECT_EQ(modes(axes({"--k", "2,4", "--schedule", "nS,nnnS"})), (Strings{"nS", "nnnS"}));
  EXPECT_EQ(modes(axes({"--k", "3,4", "--schedule", "nnS,sync"})), (Strings{"nnS", "SSS", "SSSS"}));
  EXPECT_EQ(modes(axes({"--schedule", "nnnnnS"})), (Strings{"nnnnnS"}));  // no --k: its own K
  const std::string e = cli_error({"--k", "2,4", "--schedule", "nnS"});
  EXPECT_NE(e.find("--schedule nnS"), std::string::npos) << e;
  EXPECT_NE(e.find("--k 2,4"), std::string::npos) << e;
  EXPECT_NE(e.find("3 micro-batches"), std::string::npos) << e;
}

TEST(KAxis, AllAndBadValuesAreRefusedNamingK) {
  for (const Strings& args : {Strings{"--k", "all"}, Strings{"--k", "2,all"}}) {
    const std::string e = cli_error(args);
    EXPECT_NE(e.find("--k all"), std::string::npos) << e;
    EXPECT_NE(e.find("no finite list"), std::string::npos) << e;
  }
  for (const char* bad : {"0", "4097", "2,,4", "x"})
    EXPECT_NE(cli_error({"--k", bad}).find("--k"), std::string::npos) << bad;
  // Canonical names need K >= 3 at every K of the list.
  EXPECT_NE(cli_error({"--k", "2,4", "--schedule", "sync"}).find("--k >= 3"), std::string::npos);
}

TEST(WorldAxis, TheHostBackendRunsAnySize) {
  const MatrixAxes a = axes({"--world-size", "1,2,4"});
  EXPECT_EQ(a.world_sizes, (std::vector<int>{1, 2, 4}));
  EXPECT_TRUE(a.notes.empty());
  EXPECT_NE(cli_error({"--world-size", "2000"}).find("at most 1024"), std::string::npos);
  EXPECT_NE(cli_error({"--world-size", "all"}).find("give a list such as --world-size 1,2,4"),
            std::string::npos);
}

TEST(WorldAxis, SizesAboveTheGpusAreSkippedWithANote) {
  const MatrixAxes a = axes({"--world-size", "1,2,4"}, 2, true);
  EXPECT_EQ(a.world_sizes, (std::vector<int>{1, 2}));
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("--world-size 4: skipped, only 2 GPUs are visible"), std::string::npos)
      << a.notes[0];
  const std::string e = cli_error({"--world-size", "4,8"}, 2, true);
  EXPECT_NE(e.find("--world-size 4,8: every world size is above"), std::string::npos) << e;
  EXPECT_EQ(axes({"--world-size", "all"}, 3, true).world_sizes, (std::vector<int>{1, 2, 3}));
  // Without gpu_world (a multi-process launch) an oversized world stays an error, as before.
  EXPECT_NE(cli_error({"--world-size", "1,4"}, 2).find("too large (at most 2); give 1..2 ranks"),
            std::string::npos);
}

// --host-threads N sets cpu-add-pageable's CPU add only: a run without that offload is told so.
TEST(HostThreads, GivenToARunWithoutTheirOffloadItIsANote) {
  const MatrixAxes a = axes({"--offload", "gpu-add", "--host-threads", "3"});
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("--host-threads 3: no case of this run has offload cpu-add-pageable"),
            std::string::npos)
      << a.notes[0];
  EXPECT_TRUE(axes({"--preset", "fsdp2", "--host-threads", "3"}).notes.empty());
  EXPECT_TRUE(axes({"--offload", "gpu-add"}).notes.empty());  // auto, the default: nothing said
}

TEST(TraceSteps, GivenWithoutATraceItIsANote) {
  const MatrixAxes a = axes({"--offload", "none", "--trace-steps", "5"});
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("--trace-steps 5: no --trace FILE is given"), std::string::npos)
      << a.notes[0];
  EXPECT_TRUE(axes({"--offload", "none", "--trace-steps", "2", "--steps", "3", "--trace", "t.json"})
                  .notes.empty());
  EXPECT_TRUE(axes({"--offload", "none"}).notes.empty());
}

TEST(TraceSteps, MoreThanTheMeasuredStepsIsANote) {
  const MatrixAxes a =
      axes({"--offload", "none", "--trace-steps", "5", "--steps", "1", "--trace", "t.json"});
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("--trace-steps 5 is more than the 1 measured steps"), std::string::npos)
      << a.notes[0];
}

TEST(ModelAxis, AllIsEveryShippedConfig) {
  size_t shipped = 0;
  for (const auto& f : std::filesystem::directory_iterator(SHARDACCUM_CONFIG_DIR))
    shipped += f.path().extension() == ".json";
  const MatrixAxes a = axes({"--model", "all"});
  EXPECT_EQ(a.models.size(), shipped);
  EXPECT_NE(cli_error({"--model", "all,gpt2"}).find("cannot be combined"), std::string::npos);
}

TEST(FlagSuggestion, EditDistanceCountsTyposAsOne) {
  EXPECT_EQ(edit_distance("offload", "offload"), 0u);
  EXPECT_EQ(edit_distance("--ofload", "--offload"), 1u);                     // a deletion
  EXPECT_EQ(edit_distance("--benchmark_fitler", "--benchmark_filter"), 1u);  // a swap
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(nearest_flag("--ofload=none", {"--model", "--offload", "--mode"}), "--offload");
  EXPECT_EQ(nearest_flag("--frobnicate", {"--model", "--offload", "--mode"}), "");
}

TEST(FlagSuggestion, AMistypedFlagNamesTheNearestKnownOne) {
  const auto error = [](const Strings& args) {
    try {
      parsed(args);
    } catch (const CliError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_NE(error({"--ofload", "none"}).find("unknown flag --ofload; did you mean --offload?"),
            std::string::npos);
  EXPECT_NE(error({"--world_size=2"}).find("did you mean --world-size?"), std::string::npos);
  EXPECT_NE(error({"--benchmark_fitler=sync"}).find("did you mean --benchmark_filter?"),
            std::string::npos);
  EXPECT_NE(error({"--benchmark-repetitions=2"}).find("did you mean --benchmark_repetitions?"),
            std::string::npos);
  EXPECT_NE(error({"--v", "2"}).find("--v needs its value after '='"), std::string::npos);
  const std::string far = error({"--frobnicate"});
  EXPECT_NE(far.find("unknown flag --frobnicate"), std::string::npos) << far;
  EXPECT_EQ(far.find("did you mean"), std::string::npos) << far;
  // One dash: CLI11 said "The following arguments were not expected: 4 -k".
  EXPECT_NE(error({"-k", "4"}).find("unknown flag -k; flags take two dashes: did you mean --k?"),
            std::string::npos)
      << error({"-k", "4"});
  EXPECT_NE(error({"-offload=none"}).find("did you mean --offload?"), std::string::npos);
}

}  // namespace
}  // namespace shardaccum

namespace shardaccum {
namespace {

// --lookahead (docs/DESIGN.md §2): each strategy once per value; the name carries
// /lookahead:V only away from the strategy's default (a preset's own, else 1), so today's stay.
TEST(LookaheadAxis, ValuesMultiplyTheStrategiesAndAChosenOneIsAlwaysNamed) {
  const MatrixAxes a = axes({"--binding", "data-free", "--offload", "none", "--mode", "flag",
                             "--lookahead", "0,1,unbounded"});
  ASSERT_EQ(a.strategies.size(), 3u);
  EXPECT_EQ(a.strategies[0].name(), "binding:data-free/offload:none/mode:flag/lookahead:0");
  EXPECT_EQ(a.strategies[1].name(), "binding:data-free/offload:none/mode:flag/lookahead:1");
  EXPECT_EQ(a.strategies[2].name(), "binding:data-free/offload:none/mode:flag/lookahead:unbounded");
  // zero3's axes default to its registered buckets, with the preset or without it.
  const MatrixAxes z = axes({"--preset", "zero3,fsdp2", "--lookahead", "1"});
  ASSERT_EQ(z.strategies.size(), 2u);
  EXPECT_EQ(z.strategies[0].name(),
            "binding:data-free/offload:gpu-add-zero3/mode:flag/division:pre/lookahead:1");
  // fsdp2's own default, chosen: named too, so both cases at lookahead 1 carry the segment.
  EXPECT_EQ(z.strategies[1].name(),
            "binding:data-free/offload:cpu-add-pageable/mode:flag/division:collective/"
            "copy-in:chunk-cat/lookahead:1");
  // gpu-add/flag/end is no preset since zero3 became gpu-add-zero3/pre: the default lookahead 1.
  const MatrixAxes d = axes({"--binding", "data-free", "--offload", "gpu-add", "--mode", "flag"});
  EXPECT_EQ(d.strategies.at(0).effective_lookahead(), Lookahead::one);
  EXPECT_EQ(d.strategies.at(0).name(), "binding:data-free/offload:gpu-add/mode:flag");
  EXPECT_EQ(axes({"--lookahead", "all"}).strategies.size(),
            std::size(kLookaheads) * axes({}).strategies.size());
  EXPECT_EQ(std::size(kLookaheads), 4u);
}

// --division (docs/DESIGN.md §3): a list or all multiplies the strategies; `end`, the default,
// stays out of the names, the others add /division:D.
TEST(DivisionAxis, ValuesMultiplyTheStrategiesAndOnlyTheDefaultIsUnnamed) {
  const MatrixAxes a = axes({"--binding", "data", "--offload", "none", "--mode", "flag",
                             "--division", "collective,pre-post,pre,end"});
  ASSERT_EQ(a.strategies.size(), 4u);
  EXPECT_EQ(a.strategies[0].name(), "binding:data/offload:none/mode:flag/division:collective");
  EXPECT_EQ(a.strategies[1].name(), "binding:data/offload:none/mode:flag/division:pre-post");
  EXPECT_EQ(a.strategies[2].name(), "binding:data/offload:none/mode:flag/division:pre");
  EXPECT_EQ(a.strategies[3].name(), "binding:data/offload:none/mode:flag");
  // An axis flag given: the product over the default matrix's other axes, no preset added.
  EXPECT_EQ(axes({"--division", "all"}).strategies.size(), 4 * default_strategies().size());
  const std::string m = cli_error({"--division", "twice"});
  EXPECT_NE(m.find("--division: unknown value 'twice'"), std::string::npos) << m;
  EXPECT_NE(m.find("pre-post"), std::string::npos) << m;
  EXPECT_EQ(m.find("did you mean"), std::string::npos) << m;  // no value is near 'twice'
}

TEST(AxisValues, ATypoOfAValueIsAnsweredWithTheNearestOne) {
  const std::string m = cli_error({"--offload", "copy-fairscal"});
  EXPECT_NE(m.find("--offload: unknown value 'copy-fairscal'; did you mean copy-fairscale?"),
            std::string::npos)
      << m;
  EXPECT_NE(cli_error({"--mode", "flga"}).find("did you mean flag?"), std::string::npos);
  // Two values as near: both named, not the first.
  const std::string tie = cli_error({"--preset", "fsdp3"});
  EXPECT_NE(tie.find("did you mean fsdp1 or fsdp2?"), std::string::npos) << tie;
}

TEST(LookaheadAxis, AnUnknownValueNamesTheFlagAndTheValues) {
  const std::string m = cli_error({"--lookahead", "2"});
  EXPECT_NE(m.find("--lookahead: unknown value '2'"), std::string::npos) << m;
  EXPECT_NE(m.find("unbounded"), std::string::npos) << m;
}

// --chunk-bytes reaches every case's plan (the pipelined offloads read it); 128 MiB by default.
TEST(ChunkBytes, ReachesEveryPlanAndRefusesLessThanOneElement) {
  const MatrixAxes a =
      axes({"--offload", "gpu-add-pipelined,cpu-add-pipelined", "--chunk-bytes", "4096"});
  const std::vector<CaseSpec> cases = build_matrix(a);
  ASSERT_FALSE(cases.empty());
  for (const CaseSpec& c : cases) EXPECT_EQ(c.plan().chunk_bytes, 4096u) << c.name();
  EXPECT_EQ(build_matrix(axes({})).at(0).plan().chunk_bytes, uint64_t{128} << 20);
  const std::string m = cli_error({"--chunk-bytes", "0"});
  EXPECT_NE(m.find("--chunk-bytes"), std::string::npos) << m;
}

}  // namespace
}  // namespace shardaccum
