// The trace collector on its own: thread safety, the Chrome/Perfetto JSON it writes, the
// per-thread scope that NVTX ranges record through, and the GPU-activity window sums (no CUPTI).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "profiling/gpu_activity.hpp"
#include "profiling/nvtx.hpp"
#include "profiling/trace.hpp"

using namespace shardaccum;
using trace::Clock;

namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/shardaccum_trace_" + std::to_string(getpid()) + "_" + name;
}

nlohmann::json load(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST(TraceRecorder, ConcurrentAddsFromRankThreadsAreAllWritten) {
  trace::TraceRecorder rec;
  constexpr int kThreads = 8, kEach = 500;
  std::vector<std::thread> ts;
  for (int r = 0; r < kThreads; ++r)
    ts.emplace_back([&, r] {
      trace::ThreadTraceScope scope(&rec, r, "case-" + std::to_string(r));
      for (int i = 0; i < kEach; ++i) {
        const auto t0 = Clock::now();
        trace::current()->complete(trace::track::kCopy, "d2h", "copy", t0,
                                   t0 + std::chrono::microseconds(3), {{"bytes", 8}});
      }
    });
  for (auto& t : ts) t.join();
  ASSERT_EQ(rec.size(), static_cast<size_t>(kThreads * kEach));

  const std::string path = temp_path("concurrent.json");
  rec.write_chrome_trace(path);
  const nlohmann::json doc = load(path);
  std::filesystem::remove(path);
  std::map<int, int> per_pid;
  std::map<int, std::string> process_names;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == "X") {
      ++per_pid[e.at("pid").get<int>()];
      EXPECT_EQ(e.at("args").at("case"), "case-" + std::to_string(e.at("pid").get<int>()));
      EXPECT_EQ(e.at("args").at("bytes"), 8);
      EXPECT_NEAR(e.at("dur").get<double>(), 3.0, 1e-9);
    } else if (e.at("ph") == "M" && e.at("name") == "process_name") {
      process_names[e.at("pid").get<int>()] = e.at("args").at("name");
    }
  }
  for (int r = 0; r < kThreads; ++r) {
    EXPECT_EQ(per_pid[r], kEach);
    EXPECT_EQ(process_names[r], "rank " + std::to_string(r));
  }
}

TEST(TraceRecorder, WritesTracksInOrderWithMetadataAndSortedEvents) {
  trace::TraceRecorder rec;
  rec.set_metadata("time_domain", "host wall-clock");
  const auto t0 = rec.origin();
  using std::chrono::microseconds;
  rec.add_complete(0, "gpu stream 7", "k", "kernel", t0 + microseconds(5), t0 + microseconds(6));
  rec.add_complete(0, trace::track::kCopy, "d2h", "copy", t0 + microseconds(4),
                   t0 + microseconds(5));
  rec.add_complete(0, trace::track::kPhases, "backward", "phase", t0 + microseconds(1),
                   t0 + microseconds(2));
  rec.add_complete(0, trace::track::kPhases, "step 1 x", "step", t0 + microseconds(1),
                   t0 + microseconds(9));
  const std::string path = temp_path("tracks.json");
  rec.write_chrome_trace(path);
  const nlohmann::json doc = load(path);
  std::filesystem::remove(path);
  EXPECT_EQ(doc.at("otherData").at("time_domain"), "host wall-clock");
  EXPECT_EQ(doc.at("displayTimeUnit"), "ms");
  std::map<int, std::string> threads;
  std::vector<std::string> phase_order;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      threads[e.at("tid")] = e.at("args").at("name");
    if (e.at("ph") == "X" && e.at("cat") != "kernel" && e.at("cat") != "copy")
      phase_order.push_back(e.at("name"));
  }
  // The suite's tracks first in reading order, then the others; tids from 1.
  EXPECT_EQ(threads,
            (std::map<int, std::string>{{1, "phases"}, {2, "copy stream"}, {3, "gpu stream 7"}}));
  // Same start: the longer (enclosing) event first, so viewers stack them.
  EXPECT_EQ(phase_order, (std::vector<std::string>{"step 1 x", "backward"}));
  // No temporary file left beside the trace.
  for (const auto& f : std::filesystem::directory_iterator(::testing::TempDir()))
    EXPECT_EQ(f.path().string().find("tracks.json.tmp"), std::string::npos) << f.path();
}

