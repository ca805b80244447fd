// The console that reads (issue 18, item 3): one compact line per case with strategy, step time
// and its time domain, verdict, key bytes and peak; progress by repetition; --list after
// --benchmark_filter; and each JSON entry naming its K and world size.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "bench/compact_reporter.hpp"
#include "bench/model_layouts.hpp"
#include "bench/progress.hpp"
#include "bench_cli_support.hpp"
#include "output_cli_support.hpp"
#include "strategies/preset/preset.hpp"

namespace shardaccum {
namespace {

using GbRun = benchmark::BenchmarkReporter::Run;
constexpr double kMiB = 1024.0 * 1024.0;

CaseSpec fsdp2_case() {
  CaseSpec c;
  c.layout = std::make_shared<const Layout>(load_layout("uniform:4x1M", {}));
  c.world_size = 2;
  c.schedule = Schedule{"nnnS"};
  c.strategy = preset("fsdp2");
  c.dtypes = parse_dtype_triple("fp32-fp32-fp32");
  return c;
}

/// A repetition of `c` as GB reports it: 12.3456 ms per step (manual time, milliseconds).
GbRun repetition(const CaseSpec& c, double correct, double max_rel_err, int index = 0,
                 int reps = 1) {
  GbRun r;
  r.run_name.function_name = c.name();
  r.run_type = GbRun::RT_Iteration;
  r.time_unit = benchmark::kMillisecond;
  r.iterations = 1;
  r.real_accumulated_time = 0.0123456;  // seconds
  r.repetition_index = index;
  r.repetitions = reps;
  r.counters["correct"] = correct;
  r.counters["max_rel_err"] = max_rel_err;
  r.counters["h2d_bytes"] = 0;
  r.counters["d2h_bytes"] = 4 * kMiB;
  r.counters["nccl_input_bytes"] = 8 * kMiB;
  r.counters["peak_device_bytes"] = 16 * kMiB;
  r.counters["bytes_from_cupti"] = 0;  // one of the counters the line leaves to the JSON
  return r;
}

/// Marks `r` as failed with `message`, under GB 1.7's or 1.8's field names.
template <class R>
void fail(R& r, const std::string& message) {
  if constexpr (requires { r.skipped; }) {
    r.skipped = static_cast<decltype(r.skipped)>(2);  // GB 1.8: SkippedWithError
    r.skip_message = message;
  } else {
    r.error_occurred = true;
    r.error_message = message;
  }
}

TEST(CompactLine, NamesStrategyCaseStepVerdictBytesAndPeak) {
  const CaseSpec c = fsdp2_case();
  const CompactReporter rep({c}, "host wall-clock");
  const std::string line = rep.line(repetition(c, 1, 0));
  const std::string strategy_and_case =
      "data-free/cpu-add-pageable/flag/collective (fsdp2)  uniform:4x1M w2 K4 nnnS fp32-fp32-fp32";
  for (const char* part :
       {strategy_and_case.c_str(), "step 12.346 ms (host wall-clock)", "correct max_rel_err 0",
        "H2D 0 B", "D2H 4.00 MiB", "RS 8.00 MiB", "peak device 16.0 MiB"})
    EXPECT_NE(line.find(part), std::string::npos) << part << " not in: " << line;
  EXPECT_EQ(line.find("bytes_from_cupti"), std::string::npos) << line;
  EXPECT_LT(line.size(), 240u) << line;  // GB's dump of every counter was about 1,000
  EXPECT_EQ(line.find("rep "), std::string::npos) << "one repetition: no rep part: " << line;
}

// A chosen lookahead is in the line: cases that differ only by it printed the same strategy.
TEST(CompactLine, AChosenLookaheadIsNamed) {
  CaseSpec c = fsdp2_case();
  c.strategy.lookahead = Lookahead::zero;
  const CompactReporter rep({c}, "host wall-clock");
  const std::string line = rep.line(repetition(c, 1, 0));
  // Not fsdp2 at lookahead 0 (fsdp2's is 1): its copy-in chunk-cat is named too.
  EXPECT_NE(line.find("data-free/cpu-add-pageable/flag/collective copy-in chunk-cat lookahead 0  "
                      "uniform:4x1M"),
            std::string::npos)
      << line;
  c.strategy.lookahead = Lookahead::one;  // fsdp2's own, chosen: named, and still the preset
  const CompactReporter rep1({c}, "host wall-clock");
  EXPECT_NE(rep1.line(repetition(c, 1, 0))
                .find("data-free/cpu-add-pageable/flag/collective lookahead 1 (fsdp2)"),
            std::string::npos);
}

// A copy-in other than the default is in the line (cases that differ only by it printed the same
// strategy), unless it is the preset's own.
TEST(CompactLine, AnOtherCopyInIsNamedUnlessThePresetsOwn) {
  CaseSpec c = fsdp2_case();
  c.strategy.copy_in = "no-shard";  // not fsdp2's chunk-cat: no preset
  const CompactReporter rep({c}, "host wall-clock");
  EXPECT_NE(rep.line(repetition(c, 1, 0))
                .find("data-free/cpu-add-pageable/flag/collective copy-in no-shard  uniform:4x1M"),
            std::string::npos)
      << rep.line(repetition(c, 1, 0));
  c.strategy.copy_in = kDefaultCopyIn;
  const CompactReporter rep0({c}, "host wall-clock");
  EXPECT_NE(rep0.line(repetition(c, 1, 0))
                .find("data-free/cpu-add-pageable/flag/collective  uniform:4x1M"),
            std::string::npos)
      << rep0.line(repetition(c, 1, 0));
}

TEST(CompactLine, AWrongOrFailedCaseSaysSo) {
  const CaseSpec c = fsdp2_case();
  const CompactReporter rep({c}, "GPU events");
  EXPECT_NE(rep.line(repetition(c, 0, 0.25)).find("WRONG max_rel_err 0.25"), std::string::npos);
  GbRun failed = repetition(c, 1, 0);
  fail(failed, "does not fit: 3 GiB of device memory");
  const std::string line = rep.line(failed);
  EXPECT_NE(line.find("ERROR does not fit: 3 GiB of device memory"), std::string::npos) << line;
  EXPECT_EQ(line.find("correct"), std::string::npos) << line;
}

TEST(CompactLine, RepetitionsThenOneLineOfAggregates) {
  const CaseSpec c = fsdp2_case();
  CompactReporter rep({c}, "host wall-clock");
  std::ostringstream out;
  rep.SetOutputStream(&out);
  GbRun mean = repetition(c, 1, 0, 0, 2), cv = mean;
  mean.run_type = cv.run_type = GbRun::RT_Aggregate;
  mean.aggregate_name = "mean";
  cv.aggregate_name = "cv";
  cv.aggregate_unit = benchmark::kPercentage;
  cv.real_accumulated_time = 0.05;  // GB's cv: a fraction
  rep.ReportRuns({repetition(c, 1, 0, 0, 2), repetition(c, 1, 0, 1, 2), mean, cv});
  std::istringstream lines(out.str());
  std::vector<std::string> got;
  for (std::string l; std::getline(lines, l);) got.push_back(l);
  ASSERT_EQ(got.size(), 3u) << out.str();
  EXPECT_EQ(got[0].rfind("rep 1/2  data-free/cpu-add-pageable/flag/collective (fsdp2)", 0), 0u)
      << got[0];
  EXPECT_EQ(got[1].rfind("rep 2/2  ", 0), 0u) << got[1];
  EXPECT_NE(got[2].find("step over 2 repetitions: mean 12.346 ms, cv 5.0 %"), std::string::npos)
      << got[2];
}

TEST(CompactLine, BytesInBinaryUnits) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(1.25 * 1024 * kMiB), "1.25 GiB");
  EXPECT_EQ(format_bytes(std::nan("")), "-");
}

