// The strategies' events on a cuda rank (record, wait, host_wait: alive for their step and the
// next) and any_rank, the agreement of every rank.
#include "strategies/backend/cuda_rank.hpp"

#include "common/errors.hpp"
#include "strategies/backend/cuda_world.hpp"

namespace shardaccum::cuda {

Event CudaRank::record(Stream s) {
  set_device(device_);
  Lock l(mu_);
  size_t slot;
  if (!user_free_.empty()) {
    slot = user_free_.back();
    user_free_.pop_back();
  } else {
    slot = user_events_.size();
    user_events_.emplace_back(false);
  }
  SA_CUDA_CHECK(cudaEventRecord(user_events_[slot].get(), stream(s)));
  const uint64_t id = ++next_event_id_;
  user_live_.emplace(id, UserEvent{slot, step_seq_});
  return Event{id};
}

cudaEvent_t CudaRank::user_event(Event e, const char* op) {
  auto it = user_live_.find(e.id);
  if (it == user_live_.end())
    throw BackendError(who(op) + ": event " + std::to_string(e.id) +
                       " is unknown or expired (an event lives for its step and the next)");
  return user_events_[it->second.slot].get();
}

void CudaRank::wait(Stream waiter, Event e) {
  if (e.id == 0) return;  // a default Event: nothing was recorded
  set_device(device_);
  Lock l(mu_);
  SA_CUDA_CHECK(cudaStreamWaitEvent(stream(waiter), user_event(e, "wait"), 0));
}

void CudaRank::host_wait(Event e) {
  if (e.id == 0) return;
  cudaEvent_t ev;
  {
    Lock l(mu_);
    ev = user_event(e, "host_wait");
  }
  wait_event(ev, on_worker() ? nullptr : comm_.get(), policy(), who("host_wait"));
}

bool CudaRank::host_ready(Event e) {
  if (e.id == 0) return true;
  cudaEvent_t ev;
  {
    Lock l(mu_);
    ev = user_event(e, "host_ready");
  }
  const cudaError_t r = cudaEventQuery(ev);
  if (r == cudaSuccess) return true;
  if (r != cudaErrorNotReady) throw_cuda(r, "cudaEventQuery", __FILE__, __LINE__);
  return false;
}

int CudaRank::local_index() const { return rank_ - world_.rank_base(); }

bool CudaRank::any_rank(bool mine) {
  const bool any = world_.host_any(local_index(), mine, policy(), who("any_rank"));
  return link_ ? link_->any(any, policy(), who("any_rank across processes")) : any;
}

}  // namespace shardaccum::cuda
