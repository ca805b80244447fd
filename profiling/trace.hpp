#pragma once
// The built-in trace collector (docs/DESIGN.md §7): complete events per rank and track, written as
// Perfetto / Chrome trace JSON ("traceEvents" with "ph":"X" events and "M" metadata naming each
// process "rank N" and each track). Sources: NVTX phase ranges (profiling/nvtx.hpp, track
// "phases"), the host backend's ops (tracks of their streams, "host tasks"), and on the cuda
// backend the CUPTI activity records (profiling/cupti_collector.hpp).
//
// Recording is opt-in per thread: a ThreadTraceScope makes a recorder current for the calling
// thread (a rank's thread). Without one, every instrumented site costs one thread-local load.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/streams.hpp"

namespace shardaccum::trace {

/// The trace's clock: the host's steady clock (host backend ops and NVTX ranges are timed on it;
/// GPU activity is mapped onto it by the CUPTI collector).
using Clock = std::chrono::steady_clock;

/// Track (thread) names used by the suite; one track per name within a rank's process.
namespace track {
inline constexpr const char* kPhases = "phases";  // NVTX ranges: step > micro-batch > unit > phase
inline constexpr const char* kHost = "host tasks";  // the CPU's work (CPU add, host scale)
inline constexpr const char* kCompute = "compute stream";
inline constexpr const char* kComm = "comm stream";
inline constexpr const char* kCopy = "copy stream";
inline constexpr const char* kH2d = "h2d stream";  // the pipelined offloads' second copy stream
/// A rank's steps as its GPU work and host tasks span them, first to last (cat kGpuStepCategory).
inline constexpr const char* kGpuStep = "step";
/// The category of a backend op on its stream track, and of the step's span over them.
inline constexpr const char* kGpuOpCategory = "gpu op";
inline constexpr const char* kGpuStepCategory = "gpu step";
/// The track of a rank's stream (docs/DESIGN.md §2).
const char* of(Stream s);
}  // namespace track

/// One complete event ("ph":"X").
struct TraceEvent {
  int pid = 0;             // the rank (one trace process per rank)
  std::string track;       // the thread/track name within the rank, e.g. "copy stream"
  std::string name;        // e.g. "d2h", "step 1 accum/...", "micro-batch 0 S"
  std::string category;    // "step", "micro-batch", "unit", "phase", or the op ("copy", "add", ...)
  double start_us = 0;     // start, microseconds since the recorder's origin
  double duration_us = 0;  // duration, microseconds
  nlohmann::json args = nlohmann::json::object();  // e.g. {"bytes": 4096, "case": "accum/..."}
};

/// Thrown when a trace file cannot be written; the message names the file and the reason.
struct TraceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Collects complete events from any number of threads (thread-safe) and writes them out.
class TraceRecorder {
 public:
  /// The origin (time 0 of the trace) is the moment of construction.
  TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;
  ~TraceRecorder() = default;

  Clock::time_point origin() const { return origin_; }
  /// Microseconds from the origin to `t` (negative before the origin).
  double to_us(Clock::time_point t) const;

  /// Adds one event. Thread-safe.
  void add(TraceEvent e);
  /// Adds a complete event from two time points of the trace clock. Thread-safe.
  void add_complete(int pid, std::string_view track, std::string_view name,
                    std::string_view category, Clock::time_point begin, Clock::time_point end,
                    nlohmann::json args = nlohmann::json::object());

  /// A key of the trace's "otherData" (e.g. "time_domain": "host wall-clock"). Thread-safe.
  void set_metadata(const std::string& key, nlohmann::json value);

  /// Steps numbered below `first` are not recorded (the warm-up steps of each case, which the
  /// bench numbers 0..warmup-1). Default 0: every step.
  void set_first_recorded_step(uint32_t first) { first_step_ = first; }
  /// At most `count` steps from the first recorded one (0: no limit), e.g. 1 for the step the
  /// report draws: the trace of a whole matrix then stays a few MB.
  void set_recorded_step_count(uint32_t count) { step_count_ = count; }
  /// Whether step number `step` of a case is to be recorded.
  bool records_step(uint32_t step) const {
    return step >= first_step_ && (step_count_ == 0 || step - first_step_ < step_count_);
  }

  /// Events kept at most (about 3 GB in memory); later ones are counted in otherData.
  static constexpr size_t kMaxEvents = 2'000'000;

  /// An event that could not be recorded (out of memory while building it): counted, and written
  /// as otherData's lost_events, so a trace with holes says so. Thread-safe.
  void lost_event() noexcept { lost_.fetch_add(1, std::memory_order_relaxed); }

  /// Number of events so far. Thread-safe.
  size_t size() const;
  /// A copy of the events so far, in the order they were added. Thread-safe.
  std::vector<TraceEvent> events() const;

  /// Writes the Chrome/Perfetto trace JSON to `path` through a temporary file in the same
  /// directory and a rename, so `path` is never half-written. Events are sorted per track by
  /// start time (longest first on ties) so nested ranges appear as a stack. Throws TraceError.
  void write_chrome_trace(const std::string& path) const;

 private:
  Clock::time_point origin_;
  std::atomic<uint32_t> first_step_{0}, step_count_{0};
  uint64_t dropped_ = 0;           // events past kMaxEvents (guarded by mu_)
  std::atomic<uint64_t> lost_{0};  // events lost to an exception while building them
  mutable std::mutex mu_;
  std::vector<TraceEvent> events_;
  nlohmann::json other_ = nlohmann::json::object();
};

/// What a thread records into: the recorder, the rank (trace process), the case whose name and
/// the step whose number every event's args carry ("case", "step").
struct ThreadTrace {
  TraceRecorder* recorder = nullptr;
  int rank = 0;
  std::string case_name;
  uint32_t step = 0;

  /// Records a complete event on `track` of this rank; adds "case" and "step" to `args`. Never
  /// throws (an event that cannot be stored is dropped), so it is safe in destructors.
  void complete(std::string_view track, std::string_view name, std::string_view category,
                Clock::time_point begin, Clock::time_point end,
                nlohmann::json args = nlohmann::json::object()) const noexcept;
};

namespace detail {
inline thread_local const ThreadTrace* tls_current = nullptr;
}

/// The calling thread's trace target, or nullptr when this thread records nothing.
inline const ThreadTrace* current() { return detail::tls_current; }

/// Makes a recorder current for the calling thread until the scope ends (then the previous one,
/// usually none, is current again). A null recorder makes the thread record nothing.
class ThreadTraceScope {
 public:
  ThreadTraceScope(TraceRecorder* recorder, int rank, std::string case_name, uint32_t step = 0);
  /// Carries another thread's target over, e.g. into a backend's host-task worker thread:
  /// `ThreadTraceScope s(captured)` where `captured` is a copy of `*trace::current()`.
  explicit ThreadTraceScope(ThreadTrace target);
  ~ThreadTraceScope();
  ThreadTraceScope(const ThreadTraceScope&) = delete;
  ThreadTraceScope& operator=(const ThreadTraceScope&) = delete;

 private:
  ThreadTrace target_;
  const ThreadTrace* previous_;
};

}  // namespace shardaccum::trace
