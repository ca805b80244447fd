#pragma once
// NVTX ranges in domain `shardaccum` (docs/DESIGN.md §6): step > micro-batch > unit > phase.
// Without an attached tool (nsys, CUPTI) every range costs a branch; without the NVTX3 headers
// at build time they compile to nothing.
//
// When the calling thread has a trace target (profiling/trace.hpp, ThreadTraceScope), every range
// is also recorded as a complete event on the rank's "phases" track of the built-in trace, with
// its bytes as args; otherwise that costs one thread-local load.
#include <cstdint>
#include <string>

#include "common/streams.hpp"
#include "profiling/trace.hpp"

namespace shardaccum::nvtx {

/// A push/pop range named by a phase, with the bytes it moves as payload (0 for none).
/// Trace: name = the phase name, category "phase", args {"bytes"}.
class PhaseRange {
 public:
  /// Where the work is already traced another way (the host task worker's CPU add, drawn on the
  /// "host" track), `trace` false keeps the range out of the "phases" track: it is NVTX only.
  PhaseRange(Phase p, uint64_t bytes, int rank, bool trace = true);
  ~PhaseRange();
  PhaseRange(const PhaseRange&) = delete;
  PhaseRange& operator=(const PhaseRange&) = delete;

 private:
  const trace::ThreadTrace* trace_;  // non-null only while this thread records a trace
  trace::Clock::time_point begin_{};
  uint64_t bytes_;
  Phase phase_;
};

/// A push/pop range with a free-form message ("step 1 <case name>", "micro-batch 2 S",
/// "unit 7 layers.6"). Trace: name = the message, category = its first word ("step",
/// "micro-batch", "unit"; "range" for a message without a space).
class ScopedRange {
 public:
  ScopedRange(const char* message, int rank);
  ~ScopedRange();
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;

 private:
  const trace::ThreadTrace* trace_;
  trace::Clock::time_point begin_{};
  std::string message_;  // copied only while tracing
};

}  // namespace shardaccum::nvtx