TEST(TraceRecorder, UnwritableDirectoryIsAnErrorNamingTheFile) {
  trace::TraceRecorder rec;
  try {
    rec.write_chrome_trace("/nonexistent-dir-shardaccum/t.json");
    FAIL() << "expected TraceError";
  } catch (const trace::TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir-shardaccum/t.json"), std::string::npos)
        << e.what();
  }
}

TEST(TraceScope, NvtxRangesRecordNestedPhaseEventsOnlyInsideAScope) {
  trace::TraceRecorder rec;
  {
    nvtx::ScopedRange outside("step 0 none", 0);  // no scope: nothing recorded
  }
  EXPECT_EQ(rec.size(), 0u);
  EXPECT_EQ(trace::current(), nullptr);
  {
    trace::ThreadTraceScope scope(&rec, 3, "accum/x");
    ASSERT_NE(trace::current(), nullptr);
    nvtx::ScopedRange step("step 1 accum/x", 3);
    {
      nvtx::ScopedRange mb("micro-batch 0 S", 3);
      nvtx::ScopedRange unit("unit 0 a", 3);
      nvtx::PhaseRange ph(Phase::reduce_scatter, 4096, 3);
    }
    {
      trace::ThreadTraceScope off(nullptr, 3, "");  // a null recorder switches recording off
      nvtx::PhaseRange ignored(Phase::finalize, 1, 3);
    }
    ASSERT_NE(trace::current(), nullptr);  // the outer scope is current again
  }
  EXPECT_EQ(trace::current(), nullptr);
  const auto evs = rec.events();
  ASSERT_EQ(evs.size(), 4u);
  std::map<std::string, trace::TraceEvent> by_cat;
  for (const auto& e : evs) {
    EXPECT_EQ(e.pid, 3);
    EXPECT_EQ(e.track, "phases");
    EXPECT_EQ(e.args.at("case"), "accum/x");
    by_cat[e.category] = e;
  }
  ASSERT_EQ(by_cat.size(), 4u);
  EXPECT_EQ(by_cat["phase"].name, "reduce_scatter");
  EXPECT_EQ(by_cat["phase"].args.at("bytes"), 4096);
  EXPECT_EQ(by_cat["step"].name, "step 1 accum/x");
  const auto inside = [](const trace::TraceEvent& in, const trace::TraceEvent& out) {
    return in.start_us >= out.start_us &&
           in.start_us + in.duration_us <= out.start_us + out.duration_us + 1e-6;
  };
  EXPECT_TRUE(inside(by_cat["phase"], by_cat["unit"]));
  EXPECT_TRUE(inside(by_cat["unit"], by_cat["micro-batch"]));
  EXPECT_TRUE(inside(by_cat["micro-batch"], by_cat["step"]));
}

TEST(TraceScope, CarriesATargetIntoAnotherThread) {
  trace::TraceRecorder rec;
  trace::ThreadTraceScope scope(&rec, 1, "c");
  const trace::ThreadTrace captured = *trace::current();
  std::thread([captured] {
    trace::ThreadTraceScope s(captured);
    const auto t = Clock::now();
    trace::current()->complete(trace::track::kHost, "cpu_add", "add", t, t);
  }).join();
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec.events()[0].pid, 1);
  EXPECT_EQ(rec.events()[0].track, "host tasks");
}

namespace ga = shardaccum::gpu_activity;