TEST(ProgressLine, CountsCasesAndRepetitions) {
  Progress p(1);  // a rank other than 0: counts without printing
  p.set_total(8, 5);
  p.case_done("a", true);
  EXPECT_EQ(p.line("a", true), "[case 1/8, rep 1/5] done a");
  p.case_done("a", true);
  EXPECT_EQ(p.line("a", true), "[case 1/8, rep 2/5] done a");
  p.case_done("b", false);
  EXPECT_EQ(p.line("b", false), "[case 2/8, rep 1/5] FAILED b");
  EXPECT_EQ(p.tally().done, 3u);
  EXPECT_EQ(p.tally().failed, 1u);
  Progress once(1);
  once.set_total(3);
  once.case_done("a", true);
  EXPECT_EQ(once.line("a", true), "[case 1/3] done a");
}

const std::string kFour = "--backend host --list --preset fsdp2 --model uniform:2x4 ";

TEST(ListCli, HonoursBenchmarkFilterAsGoogleBenchmarkDoes) {
  const auto names = testing::run_bench_stdout(kFour + "--benchmark_filter=schedule:SSSS/");
  EXPECT_EQ(names.rc, 0);
  EXPECT_EQ(names.out, "accum/model:uniform:2x4/world:2/schedule:SSSS/binding:data-free/"
                       "offload:cpu-add-pageable/mode:flag/division:collective/copy-in:chunk-cat/"
                       "dtype:fp32-fp32-fp32\n");
  const auto err = testing::run_bench_cli("", kFour + "--benchmark_filter=schedule:SSSS/");
  EXPECT_NE(err.err.find("1 case on backend host (--benchmark_filter keeps 1 of 4 cases)"),
            std::string::npos)
      << err.err;
  // GB's filter sees the registered name, suffixes included; '-' negates.
  EXPECT_EQ(testing::run_bench_stdout(kFour + "--steps 2 --benchmark_filter=iterations:2/manual")
                .out.size(),
            testing::run_bench_stdout(kFour).out.size());
  const auto negated = testing::run_bench_cli("", kFour + "--benchmark_filter=-nnnS");
  EXPECT_NE(negated.err.find("3 cases on backend host"), std::string::npos) << negated.err;
  // Given twice, the last one counts for --list as for the run (Google Benchmark's rule).
  const auto twice =
      testing::run_bench_cli("", kFour + "--benchmark_filter=zzz --benchmark_filter=-nnnS");
  EXPECT_NE(twice.err.find("3 cases on backend host"), std::string::npos) << twice.err;
  const auto bad = testing::run_bench_cli("", kFour + "--benchmark_filter='('");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("--benchmark_filter=("), std::string::npos) << bad.err;
}

