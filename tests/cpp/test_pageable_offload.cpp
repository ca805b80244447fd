// offload:cpu-add-pageable (FSDP2's accumulating copy, docs/DESIGN.md §3) on the host backend: the
// verdict of the design at world 1, 2 and 4; every counted byte and peak equal to the model's,
// the pageable D2H and buffer and the saved shard's power-of-two pinned block included; the later
// S's CPU add on the issuing thread (not a host task) right after its blocking copy, before the
// next unit's backward, with --host-threads' team; and --host-threads' bad values refused.
#include <gtest/gtest.h>

#include <bit>
#include <string>
#include <vector>

#include "bench/cli.hpp"
#include "cli_options_support.hpp"
#include "faulty_backend.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

using testing::parsed;

using testing::design_says_correct;
using testing::expect_bytes_and_peaks_of_the_model;
using testing::make_layout;
using testing::run_two_steps;

CasePlan plan_of(const Layout& l, const char* sched, const char* binding, const char* mode,
                 const char* dtype) {
  return {l,
          parse_schedule(sched, 4),
          {binding, "cpu-add-pageable", mode},
          parse_dtype_triple(dtype),
          GenMode::dyadic,
          11,
          "t"};
}

TEST(PageableOffload, VerdictAndBytesOfTheModelAtWorlds124) {
  for (const int world : {1, 2, 4}) {
    auto be = make_host_backend({world, 1});
    // Odd sizes: shards that are not a power of two of bytes (the rounding shows), one element.
    const Layout layout = make_layout({1, 1009, 3, 96});
    for (const char* sched : {"SSSS", "nnnS", "nSnS", "SnSS", "SSnS"})
      for (const char* mode : {"flag", "shape"})
        for (const char* binding : {"data", "data-free"})
          for (const char* dtype : {"fp32-fp32-fp32", "bf16-bf16-fp32"}) {
            const CasePlan plan = plan_of(layout, sched, binding, mode, dtype);
            SCOPED_TRACE(plan.strategy.name() + " " + sched + " world " + std::to_string(world) +
                         " " + dtype);
            const auto o = run_two_steps(*be, plan);
            EXPECT_EQ(o.correct, design_says_correct(plan.strategy, plan.schedule))
                << "max_rel_err " << o.max_rel_err;
            if (o.correct && (world & (world - 1)) == 0) {
              EXPECT_EQ(o.max_rel_err, 0.0);
            }
            expect_bytes_and_peaks_of_the_model(o);
            EXPECT_EQ(o.measured.d2h_pageable_bytes, o.model.d2h_pageable_bytes);
            EXPECT_EQ(o.measured.peak_pageable_bytes, o.model.peak_pageable_bytes);
          }
  }
}

// One unit of 2018 = 2 * 1009 elements, schedule SSSS, mode flag: three later S's, each a pageable
// D2H of the whole shard; the pinned peak is the saved shard's power-of-two block, not its bytes.
TEST(PageableOffload, PageableBytesAndPinnedRoundingOfOneUnit) {
  auto be = make_host_backend({2, 1});
  const Layout layout = make_layout({2018});
  const uint64_t shard_bytes = shard_numel(2018, 2) * 4;  // padded, fp32 accum
  ASSERT_NE(std::bit_ceil(shard_bytes), shard_bytes);     // else the rounding could not show
  const auto o = run_two_steps(*be, plan_of(layout, "SSSS", "data-free", "flag", "fp32-fp32-fp32"));
  EXPECT_TRUE(o.correct);
  EXPECT_EQ(o.measured.d2h_bytes, 4 * shard_bytes);
  EXPECT_EQ(o.measured.d2h_pageable_bytes, 3 * shard_bytes);
  EXPECT_EQ(o.measured.peak_pageable_bytes, shard_bytes);
  EXPECT_EQ(o.measured.peak_pinned_bytes, std::bit_ceil(shard_bytes));
  EXPECT_EQ(o.model.peak_pinned_bytes, std::bit_ceil(shard_bytes));
  EXPECT_EQ(o.model.d2h_pageable_bytes, 3 * shard_bytes);
  // cpu-add, the idealised value, keeps its exact pinned bytes and copies nothing pageable.
  CasePlan ideal = plan_of(layout, "SSSS", "data-free", "flag", "fp32-fp32-fp32");
  ideal.strategy.offload = "cpu-add";
  const auto c = run_two_steps(*be, ideal);
  EXPECT_EQ(c.measured.d2h_pageable_bytes, 0u);
  EXPECT_EQ(c.measured.peak_pageable_bytes, 0u);
  EXPECT_EQ(c.measured.peak_pinned_bytes, 2 * shard_bytes);  // saved + one staging
}

