#pragma once
// Lookahead::buckets (docs/PRESETS.md Z1, Z2): DeepSpeed ZeRO-3 reduces gradients a bucket at a
// time, not as each arrives. deepspeed/runtime/zero/stage3.py (0.19.8):
//  - reduce_independent_p_g_buckets_and_remove_grads (1569-1590): a gradient that would overflow
//    the bucket of reduce_bucket_size elements (5e8 by default) flushes the bucket first, then
//    joins it;
//  - __reduce_and_partition_ipg_grads (1648-1695), the flush: on the reduction stream the bucket's
//    reduce-scatter and partition_grads (the offload's copies and add); before it the host waits
//    for the oldest flush's event while more than max_param_reduce_events (2, line 462) are
//    pending (1664-1667);
//  - independent_gradient_partition_epilogue (1407-1414), at the end of every backward: the rest
//    flushed, then the host synchronises the reduction stream.
// The suite buckets whole units (DeepSpeed parameters: a unit's parameters may straddle two
// buckets there) and counts their unpadded elements (param.ds_numel).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "strategies/backend/backend.hpp"

namespace shardaccum {

/// DeepSpeed's reduce_bucket_size default in elements (deepspeed/runtime/zero/config.py
/// DeepSpeedZeroConfig.reduce_bucket_size = 5e8, 0.19.8).
inline constexpr uint64_t kZero3ReduceBucketElements = 500'000'000;
/// stage3.py's max_param_reduce_events (line 462): pending flushes beyond it make the host wait.
inline constexpr size_t kZero3MaxReduceEvents = 2;

struct UnitGrad;

/// stage3.py 1583's rule: a gradient of `numel` elements flushes a bucket holding `held` elements
/// of `capacity` first when the bucket holds something and would overflow (ReduceBuckets and the
/// model).
constexpr bool bucket_overflows(uint64_t held, uint64_t numel, uint64_t capacity) {
  return held > 0 && held + numel > capacity;
}

/// The open bucket of one rank's micro-batch and the events of its earlier flushes.
class ReduceBuckets {
 public:
  explicit ReduceBuckets(uint64_t bucket_elements) : capacity_(bucket_elements) {}

  /// True when a unit of `numel` elements would overflow a bucket that holds something (flush
  /// first, as stage3.py 1583).
  bool overflows(uint64_t numel) const { return bucket_overflows(elements_, numel, capacity_); }
  /// `u` joins the open bucket.
  void add(UnitGrad& u, uint64_t numel) {
    pending_.push_back(&u);
    elements_ += numel;
  }
  /// The open bucket's units, oldest first; the bucket is empty after.
  std::vector<UnitGrad*> take() {
    elements_ = 0;
    std::vector<UnitGrad*> out;
    out.swap(pending_);
    return out;
  }
  /// Before a flush (stage3.py 1663-1667): the completed flushes dropped, then, if more than
  /// kZero3MaxReduceEvents are still pending, the host waits for the oldest.
  void before_flush(RankBackend& be) {
    while (!events_.empty() && be.host_ready(events_.front())) events_.pop_front();
    if (events_.size() > kZero3MaxReduceEvents) {
      be.host_wait(events_.front());
      events_.pop_front();
    }
  }
  /// After a flush: its event, recorded on the stream that ran it.
  void flushed(Event e) { events_.push_back(e); }
  /// The epilogue's synchronisation made every flush complete; also after a failed step.
  void clear() {
    pending_.clear();
    elements_ = 0;
    events_.clear();
  }

 private:
  uint64_t capacity_;
  uint64_t elements_ = 0;
  std::vector<UnitGrad*> pending_;
  std::deque<Event> events_;
};

}  // namespace shardaccum