TEST(RunCli, JsonEntriesNameTheirKAndWorldSizeAndTheConsoleIsOneLineEach) {
  const std::string dir = ::testing::TempDir() + "/shardaccum_console_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string json = dir + "/run.json", shown = dir + "/stdout";
  ASSERT_EQ(testing::run_shell(
                testing::bench_command("--backend host --model uniform:2x4 --preset fsdp2 --k 3,4 "
                                       "--schedule sync --world-size 1,2 --steps 1 --warmup 0 "
                                       "--benchmark_out=" +
                                       json) +
                " >" + shown + " 2>/dev/null"),
            0);
  const auto doc = nlohmann::json::parse(testing::slurp(json));
  std::set<std::pair<int, int>> seen;
  for (const auto& b : doc.at("benchmarks")) {
    const std::string name = b.at("name");
    const size_t w = name.find("/world:") + 7, s = name.find("/schedule:") + 10;
    const int world = std::stoi(name.substr(w));
    const int k = static_cast<int>(name.find('/', s) - s);  // the schedule's letters
    EXPECT_EQ(b.at("k").get<double>(), k) << name;
    EXPECT_EQ(b.at("world_size").get<double>(), world) << name;
    EXPECT_TRUE(b.contains("bytes_from_cupti")) << "the file keeps every counter: " << name;
    seen.emplace(k, world);
  }
  EXPECT_EQ(seen, (std::set<std::pair<int, int>>{{3, 1}, {3, 2}, {4, 1}, {4, 2}}));
  std::istringstream lines(testing::slurp(shown));
  int case_lines = 0;
  for (std::string l; std::getline(lines, l);) {
    EXPECT_EQ(l.find("bytes_from_cupti="), std::string::npos) << l;
    case_lines +=
        l.rfind("data-free/cpu-add-pageable/flag/collective (fsdp2)  uniform:2x4 w", 0) == 0;
  }
  EXPECT_EQ(case_lines, 4);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shardaccum
