// The NVTX hierarchy on a GPU, seen by CUPTI (#5): shardaccum_bench runs with
// NVTX_INJECTION64_PATH naming libcupti, so every NVTX range reaches CUPTI as MARKER records; the
// collector writes them into --trace on "NVTX via CUPTI" tracks, and this test checks that they
// nest step > micro-batch > unit > phase, with h2d/d2h inside the phase that issues them, and that
// CUPTI saw as many steps as the host recorder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "strategies/backend/cuda_backend.hpp"

namespace {

struct Ev {
  std::string track, name;
  double ts, end;
};

bool starts(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

/// Whether some event of `evs` on e's track whose name passes `is` encloses e.
template <class Pred>
bool inside(const Ev& e, const std::vector<Ev>& evs, Pred is) {
  for (const Ev& o : evs)
    if (&o != &e && o.track == e.track && is(o.name) && o.ts <= e.ts + 1e-3 &&
        e.end <= o.end + 1e-3)
      return true;
  return false;
}

TEST(NvtxCupti, MarkerRecordsNestStepMicroBatchUnitPhase) {
  if (shardaccum::cuda_device_count() < 1) GTEST_SKIP() << "no CUDA device visible";
  const std::string trace =
      ::testing::TempDir() + "/shardaccum_cupti_nvtx_" + std::to_string(getpid()) + ".json";
  const std::string err = trace + ".err";
  const std::string cmd =
      std::string("NVTX_INJECTION64_PATH='") + SHARDACCUM_CUPTI_LIBRARY + "' '" +
      SHARDACCUM_BENCH_EXE +
      "' --world-size 1 --model uniform:2x1M --schedule nSnS --preset fsdp2,zero3 "
      "--steps 1 --warmup 0 --ceilings off --trace '" +
      trace + "' >/dev/null 2>'" + err + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << std::ifstream(err).rdbuf();
  std::ifstream in(trace);
  const auto doc = nlohmann::json::parse(in);
  std::map<std::pair<int, int>, std::string> tracks;
  for (const auto& e : doc.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      tracks[{e.at("pid").get<int>(), e.at("tid").get<int>()}] =
          e.at("args").at("name").get<std::string>();
  std::vector<Ev> cupti;
  int host_steps = 0;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    const std::string track = tracks[{e.at("pid").get<int>(), e.at("tid").get<int>()}];
    const std::string name = e.at("name").get<std::string>();
    if (e.value("cat", "") == "nvtx_cupti")
      cupti.push_back({track, name, e.at("ts").get<double>(),
                       e.at("ts").get<double>() + e.at("dur").get<double>()});
    else if (track == "phases" && starts(name, "step "))
      ++host_steps;
  }
  ASSERT_FALSE(cupti.empty()) << "CUPTI delivered no MARKER records (is "
                              << SHARDACCUM_CUPTI_LIBRARY << " the injection?)";
  // Host tasks (a CPU add, the end division's host pass over an offloaded shard) run on worker
  // threads, whose tracks have no step range: the rank's end_step waits for them after its step
  // range has closed, so their ranges nest in nothing there.
  std::set<std::string> issuing_tracks;
  for (const Ev& e : cupti)
    if (starts(e.name, "step ")) issuing_tracks.insert(e.track);
  std::map<std::string, int> count;
  for (const Ev& e : cupti) {
    const std::string kind = starts(e.name, "step ")          ? "step"
                             : starts(e.name, "micro-batch ") ? "micro-batch"
                             : starts(e.name, "unit ")        ? "unit"
                                                              : e.name;
    ++count[kind];
    SCOPED_TRACE(e.track + ": " + e.name);
    if (kind == "micro-batch") {
      EXPECT_TRUE(inside(e, cupti, [](auto& n) { return starts(n, "step "); }));
    }
    if (kind == "unit") {
      EXPECT_TRUE(inside(e, cupti, [](auto& n) { return starts(n, "micro-batch "); }));
    }
    if (kind == "backward" || kind == "reduce_scatter" || kind == "accumulate") {
      EXPECT_TRUE(inside(e, cupti, [](auto& n) { return starts(n, "unit "); }));
    }
    if (kind == "finalize" && issuing_tracks.count(e.track)) {
      EXPECT_TRUE(inside(e, cupti, [](auto& n) { return starts(n, "step "); }));
    }
    if (kind == "h2d" || kind == "d2h") {
      EXPECT_TRUE(inside(e, cupti, [](auto& n) { return n == "accumulate" || n == "finalize"; }));
    }
  }
  EXPECT_EQ(count["step"], host_steps) << "CUPTI and the host recorder saw the same steps";
  EXPECT_EQ(count["step"], 2) << "two cases, one measured step each";
  EXPECT_EQ(count["micro-batch"], 2 * 4);
  EXPECT_EQ(count["unit"], 2 * 4 * 2);
  EXPECT_EQ(count["reduce_scatter"], 2 * 2 * 2) << "nSnS: two syncs of two units per case";
  EXPECT_GT(count["d2h"], 0);
  EXPECT_GT(count["h2d"], 0) << "zero3 (gpu-add) copies the saved shard in";
  EXPECT_GT(count["cpu_add"], 0)
      << "fsdp2 adds on the CPU (cpu-add-pageable: on the issuing thread)";
  std::printf("CUPTI marker ranges by kind:");
  for (const auto& [k, n] : count) std::printf(" %s=%d", k.c_str(), n);
  std::printf("\n");
  std::filesystem::remove(trace);
  std::filesystem::remove(err);
}

}  // namespace