TEST(GpuActivity, KernelNamesAreClassifiedByTheDocumentedPatterns) {
  EXPECT_EQ(ga::classify_kernel("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL"),
            ga::KernelClass::nccl);
  EXPECT_EQ(ga::classify_kernel("_Z29ncclDevKernel_ReduceScatter_Sumv"), ga::KernelClass::nccl);
  EXPECT_EQ(ga::classify_kernel("_Z15generate_kernelPvm7GradKeyb"), ga::KernelClass::generate);
  EXPECT_EQ(ga::classify_kernel("_Z10add_kernelPvPKvm"), ga::KernelClass::accumulate);
  EXPECT_EQ(ga::classify_kernel("_ZN10shardaccum17accumulate_kernelEPfPKfm"),
            ga::KernelClass::accumulate);
  EXPECT_EQ(ga::classify_kernel("_Z12check_kernelPKvmm9OracleKey"), ga::KernelClass::other);
  // The cuda backend's kernels as CUPTI names them (templates in an anonymous namespace).
  EXPECT_EQ(
      ga::classify_kernel("_ZN10shardaccum4cuda12_GLOBAL__N_115generate_kernelILNS_5DTypeE0ELb1EE"
                          "EvPvmNS_7GradKeyEb"),
      ga::KernelClass::generate);
  EXPECT_EQ(
      ga::classify_kernel("_ZN10shardaccum4cuda12_GLOBAL__N_110add_kernelILNS_5DTypeE0ELS2_0ELb0E"
                          "Lb1EEEvPvPKvm"),
      ga::KernelClass::accumulate);
  EXPECT_EQ(
      ga::classify_kernel("_ZN10shardaccum4cuda12_GLOBAL__N_112check_kernelILNS_5DTypeE0EEEvPKvm"
                          "mNS_9OracleKeyEPKm"),
      ga::KernelClass::other);
  ga::KernelPatterns custom;
  custom.accumulate_substrings = {"fused_rs_add"};
  EXPECT_EQ(ga::classify_kernel("_Z10add_kernelPvPKvm", custom), ga::KernelClass::other);
  EXPECT_EQ(ga::classify_kernel("fused_rs_add_bf16", custom), ga::KernelClass::accumulate);
}

TEST(GpuActivity, WindowSumsOnlyThatDeviceAndRecordsStartingInside) {
  using K = ga::ActivityRecord::Kind;
  const auto copy = [](int dev, ga::CopyKind k, uint64_t bytes, uint64_t s, uint64_t e) {
    ga::ActivityRecord r;
    r.kind = K::memcpy;
    r.copy = k;
    r.device = dev;
    r.bytes = bytes;
    r.start_ns = s;
    r.end_ns = e;
    return r;
  };
  const auto kernel = [](int dev, const char* name, uint64_t s, uint64_t e) {
    ga::ActivityRecord r;
    r.kind = K::kernel;
    r.device = dev;
    r.name = name;
    r.start_ns = s;
    r.end_ns = e;
    return r;
  };
  const std::vector<ga::ActivityRecord> recs = {
      copy(0, ga::CopyKind::h2d, 100, 999, 1500),    // before the window (ceiling, oracle)
      copy(0, ga::CopyKind::h2d, 1000, 1000, 3000),  // window start is inclusive
      copy(0, ga::CopyKind::d2h, 2000, 1500, 2500),
      copy(0, ga::CopyKind::d2d, 64, 1600, 1700),
      copy(1, ga::CopyKind::d2h, 7, 1500, 2500),  // another device
      kernel(0, "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", 1100, 2100),
      kernel(0, "_Z15generate_kernelPvm7GradKeyb", 1200, 1700),
      kernel(0, "_Z10add_kernelPvPKvm", 1300, 1550),
      kernel(0, "_Z12check_kernelPKvmm9OracleKey", 4000, 5000),  // window end is exclusive
  };
  const ga::WindowTotals w = ga::sum_window(recs, 0, 1000, 4000);
  EXPECT_EQ(w.h2d_bytes, 1000u);
  EXPECT_EQ(w.d2h_bytes, 2000u);
  EXPECT_EQ(w.d2d_bytes, 64u);
  EXPECT_DOUBLE_EQ(w.h2d_ms, 2000e-6);
  EXPECT_DOUBLE_EQ(w.d2h_ms, 1000e-6);
  EXPECT_DOUBLE_EQ(w.nccl_ms, 1000e-6);
  EXPECT_EQ(w.nccl_kernels, 1u);
  EXPECT_DOUBLE_EQ(w.generate_ms, 500e-6);
  EXPECT_DOUBLE_EQ(w.accumulate_ms, 250e-6);
  EXPECT_EQ(w.other_kernel_ms, 0.0);
  ASSERT_EQ(w.records.size(), 6u);
  for (size_t i = 1; i < w.records.size(); ++i)
    EXPECT_LE(w.records[i - 1].start_ns, w.records[i].start_ns);

  // Into the trace: mapped onto the trace clock, on the tracks the backend names.
  trace::TraceRecorder rec;
  const trace::ThreadTrace tt{&rec, 0, "c"};
  ga::ClockMap clock;
  clock.offset_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(rec.origin().time_since_epoch()).count();
  ga::append_to_trace(tt, w.records, clock, [](uint32_t) { return std::string("copy stream"); });
  const auto evs = rec.events();
  ASSERT_EQ(evs.size(), 6u);
  EXPECT_NEAR(evs[0].start_us, 1.0, 1e-6);  // 1000 ns after the origin
  EXPECT_EQ(evs[0].name, "memcpy HtoD");
  EXPECT_EQ(evs[0].args.at("bytes"), 1000);
  std::set<std::string> names;
  for (const auto& e : evs) names.insert(e.name);
  EXPECT_TRUE(names.count("generate_kernel(void*, unsigned long, GradKey, bool)")) << "demangled";
}

