// `shardaccum_bench --trace FILE.json` end to end on the host backend: the trace is valid Chrome /
// Perfetto JSON with one process per rank and the suite's tracks, phases nest inside their step,
// only measured steps are recorded, and the bytes on the copy-stream track are exactly the
// h2d_bytes / d2h_bytes counters of --benchmark_out from the same run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/shardaccum_trace_cli_" + std::to_string(getpid()) + "_" + name;
}

int run_bench(const std::string& args, std::string* stderr_text = nullptr) {
  const std::string err = temp_path("stderr.txt");
  const std::string cmd =
      std::string("'") + SHARDACCUM_BENCH_EXE + "' " + args + " >/dev/null 2>'" + err + "'";
  const int rc = std::system(cmd.c_str());
  if (stderr_text) {
    std::ifstream in(err);
    stderr_text->assign(std::istreambuf_iterator<char>(in), {});
  }
  std::filesystem::remove(err);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

struct X {
  int pid, tid;
  std::string name, cat, track, case_name;
  double ts, dur;
  uint64_t bytes;
  int step = -1;            // args.step
  std::string source = {};  // args.source
  double step_ms = -1;      // args.step_ms (the gpu step events)
  double end() const { return ts + dur; }
  bool inside(const X& o) const {
    return pid == o.pid && ts >= o.ts - 1e-3 && end() <= o.end() + 1e-3;
  }
};

constexpr int kSteps = 2, kWarmup = 1, kWorld = 2;

class TraceCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    trace_path_ = new std::string(temp_path("trace.json"));
    bench_path_ = new std::string(temp_path("bench.json"));
    const std::string args =
        "--backend host --world-size 2 --model uniform:3x1000 --schedule nSnS,SSSS "
        "--offload gpu-add,cpu-add --mode flag --binding data-free --steps " +
        std::to_string(kSteps) + " --warmup " + std::to_string(kWarmup) + " --trace '" +
        *trace_path_ + "' --benchmark_out='" + *bench_path_ + "' --benchmark_out_format=json";
    rc_ = run_bench(args);
  }
  static void TearDownTestSuite() {
    std::filesystem::remove(*trace_path_);
    std::filesystem::remove(*bench_path_);
    delete trace_path_;
    delete bench_path_;
  }
  void SetUp() override {
    ASSERT_EQ(rc_, 0) << "shardaccum_bench failed";
    std::ifstream t(*trace_path_), b(*bench_path_);
    ASSERT_TRUE(t && b);
    ASSERT_NO_THROW(trace_ = nlohmann::json::parse(t)) << "the trace is not valid JSON";
    ASSERT_NO_THROW(bench_ = nlohmann::json::parse(b));
    for (const auto& e : trace_.at("traceEvents")) {
      if (e.at("ph") == "M" && e.at("name") == "process_name")
        process_[e.at("pid")] = e.at("args").at("name");
      if (e.at("ph") == "M" && e.at("name") == "thread_name")
        track_[{e.at("pid").get<int>(), e.at("tid").get<int>()}] = e.at("args").at("name");
    }
    for (const auto& e : trace_.at("traceEvents")) {
      if (e.at("ph") != "X") continue;
      X x{e.at("pid"), e.at("tid"), e.at("name"),
          e.at("cat"), "",          e.at("args").value("case", ""),
          e.at("ts"),  e.at("dur"), e.at("args").value("bytes", uint64_t{0})};
      x.track = track_[{x.pid, x.tid}];
      x.step = e.at("args").value("step", -1);
      x.source = e.at("args").value("source", "");
      x.step_ms = e.at("args").value("step_ms", -1.0);
      events_.push_back(x);
    }
  }
  std::vector<std::string> cases() const {
    std::vector<std::string> out;
    for (const auto& b : bench_.at("benchmarks")) {
      const std::string n = b.at("name");
      out.push_back(n.substr(0, n.find("/iterations:")));
    }
    return out;
  }

  static inline std::string* trace_path_ = nullptr;
  static inline std::string* bench_path_ = nullptr;
  static inline int rc_ = -1;
  nlohmann::json trace_, bench_;
  std::map<int, std::string> process_;
  std::map<std::pair<int, int>, std::string> track_;
  std::vector<X> events_;
};

}  // namespace

TEST_F(TraceCli, OneProcessPerRankWithTheSuitesTracksAndHostTimeDomain) {
  EXPECT_EQ(trace_.at("otherData").at("time_domain"), "host wall-clock");
  EXPECT_EQ(process_, (std::map<int, std::string>{{0, "rank 0"}, {1, "rank 1"}}));
  for (int r = 0; r < kWorld; ++r) {
    std::set<std::string> tracks;
    for (const auto& [key, name] : track_)
      if (key.first == r) tracks.insert(name);
    EXPECT_EQ(tracks, (std::set<std::string>{"step", "phases", "host tasks", "compute stream",
                                             "comm stream", "copy stream"}))
        << "rank " << r;
  }
  for (const X& x : events_) EXPECT_GE(x.dur, 0.0);
}

