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
//  - __add_grad_to_ipg_bucket (1621-1644, contiguous_gradients, the stage-3 default): on the
//    reduction stream each gradient is copied into the persistent bucket buffer of
//    reduce_bucket_size elements (allocated once, 780-784) as it arrives, and freed; one that does
//    not fit waits as it is. The flush's reduce_scatter_coalesced (coalesced_collectives.py
//    110-122) interleaves the bucket's gradients into one new buffer with torch.cat, which the
//    division and the reduce-scatter read, freed when the flush is issued.
// The suite buckets whole units (DeepSpeed parameters: a unit's parameters may straddle two
// buckets there) and counts their unpadded elements (param.ds_numel); the bucket buffer holds
// padded gradients in the reduce dtype, min(bucket_elements, every unit's padded elements) of them
// (DeepSpeed's is reduce_bucket_size whatever the model: the difference is a constant term).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>
#include <vector>

#include "strategies/backend/backend.hpp"
#include "strategies/strategy.hpp"  // Lookahead; copy_in.hpp

namespace shardaccum {

/// DeepSpeed's reduce_bucket_size default in elements (deepspeed/runtime/zero/config.py
/// DeepSpeedZeroConfig.reduce_bucket_size = 5e8, 0.19.8).
inline constexpr uint64_t kZero3ReduceBucketElements = 500'000'000;
/// stage3.py's max_param_reduce_events (line 462): pending flushes beyond it make the host wait.
inline constexpr size_t kZero3MaxReduceEvents = 2;

struct UnitGrad;

/// True when a case's gradients are copied into the bucket buffer as they arrive and interleaved
/// at the flush (Lookahead::buckets with the copy-in `none`, DeepSpeed's contiguous_gradients);
/// with another copy-in the reduce-scatter reads what that copy-in gives it. Throws as
/// copy_in_separate for an unregistered copy-in.
inline bool copies_into_bucket(Lookahead ahead, std::string_view copy_in, int world_size) {
  return ahead == Lookahead::buckets && !copy_in_separate(copy_in) &&
         !copy_in_in_place(copy_in, world_size);
}

/// The bucket buffer's elements: the bucket's capacity, or every unit's padded elements when the
/// model has fewer (StepDriver and the model).
constexpr uint64_t bucket_buffer_numel(uint64_t bucket_elements, uint64_t total_padded) {
  return std::min(bucket_elements, total_padded);
}

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
  /// A unit of the open bucket, and where its gradient waits in the bucket buffer (none: as it is).
  struct Entry {
    UnitGrad* unit;
    std::optional<uint64_t> slot;  // offset in the bucket buffer, in elements
  };
  /// Where a gradient of `padded` elements is copied in a bucket buffer of `buffer_numel` elements
  /// (the next free offset), or none when it does not fit (stage3.py 1627's rule on the buffer).
  std::optional<uint64_t> place(uint64_t padded, uint64_t buffer_numel) {
    if (fill_ + padded > buffer_numel) return std::nullopt;
    const uint64_t at = fill_;
    fill_ += padded;
    return at;
  }
  /// `u` joins the open bucket, its gradient at `slot` of the bucket buffer (or as it is).
  void add(UnitGrad& u, uint64_t numel, std::optional<uint64_t> slot = std::nullopt) {
    pending_.push_back({&u, slot});
    elements_ += numel;
  }
  /// The open bucket's units, oldest first; the bucket and its buffer are empty after.
  std::vector<Entry> take() {
    elements_ = 0;
    fill_ = 0;
    std::vector<Entry> out;
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
    fill_ = 0;
    events_.clear();
  }

 private:
  uint64_t capacity_;
  uint64_t elements_ = 0;
  uint64_t fill_ = 0;  // elements of the bucket buffer taken by the open bucket's gradients
  std::vector<Entry> pending_;
  std::deque<Event> events_;
};

}  // namespace shardaccum