/// One call as issued: "gen", "d2h", "d2h-pageable", "host-wait", "task", "cpu-add" (with the
/// CPU add threads and split set then and whether it ran inside a host task).
struct Op {
  std::string what;
  bool in_task = false;
  int threads = 0;
  CpuAddSplit split = CpuAddSplit::blocks;
};

class RecordingRank final : public testing::ForwardingRank {
 public:
  RecordingRank(RankBackend& inner, std::vector<Op>& ops) : ForwardingRank(inner), ops_(ops) {}
  void generate(Buffer& g, const GradKey& k, bool acc, Stream s) override {
    ops_.push_back({"gen"});
    in_.generate(g, k, acc, s);
  }
  void copy(Buffer& d, const Buffer& s, Stream st) override {
    if (d.space() == MemSpace::pageable_host) ops_.push_back({"d2h-pageable"});
    if (d.space() == MemSpace::pinned_host) ops_.push_back({"d2h"});
    in_.copy(d, s, st);
  }
  void host_wait(Event e) override {
    ops_.push_back({"host-wait"});
    in_.host_wait(e);
  }
  void set_cpu_add_threads(int n) override {
    threads_ = n;
    in_.set_cpu_add_threads(n);
  }
  void set_cpu_add_split(CpuAddSplit s) override {
    split_ = s;
    in_.set_cpu_add_split(s);
  }
  void add(Buffer& d, const Buffer& s, MemSpace sp, Stream st) override {
    if (sp == MemSpace::pinned_host) ops_.push_back({"cpu-add", in_task_, threads_, split_});
    in_.add(d, s, sp, st);
  }
  // The host backend runs a task at once: what the task calls is recorded as inside it.
  void host_task(Event e, std::function<void()> t) override {
    ops_.push_back({"task"});
    in_task_ = true;
    in_.host_task(e, [&, t = std::move(t)] { t(); });
    in_task_ = false;
  }
  void begin_step() override {
    ops_.clear();  // the last step's calls only
    in_.begin_step();
  }

 private:
  std::vector<Op>& ops_;
  bool in_task_ = false;
  int threads_ = 0;
  CpuAddSplit split_ = CpuAddSplit::blocks;
};

/// The calls of the last step of `offload` on two units, schedule SS at world 1, --host-threads 3.
std::string last_step_of(const char* offload, std::vector<Op>& ops) {
  testing::WrappedBackend be(
      1, [&](RankBackend& r) { return std::make_unique<RecordingRank>(r, ops); });
  CasePlan plan = plan_of(make_layout({40, 24}), "SS", "data-free", "flag", "fp32-fp32-fp32");
  plan.schedule = parse_schedule("SS", 2);
  plan.strategy.offload = offload;
  plan.host_threads = 3;
  EXPECT_TRUE(run_two_steps(be, plan).correct);
  std::string s;
  for (const Op& o : ops) s += (s.empty() ? "" : " ") + o.what + (o.in_task ? "(task)" : "");
  return s;
}

TEST(PageableOffload, LaterSyncAddsOnTheIssuingThreadBeforeTheNextBackward) {
  std::vector<Op> ops;
  const std::string seq = last_step_of("cpu-add-pageable", ops);
  // Micro-batch 0: each unit's first S is a plain D2H into pinned memory; micro-batch 1: a
  // blocking pageable D2H (the host waits for it), then the CPU add outside any host task, all
  // before the next unit's backward. The step ends with finalize's divisions, host tasks.
  EXPECT_EQ(seq.substr(0, seq.find(" task")),
            "gen d2h gen d2h gen d2h-pageable host-wait cpu-add gen d2h-pageable host-wait cpu-add")
      << seq;
  int adds = 0;
  for (const Op& o : ops)
    if (o.what == "cpu-add" && !o.in_task) {
      ++adds;
      EXPECT_EQ(o.threads, 3);
      EXPECT_EQ(o.split, CpuAddSplit::torch);  // FSDP2's `+=` is PyTorch's at::parallel_for
    }
  EXPECT_EQ(adds, 2);
  // The idealised cpu-add runs the same add as a host task, beside the next unit's issue, with
  // the rank's share of threads and the suite's own split.
  std::vector<Op> ideal;
  const std::string c = last_step_of("cpu-add", ideal);
  EXPECT_NE(c.find("task cpu-add(task) gen"), std::string::npos) << c;
  for (const Op& o : ideal)
    if (o.what == "cpu-add") {
      EXPECT_EQ(o.split, CpuAddSplit::blocks);
    }
}

