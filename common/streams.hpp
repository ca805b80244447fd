#pragma once
// The streams a rank issues work on, the events that order them, and the phases time is
// attributed to (docs/DESIGN.md §2, §6).
#include <cstdint>

namespace shardaccum {

/// The streams of a rank (docs/DESIGN.md §2). The host backend executes everything in order.
/// `copy` carries every copy but those a value puts on `h2d`, the second copy stream (the
/// pipelined offloads: H2D there while D2H runs on `copy`, one DMA engine per direction).
enum class Stream : uint8_t { compute, comm, copy, h2d };

/// The phases that time is attributed to (NVTX names and JSON counter prefixes).
enum class Phase : uint8_t { backward, reduce_scatter, accumulate, h2d, d2h, cpu_add, finalize };
inline constexpr int kPhaseCount = 7;
inline const char* phase_name(Phase p) {
  constexpr const char* names[kPhaseCount] = {"backward", "reduce_scatter", "accumulate", "h2d",
                                              "d2h",      "cpu_add",        "finalize"};
  return names[static_cast<int>(p)];
}

/// An ordering point on a stream; `wait` makes another stream (or the host) wait for it.
struct Event {
  uint64_t id = 0;
};

}  // namespace shardaccum