TEST(GpuActivity, CuptiMarkersBecomeNvtxEventsPerThread) {
  trace::TraceRecorder rec;
  const trace::ThreadTrace tt{&rec, 1, "c"};
  ga::ClockMap clock;
  clock.offset_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(rec.origin().time_since_epoch()).count();
  const auto marker = [](uint32_t thread, const char* name, uint64_t t0, uint64_t t1) {
    ga::ActivityRecord m;
    m.kind = ga::ActivityRecord::Kind::marker;
    m.thread = thread;
    m.name = name;
    m.domain = "shardaccum";
    m.start_ns = t0;
    m.end_ns = t1;
    return m;
  };
  ga::append_markers_to_trace(tt,
                              {marker(7, "step 1 x", 1000, 9000), marker(7, "backward", 2000, 3000),
                               marker(8, "cpu_add", 4000, 5000), marker(7, "open", 6000, 0)},
                              clock);
  const auto evs = rec.events();
  ASSERT_EQ(evs.size(), 3u) << "a marker without an end is skipped";
  std::set<std::string> tracks;
  for (const auto& e : evs) tracks.insert(e.track);
  EXPECT_EQ(tracks,
            (std::set<std::string>{"NVTX via CUPTI, thread 7", "NVTX via CUPTI, thread 8"}));
  EXPECT_NEAR(evs[0].start_us, 1.0, 1e-6);
  EXPECT_NEAR(evs[0].duration_us, 8.0, 1e-6);
  EXPECT_EQ(evs[0].pid, 1);
  EXPECT_EQ(evs[1].args.at("domain"), "shardaccum");
}

TEST(GpuActivity, NsightSystemsIsDetectedFromItsEnvironment) {
  std::map<std::string, std::string> env;
  const auto get = [&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_EQ(ga::other_profiler_reason(get), "");
  env["NSYS"] = "/opt/nvidia/nsys";  // profile.sh's own variables are not nsys running
  env["NSYS_DEPS"] = "/tmp/deps";
  env["CUDA_INJECTION64_PATH"] = "/usr/local/cuda/lib64/libcupti.so";
  EXPECT_EQ(ga::other_profiler_reason(get), "");
  env["CUDA_INJECTION64_PATH"] =
      "/opt/nvidia/nsight-systems/target-linux-x64/libToolsInjection64.so";
  EXPECT_NE(ga::other_profiler_reason(get).find("CUDA_INJECTION64_PATH"), std::string::npos);
  env.erase("CUDA_INJECTION64_PATH");
  env["NSYS_PROFILING_SESSION_ID"] = "7";
  EXPECT_NE(ga::other_profiler_reason(get).find("NSYS_PROFILING_SESSION_ID"), std::string::npos);
}