TEST(PageableOffload, HostThreadsReachesThePlanAndRefusesBadValues) {
  const MatrixAxes a =
      resolve_axes(parsed({"--offload", "cpu-add-pageable", "--host-threads", "1"}), "uniform:2x4",
                   2, 1024, false);
  const std::vector<CaseSpec> cases = build_matrix(a);
  ASSERT_FALSE(cases.empty());
  for (const CaseSpec& c : cases) EXPECT_EQ(c.plan().host_threads, 1) << c.name();
  for (const char* bad : {"-1", "x", "1.5", "99999999999"}) {
    std::string m;
    try {
      parsed({"--host-threads", bad});
    } catch (const CliError& e) {
      m = e.what();
    }
    EXPECT_NE(m.find("--host-threads"), std::string::npos) << bad << ": " << m;
    EXPECT_NE(m.find("auto"), std::string::npos) << bad << ": " << m;
  }
}

/// The cases of `flags` at world size `world` on uniform:2x4 (every schedule).
std::vector<CaseSpec> cases_of(std::vector<std::string> flags, int world) {
  flags.insert(flags.end(), {"--world-size", std::to_string(world)});
  return build_matrix(resolve_axes(parsed(flags), "uniform:2x4", 1, 1024, false));
}

TEST(PageableOffload, HostThreadsAutoGivesFsdp2TorchrunsOneThreadWhenRanksShareTheNode) {
  // torchrun sets OMP_NUM_THREADS=1 when it starts more than one process on a node
  // (torch/distributed/run.py 849-861, docs/PRESETS.md F3): the fsdp2 preset's CPU add then runs
  // on one intra-op thread. Alone on its node it keeps the rank's share (0).
  EXPECT_EQ(parsed({}).host_threads, kHostThreadsAuto);
  EXPECT_EQ(parsed({"--host-threads", "auto"}).host_threads, kHostThreadsAuto);
  for (const int world : {2, 4}) {
    const std::vector<CaseSpec> cases = cases_of({"--preset", "fsdp2"}, world);
    ASSERT_FALSE(cases.empty());
    for (const CaseSpec& c : cases) {
      EXPECT_EQ(c.plan().host_threads, 1) << c.name();
      EXPECT_EQ(c.host_threads_setting(), "host threads 1 (torchrun)") << c.name();
    }
  }
  for (const CaseSpec& c : cases_of({"--preset", "fsdp2"}, 1)) {
    EXPECT_EQ(c.plan().host_threads, 0) << c.name();
    EXPECT_EQ(c.host_threads_setting(), "host threads rank's share") << c.name();
    // With the backend's share (Backend::host_add_threads) the label gives its number.
    EXPECT_EQ(c.host_threads_setting(make_host_backend({1, 3})->host_add_threads()),
              "host threads 3 (the rank's share)")
        << c.name();
  }
  // Given, it is what every case runs with, the preset's too.
  for (const char* given : {"0", "3"})
    for (const CaseSpec& c : cases_of({"--preset", "fsdp2", "--host-threads", given}, 2)) {
      EXPECT_EQ(c.plan().host_threads, std::stoi(given)) << c.name();
      EXPECT_EQ(c.host_threads_setting(),
                std::string(given) == "0" ? "host threads rank's share" : "host threads 3")
          << c.name();
    }
  // The same offload in a combination of no preset launched by torchrun keeps the rank's share.
  for (const CaseSpec& c :
       cases_of({"--offload", "cpu-add-pageable", "--binding", "data", "--mode", "shape"}, 2)) {
    EXPECT_EQ(c.plan().host_threads, 0) << c.name();
  }
  // An offload whose adds do not take --host-threads says nothing of them.
  for (const CaseSpec& c : cases_of({"--preset", "zero3"}, 2))
    EXPECT_EQ(c.host_threads_setting(), "") << c.name();
}

}  // namespace
}  // namespace shardaccum
