// Backend::run on a cuda world, and the recovery after a failed one: which failures abort the
// communicators, which only drain the streams. Also the world-wide calls between runs.
#include "strategies/backend/cuda_world.hpp"

#include <algorithm>
#include <cstdio>

#include "common/errors.hpp"
#include "strategies/backend/cuda_util.hpp"

namespace shardaccum::cuda {

void CudaWorld::run(const std::function<void(RankBackend&)>& fn) {
  if (!dead_.empty()) throw CudaError("cuda backend unusable: " + dead_);
  Busy busy(*this);
  if (!comms_ok_) init_comms();
  auto errors = run_ranks([&](int r) {
    CudaRank& rank = *ranks_[r];
    try {
      fn(rank);
    } catch (...) {
      // No task may outlive the call that queued it. The rank's own error is the one rethrown:
      // what settling finds besides is reported, not lost.
      try {
        if (std::exception_ptr task = rank.settle_tasks(true))
          std::fprintf(stderr, "shardaccum cuda: rank %d: a host task failed too: %s\n",
                       rank.rank(), error_text(task).c_str());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "shardaccum cuda: rank %d: settling host tasks after a failure: %s\n",
                     rank.rank(), e.what());
      }
      throw;
    }
    if (std::exception_ptr e = rank.settle_tasks(false)) std::rethrow_exception(e);
  });
  for (const auto& e : errors)
    if (e) {
      recover(errors);
      rethrow_root(errors);
    }
}

void CudaWorld::recover(const std::vector<std::exception_ptr>& errors) {
  // A collective may be stuck when the ranks issued different numbers of them, or when NCCL
  // failed or a wait timed out: then the communicators are aborted (and rebuilt by the next run).
  // Across processes the counts cannot be compared: any failure but an agreed one (an
  // AccumulationError or PeerFailure that every rank saw through any_rank) aborts, and the launch
  // cannot rebuild its communicator.
  bool abort = false;
  for (const auto& r : ranks_)
    abort = abort || r->collectives_issued() != ranks_[0]->collectives_issued();
  for (const auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const NcclError&) {
      abort = true;
    } catch (const WaitTimeout&) {
      abort = true;
    } catch (const AccumulationError&) {
    } catch (const PeerFailure&) {
    } catch (...) {
      abort = abort || multi_process();
    }
  }
  if (abort) {
    const auto first =
        std::find_if(errors.begin(), errors.end(), [](const auto& e) { return bool(e); });
    destroy_comms(true,
                  first != errors.end() ? error_text(*first) : "");  // multi-process: abandons
    if (multi_process()) return;  // its streams may hold a collective that never ends: no drain
  }
  auto drained = run_ranks([&](int r) {
    ranks_[r]->recover(WaitPolicy{std::min(opts_.timeout_s, 60.0), nullptr, heartbeat()});
  });
  for (size_t r = 0; r < drained.size(); ++r) {
    if (drained[r])
      dead_ =
          "rank " + std::to_string(r) + " did not drain after a failure: " + error_text(drained[r]);
  }
}

void CudaWorld::release_cached_memory() {
  if (!dead_.empty()) return;
  auto errors = run_ranks([&](int i) {
    CudaRank& r = *ranks_[i];
    UniqueEvent idle(false);
    for (Stream st : {Stream::compute, Stream::comm, Stream::copy, Stream::h2d}) {
      SA_CUDA_CHECK(cudaEventRecord(idle.get(), r.stream(st)));
      wait_event(idle.get(), r.comm(), policy(),
                 "rank " + std::to_string(r.rank()) + ": release cached memory");
    }
    r.observe_idle_streams();  // else the trim cannot give back what another stream freed
    SA_CUDA_CHECK(cudaMemPoolTrimTo(r.pool(), 0));
  });
  for (const auto& e : errors)
    if (e) rethrow_root(errors);
}

void CudaWorld::allgather(std::vector<std::vector<uint8_t>>& per_rank) {
  if (!multi_process()) return;
  if (!dead_.empty()) throw CudaError("cuda backend unusable: " + dead_);
  if (!comms_ok_ || !ranks_[0]->link())
    throw NcclError("allgather: no process link (aborted after a failure)");
  Busy busy(*this);
  auto errors = run_ranks([&](int) {
    CudaRank& r = *ranks_[0];
    per_rank = r.link()->allgather(per_rank.at(r.rank()), policy(),
                                   "rank " + std::to_string(r.rank()) +
                                       ": gathering every rank's figures");
  });
  if (errors[0]) {
    destroy_comms(true, error_text(errors[0], "gathering every rank's figures failed"));
    std::rethrow_exception(errors[0]);
  }
}

}  // namespace shardaccum::cuda