TEST_F(TraceCli, OnlyMeasuredStepsAreRecordedAndEveryEventNamesItsCase) {
  const auto names = cases();
  ASSERT_EQ(names.size(), 4u);
  for (const std::string& c : names)
    for (int r = 0; r < kWorld; ++r) {
      std::vector<std::string> steps;
      for (const X& x : events_)
        if (x.cat == "step" && x.pid == r && x.case_name == c) steps.push_back(x.name);
      // Warm-up is step 0; the measured steps are 1..kSteps.
      std::vector<std::string> want;
      for (int s = kWarmup; s < kWarmup + kSteps; ++s)
        want.push_back("step " + std::to_string(s) + " " + c);
      std::sort(steps.begin(), steps.end());
      EXPECT_EQ(steps, want) << c << " rank " << r;
    }
  const std::set<std::string> known(names.begin(), names.end());
  for (const X& x : events_)
    EXPECT_TRUE(known.count(x.case_name)) << x.name << " carries case '" << x.case_name << "'";
}

TEST_F(TraceCli, PhasesAndOpsNestInsideTheirStep) {
  std::vector<X> steps, mbs, units;
  for (const X& x : events_) {
    if (x.cat == "step") steps.push_back(x);
    if (x.cat == "micro-batch") mbs.push_back(x);
    if (x.cat == "unit") units.push_back(x);
  }
  const auto parent_of = [](const X& x, const std::vector<X>& candidates) -> const X* {
    for (const X& c : candidates)
      if (c.case_name == x.case_name && x.inside(c)) return &c;
    return nullptr;
  };
  int phases = 0;
  for (const X& x : events_) {
    if (x.cat == "step") continue;
    const X* step = parent_of(x, steps);
    ASSERT_NE(step, nullptr) << x.track << " " << x.name << " at " << x.ts
                             << " lies in no step of its case";
    if (x.cat == "micro-batch") continue;
    if (x.cat == "unit") {
      EXPECT_NE(parent_of(x, mbs), nullptr) << x.name << ": unit outside every micro-batch";
    } else if (x.cat == "phase") {
      ++phases;
      if (x.name == "finalize") continue;  // finalize runs per unit after the last micro-batch
      EXPECT_NE(parent_of(x, units), nullptr) << x.name << ": phase outside every unit";
      EXPECT_TRUE(x.name == "backward" || x.name == "reduce_scatter" || x.name == "accumulate")
          << x.name;
    }
  }
  // Per measured step and rank: 4 micro-batches x 3 units backward + S's reduce_scatter and
  // accumulate, + 3 finalize. nSnS: 12 + 2*3*2 + 3 = 27; SSSS: 12 + 4*3*2 + 3 = 39.
  EXPECT_EQ(phases, kSteps * kWorld * 2 * (27 + 39));
}

TEST_F(TraceCli, CopyStreamBytesEqualTheCaseCounters) {
  int checked = 0;
  for (const auto& b : bench_.at("benchmarks")) {
    const std::string n = b.at("name");
    const std::string c = n.substr(0, n.find("/iterations:"));
    const double h2d = b.at("h2d_bytes"), d2h = b.at("d2h_bytes");  // per step (max over ranks)
    for (int r = 0; r < kWorld; ++r) {
      uint64_t th2d = 0, td2h = 0;
      for (const X& x : events_) {
        if (x.pid != r || x.case_name != c || x.track != "copy stream") continue;
        if (x.name == "h2d") th2d += x.bytes;
        if (x.name == "d2h") td2h += x.bytes;
      }
      EXPECT_EQ(static_cast<double>(th2d), h2d * kSteps) << c << " rank " << r << " H2D";
      EXPECT_EQ(static_cast<double>(td2h), d2h * kSteps) << c << " rank " << r << " D2H";
      ++checked;
    }
    if (c.find("gpu-add") != std::string::npos && c.find("SSSS") != std::string::npos) {
      EXPECT_GT(h2d, 0)
          << "the gpu-add case must move bytes both ways for the check to mean something";
    }
  }
  EXPECT_EQ(checked, 4 * kWorld);
}

