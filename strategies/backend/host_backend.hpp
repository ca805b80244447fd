#pragma once
// The host backend (docs/DESIGN.md §4): ranks are threads; the reduce-scatter sums over shared
// memory. Each memory space is its own arena with current and peak accounting; new and freed
// buffers are poisoned with NaN; an operation given an operand from the wrong space fails. It is
// the reference semantics of every backend, the backend of the CPU-only tests and CI, and the
// fallback of the main job on a machine with no GPU. Its times are host wall-clock times, never GPU
// times.
#include <memory>

#include "strategies/backend/backend.hpp"

namespace shardaccum {

struct HostBackendOptions {
  int world_size = 2;
  int add_threads = 1;  // OpenMP threads per rank for adds, generate and the oracle
};

/// Throws std::invalid_argument naming --world-size when world_size < 1 or > 1024.
std::unique_ptr<Backend> make_host_backend(const HostBackendOptions& opts);

}  // namespace shardaccum
