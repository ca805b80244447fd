// The NVTX hierarchy of one host step, seen by an NVTX tool (docs/DESIGN.md §6): shardaccum_bench
// runs with NVTX_INJECTION64_PATH pointing at tests/nvtx_inject's recorder, which writes every
// range push and pop to a file; the test rebuilds each rank thread's tree of ranges from it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Range {
  std::string message;
  uint32_t category = 0;
  std::string payload;
  std::vector<std::unique_ptr<Range>> children;
};

struct Thread {
  std::vector<std::unique_ptr<Range>> roots;
  std::vector<Range*> stack;
  std::set<uint32_t> categories;
  int unbalanced_pops = 0;
};

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> f;
  std::stringstream ss(line);
  std::string x;
  while (std::getline(ss, x, '\t')) f.push_back(x);
  return f;
}

#if defined(SHARDACCUM_NVTX_RECORDER)
std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/shardaccum_nvtx_" + std::to_string(getpid()) + "_" + name;
}
#endif

const char* kCase =
    "accum/model:uniform:2x1000/world:2/schedule:nSnS/binding:data-free/offload:cpu-add/mode:flag/"
    "dtype:fp32-fp32-fp32";

}  // namespace

TEST(NvtxInjection, StepMicroBatchUnitPhaseHierarchyOfOneHostStep) {
#if !defined(SHARDACCUM_NVTX_RECORDER)
  GTEST_SKIP() << "NVTX3 headers were not found at configure time: no NVTX ranges to record";
#else
  const std::string record = temp_path("ranges.tsv");
  const std::string cmd =
      std::string("NVTX_INJECTION64_PATH='") + SHARDACCUM_NVTX_RECORDER +
      "' SHARDACCUM_NVTX_RECORD='" + record + "' '" + SHARDACCUM_BENCH_EXE +
      "' --backend host --model uniform:2x1000 --schedule nSnS --offload cpu-add "
      "--mode flag --binding data-free --steps 1 --warmup 0 >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(record);
  ASSERT_TRUE(in) << "the NVTX recorder wrote nothing to " << record << " (injection not loaded?)";

  std::map<std::string, Thread> threads;  // by thread id; ranges of domain shardaccum only
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    const auto f = split_tabs(line);
    ASSERT_GE(f.size(), 3u) << line;
    if (f[2] != "shardaccum") continue;
    Thread& t = threads[f[1]];
    if (f[0] == "push") {
      ASSERT_EQ(f.size(), 6u) << line;
      auto r = std::make_unique<Range>();
      r->category = static_cast<uint32_t>(std::stoul(f[3]));
      r->payload = f[4];
      r->message = f[5];
      t.categories.insert(r->category);
      Range* raw = r.get();
      (t.stack.empty() ? t.roots : t.stack.back()->children).push_back(std::move(r));
      t.stack.push_back(raw);
    } else {
      ASSERT_EQ(f[0], "pop") << line;
      if (t.stack.empty())
        ++t.unbalanced_pops;
      else
        t.stack.pop_back();
    }
  }
  std::filesystem::remove(record);
  ASSERT_GT(lines, 0);

  // One thread per rank; each pushes with its rank as category; every push is popped.
  ASSERT_EQ(threads.size(), 2u) << "expected one recording thread per rank";
  std::set<uint32_t> ranks;
  for (auto& [tid, t] : threads) {
    EXPECT_EQ(t.unbalanced_pops, 0) << "thread " << tid;
    EXPECT_TRUE(t.stack.empty()) << "thread " << tid << ": " << t.stack.size()
                                 << " ranges never popped";
    ASSERT_EQ(t.categories.size(), 1u)
        << "thread " << tid << ": one category (the rank) per thread";
    ranks.insert(*t.categories.begin());
  }
  EXPECT_EQ(ranks, (std::set<uint32_t>{0, 1}));

  // Bytes: unit numel 1000 on 2 ranks -> padded 1008 fp32 elements (4032 B), shard 504 (2016 B).
  const std::string grad_bytes = "4032", shard_bytes = "2016";
  const std::string schedule = "nSnS";
  for (auto& [tid, t] : threads) {
    SCOPED_TRACE("thread " + tid);
    ASSERT_EQ(t.roots.size(), 1u) << "one step range (--steps 1 --warmup 0)";
    const Range& step = *t.roots[0];
    EXPECT_EQ(step.message, std::string("step 0 ") + kCase)
        << "the step range carries the case name";
    // step > K micro-batches, then the finalize phase of every unit.
    ASSERT_EQ(step.children.size(), schedule.size() + 2);
    for (size_t mb = 0; mb < schedule.size(); ++mb) {
      const Range& m = *step.children[mb];
      EXPECT_EQ(m.message, "micro-batch " + std::to_string(mb) + " " + schedule[mb]);
      // micro-batch > unit (backward visits units last to first) > phase.
      ASSERT_EQ(m.children.size(), 2u) << m.message;
      for (size_t u = 0; u < 2; ++u) {
        const Range& unit = *m.children[u];
        EXPECT_EQ(unit.message, "unit " + std::to_string(1 - u) + " unit" + std::to_string(1 - u));
        std::vector<std::string> phases;
        for (const auto& p : unit.children) {
          phases.push_back(p->message);
          EXPECT_TRUE(p->children.empty()) << "phase " << p->message << " has nested ranges";
        }
        if (schedule[mb] == 'n') {
          EXPECT_EQ(phases, (std::vector<std::string>{"backward"})) << m.message;
        } else {
          EXPECT_EQ(phases, (std::vector<std::string>{"backward", "reduce_scatter", "accumulate"}))
              << m.message;
          if (phases.size() == 3) {
            EXPECT_EQ(unit.children[1]->payload, grad_bytes)
                << "reduce_scatter payload = input bytes";
            EXPECT_EQ(unit.children[2]->payload, shard_bytes) << "accumulate payload = shard bytes";
          }
        }
        if (!unit.children.empty()) {
          EXPECT_EQ(unit.children[0]->payload, grad_bytes) << "backward payload";
        }
      }
    }
    for (size_t i = schedule.size(); i < step.children.size(); ++i) {
      EXPECT_EQ(step.children[i]->message, "finalize");
      EXPECT_EQ(step.children[i]->payload, shard_bytes) << "finalize payload = saved shard bytes";
    }
  }
#endif
}
