#pragma once
// NVTX ranges in domain `shardaccum` (DESIGN.md §6): step > micro-batch > unit > phase.
// Without an attached tool (nsys, CUPTI) every range costs a branch; without the NVTX3 headers
// at build time they compile to nothing.
#include <cstdint>

#include "strategies/backend/backend.hpp"

namespace shardaccum::nvtx {

/// A push/pop range named by a phase, with the bytes it moves as payload (0 for none).
class PhaseRange {
 public:
  PhaseRange(Phase p, uint64_t bytes, int rank);
  ~PhaseRange();
  PhaseRange(const PhaseRange&) = delete;
  PhaseRange& operator=(const PhaseRange&) = delete;
};

/// A push/pop range with a free-form message ("step 1 <case name>", "mb 2 S", "unit 7 layers.6").
class ScopedRange {
 public:
  ScopedRange(const char* message, int rank);
  ~ScopedRange();
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};

}  // namespace shardaccum::nvtx
