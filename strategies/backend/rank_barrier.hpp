#pragma once
// The rendezvous of the rank threads of one Backend::run, for both backends (host collectives and
// any_rank; the cuda backend's any_rank and ceilings): a rank that fails releases the others,
// which then throw PeerFailure instead of waiting for a rank that will never arrive.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardaccum {

/// A wait at a RankBarrier that passed its timeout: a rank did not arrive (a hang or a rank that
/// issued fewer collectives than the others).
struct BarrierTimeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A reusable barrier of `n` rank threads with failure and departure.
///
/// Thread-safe: arrive_and_wait, any, fail and leave may be called from any rank thread at once;
/// reset only while no thread uses the barrier (before the threads of a run start).
class RankBarrier {
 public:
  /// Wait forever (the host backend: its ranks cannot hang inside a collective).
  static constexpr double kNoTimeout = std::numeric_limits<double>::infinity();

  explicit RankBarrier(int n) : n_(n), members_(n), flags_(n) {}
  /// Before the threads of a run start: every rank a member again, not failed.
  void reset();
  /// A rank failed: every waiter now, and every later arrival, throws PeerFailure.
  void fail();
  bool failed() const { return failed_.load(); }
  /// The failure flag, for waits outside the barrier that poll it (the cuda backend's WaitPolicy).
  const std::atomic<bool>* failed_flag() const { return &failed_; }
  /// A rank that finished its run drops out: later generations wait for one rank fewer (as
  /// std::barrier::arrive_and_drop).
  void leave();
  /// Blocks until every member arrived. Throws PeerFailure("<what>: another rank failed") once
  /// fail() was called, BarrierTimeout after `timeout_s` seconds (kNoTimeout: never).
  void arrive_and_wait(double timeout_s, const std::string& what);
  /// True on every rank if any rank passed true; `slot` is the caller's index in 0..n-1. Two
  /// arrivals, so that no rank overwrites its flag before every rank has read them all.
  bool any(int slot, bool mine, double timeout_s, const std::string& what);

 private:
  std::mutex m_;
  std::condition_variable cv_;
  const int n_;
  int members_, arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<char> flags_;
  std::atomic<bool> failed_{false};

  void complete_generation();  // m_ held
};

}  // namespace shardaccum
