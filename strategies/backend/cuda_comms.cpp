// The NCCL communicators of a cuda world: one per rank, non-blocking (every wait bounded), built
// at start and after an abort, finalized at the end or aborted after a failure.
#include "strategies/backend/cuda_world.hpp"

#include <cstdio>
#include <cstring>

#include "strategies/backend/cuda_util.hpp"

namespace shardaccum::cuda {

void CudaWorld::init_comms() {
  ncclUniqueId id;
  if (multi_process()) {
    // The id came through the rendezvous, once: a second communicator would need a second one.
    if (opts_.nccl_id.empty())
      throw NcclError(
          "the communicator of this multi-process launch was aborted after a failure and "
          "cannot be rebuilt without a new rendezvous; relaunch");
    std::memcpy(&id, opts_.nccl_id.data(), sizeof id);
    opts_.nccl_id.clear();
  } else {
    SA_NCCL_CHECK(ncclGetUniqueId(&id));
  }
  const int n = opts_.world_size;
  auto errors = run_ranks([&](int i) {
    const int r = ranks_[i]->rank();
    const std::string who = "rank " + std::to_string(r) + ": ";
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // every NCCL call returns; waits are ours, bounded and abortable
    ncclComm_t c = nullptr;
    const ncclResult_t res = ncclCommInitRankConfig(&c, n, id, r, &config);
    ranks_[i]->set_comm(UniqueComm(c));  // even a failed one: destroy_comms aborts it
    if (res != ncclSuccess && res != ncclInProgress)
      throw_nccl(res, "ncclCommInitRankConfig", __FILE__, __LINE__);
    settle(c, policy(),
           who + "ncclCommInitRankConfig" +
               (multi_process() ? " (waiting for every process of the launch)" : ""));
    if (multi_process()) ranks_[i]->set_link(std::make_unique<ProcessLink>(c, r, n, policy(), who));
  });
  for (const auto& e : errors)
    if (e) {
      destroy_comms(true);
      rethrow_root(errors);
    }
  comms_ok_ = true;
}

void CudaWorld::destroy_comms(bool abort, const std::string& why) noexcept {
  if (abort && multi_process()) {
    abandon(why.empty() ? "communicators aborted after a failure" : why);
    return;
  }
  const WaitPolicy p{std::min(opts_.timeout_s, 60.0), nullptr, heartbeat()};
  auto errors = run_ranks([&](int r) {
    if (!ranks_[r]) return;
    if (ranks_[r]->link()) {
      if (abort) ranks_[r]->link()->abandon();
      ranks_[r]->set_link(nullptr);
    }
    UniqueComm c = ranks_[r]->take_comm();
    if (!c) return;
    const std::string who = "rank " + std::to_string(r);
    if (abort) {
      c.abort(who + ": communicator abort");
      return;
    }
    try {
      c.finalize(p, who);
    } catch (...) {
      c.abort(who + ": abort after a failed finalize");  // held only when finalize itself failed
      throw;                                             // reported below
    }
  });
  for (size_t r = 0; r < errors.size(); ++r)
    if (errors[r])
      std::fprintf(stderr, "shardaccum cuda: rank %zu communicator teardown: %s\n", r,
                   error_text(errors[r]).c_str());
  comms_ok_ = false;
}

}  // namespace shardaccum::cuda