// --trace-steps 1 keeps the first measured step of each case only (what the report draws).
TEST(TraceCliSteps, TraceStepsLimitsTheRecordedSteps) {
  const std::string path = temp_path("trace_steps.json");
  ASSERT_EQ(
      run_bench("--backend host --world-size 2 --model uniform:2x1000 --schedule nnnS --preset "
                "fsdp2,zero3 --warmup 1 --steps 3 --trace-steps 1 --trace '" +
                path + "'"),
      0);
  std::ifstream t(path);
  const nlohmann::json doc = nlohmann::json::parse(t);
  std::multiset<std::string> steps;
  for (const auto& e : doc["traceEvents"])
    if (e.value("cat", "") == "step") steps.insert(e["name"].get<std::string>().substr(0, 7));
  EXPECT_EQ(steps, (std::multiset<std::string>{"step 1 ", "step 1 ", "step 1 ",
                                               "step 1 "}));  // 2 cases x 2 ranks
  std::filesystem::remove(path);
}

TEST(TraceCliErrors, AMissingDirectoryIsRefusedBeforeAnythingRuns) {
  std::string err;
  EXPECT_EQ(run_bench("--backend host --trace /nonexistent-shardaccum-dir/t.json", &err), 2);
  EXPECT_NE(err.find("--trace"), std::string::npos) << err;
  EXPECT_NE(err.find("/nonexistent-shardaccum-dir"), std::string::npos) << err;
  EXPECT_EQ(err.find("[case 1/"), std::string::npos) << "no case may run: " << err;
}

// The contract's tracks (docs/DESIGN.md §7, issue 15): every backend op on its stream's track as a
// "gpu op" named by its phase, host tasks on "host tasks", each carrying case, step and source; one
// "gpu step" per rank, case and step on the "step" track spanning exactly its ops, first to last.
TEST_F(TraceCli, OpsOnStreamTracksWithStepArgsAndAGpuStepSpanningThem) {
  const std::set<std::string> streams{"compute stream", "comm stream", "copy stream"};
  const std::set<std::string> phases{"backward", "reduce_scatter", "accumulate", "h2d",
                                     "d2h",      "finalize",       "cpu_add"};
  std::map<std::tuple<int, std::string, int>, std::vector<const X*>> ops;  // (rank, case, step)
  std::map<std::tuple<int, std::string, int>, std::vector<const X*>> spans;
  std::set<std::string> seen_tracks;
  for (const X& x : events_) {
    if (x.cat == "gpu op" || x.cat == "host") {
      if (x.cat == "gpu op") {
        EXPECT_TRUE(streams.count(x.track)) << x.name << " on track " << x.track;
      } else {
        EXPECT_EQ(x.track, "host tasks") << x.name;
        EXPECT_TRUE(x.name == "cpu_add" || x.name == "finalize") << x.name;
      }
      EXPECT_TRUE(phases.count(x.name)) << x.name;
      EXPECT_EQ(x.source, "host backend") << x.name;
      EXPECT_GE(x.step, kWarmup) << x.name;
      EXPECT_LT(x.step, kWarmup + kSteps) << x.name;
      seen_tracks.insert(x.track);
      ops[{x.pid, x.case_name, x.step}].push_back(&x);
    } else if (x.cat == "gpu step") {
      EXPECT_EQ(x.track, "step");
      EXPECT_EQ(x.name, "step " + std::to_string(x.step) + " " + x.case_name);
      spans[{x.pid, x.case_name, x.step}].push_back(&x);
    }
  }
  EXPECT_EQ(seen_tracks,
            (std::set<std::string>{"compute stream", "comm stream", "copy stream", "host tasks"}));
  EXPECT_EQ(ops.size(), static_cast<size_t>(4 * kWorld * kSteps));  // every case, rank and step
  for (const auto& [key, list] : ops) {
    const auto& [rank, c, step] = key;
    const auto it = spans.find(key);
    ASSERT_TRUE(it != spans.end() && it->second.size() == 1)
        << c << " rank " << rank << " step " << step << ": no single gpu step";
    const X& span = *it->second.front();
    double first = list.front()->ts, last = list.front()->end();
    for (const X* x : list) {
      EXPECT_TRUE(x->inside(span)) << x->name << " outside " << span.name;
      first = std::min(first, x->ts);
      last = std::max(last, x->end());
    }
    // First to last: the span neither starts before its first op nor ends after its last.
    EXPECT_NEAR(span.ts, first, 1e-3) << span.name;
    EXPECT_NEAR(span.end(), last, 1e-3) << span.name;
    // The suite's step_ms of that step covers the span (it also holds begin_step and end_step).
    EXPECT_GE(span.step_ms * 1e3 + 1e-3, span.dur) << span.name;
  }
  EXPECT_EQ(spans.size(), ops.size());
}
