#include "strategies/backend/rank_barrier.hpp"

#include <chrono>
#include <cmath>

#include "common/errors.hpp"

namespace shardaccum {

void RankBarrier::reset() {
  std::lock_guard<std::mutex> l(m_);
  members_ = n_;
  arrived_ = 0;
  failed_ = false;
}

void RankBarrier::fail() {
  {
    std::lock_guard<std::mutex> l(m_);
    failed_ = true;
  }
  cv_.notify_all();
}

void RankBarrier::complete_generation() {
  arrived_ = 0;
  ++generation_;
  cv_.notify_all();
}

void RankBarrier::leave() {
  std::lock_guard<std::mutex> l(m_);
  --members_;
  // After a failure no generation completes: a waiter released by a departure would go on into a
  // collective whose other inputs are gone.
  if (!failed_ && members_ > 0 && arrived_ == members_) complete_generation();
}

void RankBarrier::arrive_and_wait(double timeout_s, const std::string& what) {
  std::unique_lock<std::mutex> l(m_);
  if (failed_) throw PeerFailure(what + ": another rank failed");
  const uint64_t gen = generation_;
  if (++arrived_ == members_) {
    complete_generation();
    return;
  }
  const auto passed = [&] { return generation_ != gen || failed_; };
  if (std::isfinite(timeout_s))
    cv_.wait_for(l, std::chrono::duration<double>(timeout_s), passed);
  else
    cv_.wait(l, passed);
  if (generation_ != gen) return;
  --arrived_;  // gone: a later generation (or a departure's count) must not count this arrival
  if (failed_) throw PeerFailure(what + ": another rank failed");
  throw BarrierTimeout(what + ": timed out after " + std::to_string(timeout_s) +
                       " s waiting for the other ranks");
}

bool RankBarrier::any(int slot, bool mine, double timeout_s, const std::string& what) {
  flags_.at(slot) = mine;
  arrive_and_wait(timeout_s, what);
  bool any = false;
  for (char f : flags_) any = any || f;
  arrive_and_wait(timeout_s, what);  // nobody overwrites a flag before every rank has read them
  return any;
}

}  // namespace shardaccum
