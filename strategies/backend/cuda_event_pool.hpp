#pragma once
// The events a rank records around its operations (timing) and as ordering marks: created once,
// handed out in order, reused from the start once every stream of the rank has drained (recycle).
#include <cstddef>
#include <vector>

#include "strategies/backend/cuda_handles.hpp"

namespace shardaccum::cuda {

/// Events that are reused once every stream of the rank has drained. Not thread-safe: the rank
/// guards it with its mutex.
class EventPool {
 public:
  explicit EventPool(bool timing) : timing_(timing) {}
  /// The next unused event (a new one when all are in use); valid until recycle().
  cudaEvent_t next() {
    if (used_ == events_.size()) events_.emplace_back(timing_);
    return events_[used_++].get();
  }
  /// Every event handed out has completed (the streams drained): hand them out again.
  void recycle() { used_ = 0; }
  size_t size() const { return events_.size(); }

 private:
  bool timing_;
  std::vector<UniqueEvent> events_;
  size_t used_ = 0;
};

}  // namespace shardaccum::cuda
