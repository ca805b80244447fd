#pragma once
// The error types every layer throws and catches (docs/DESIGN.md §4, §7): a backend misuse, an
// error inside a case, a peer's failure, and the rule that reports the root cause.
#include <exception>
#include <stdexcept>
#include <vector>

namespace shardaccum {

/// Thrown by a backend for a misuse the strategies must never commit (wrong space, size, dtype).
struct BackendError : std::logic_error {
  using std::logic_error::logic_error;
};

/// A clear error inside a case (bad operands of a checked add, a strategy misuse). The case ends
/// with this message (Google Benchmark SkipWithError) and the next case runs.
struct AccumulationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Thrown on the ranks that did nothing wrong when another rank failed (agreed before the next
/// collective); the runner reports the failing rank's own message instead.
struct PeerFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// After the rank threads of a Backend::run ended: rethrows the failing rank's own error rather
/// than a peer's PeerFailure (a PeerFailure only when nothing else failed); returns if none.
inline void rethrow_root_cause(const std::vector<std::exception_ptr>& errors) {
  std::exception_ptr first, peer;
  for (const auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const PeerFailure&) {
      if (!peer) peer = e;
    } catch (...) {
      if (!first) first = e;
    }
  }
  if (first) std::rethrow_exception(first);
  if (peer) std::rethrow_exception(peer);
}

}  // namespace shardaccum
