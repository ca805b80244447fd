// A cuda world: its construction (CUPTI first, ranks on their threads, communicators, context,
// ceilings), its teardown, and the host barrier of its ranks.
#include "strategies/backend/cuda_world.hpp"

#include "strategies/backend/cuda_util.hpp"

namespace shardaccum::cuda {

CudaWorld::CudaWorld(const CudaBackendOptions& opts)
    : opts_(opts),
      barrier_(opts.process_rank >= 0 ? 1 : opts.world_size),
      ranks_(opts.process_rank >= 0 ? 1 : opts.world_size) {
  // Before any stream or copy exists, so that CUPTI sees every record of the run.
  collector_ = cupti::CuptiCollector::start_if_allowed(opts.cupti, opts.cupti_kernels);
  host_threads_ =
      opts.host_add_threads > 0 ? opts.host_add_threads : default_host_threads(opts.world_size);
  // Ranks are built on their own threads: pinning the arenas takes seconds for tens of GB.
  auto errors = run_ranks([&](int i) {
    ranks_[i] = std::make_unique<CudaRank>(*this, rank_base() + i, opts.first_device + i);
  });
  for (const auto& e : errors)
    if (e) rethrow_root(errors);
  init_comms();
  build_static_context();
  if (opts.measure_ceilings) {
    try {
      measure_ceilings();
    } catch (...) {
      destroy_comms(true);
      throw;
    }
  }
  if (multi_process()) watchdog_ = std::thread([this] { watchdog_loop(); });
}

CudaWorld::~CudaWorld() {
  watchdog_stop_ = true;
  if (watchdog_.joinable()) watchdog_.join();
  if (abandoned_) {  // no NCCL or CUDA teardown: it could hang on the dead peer
    for (auto& r : ranks_) (void)r.release();
    return;
  }
  destroy_comms(!comms_ok_);
}

Ceilings CudaWorld::ceilings() const {
  std::lock_guard<std::mutex> l(ceilings_mutex_);
  return typed_ceilings_;
}

std::vector<int> CudaWorld::local_ranks() const {
  std::vector<int> r;
  for (const auto& rank : ranks_) r.push_back(rank->rank());
  return r;
}

void CudaWorld::host_barrier(const WaitPolicy& policy, const std::string& what) {
  try {
    barrier_.arrive_and_wait(policy.timeout_s, what);
  } catch (const BarrierTimeout& e) {
    throw WaitTimeout(e.what());  // a rank that never arrives: abort the communicators (recover)
  }
}

bool CudaWorld::host_any(int slot, bool mine, const WaitPolicy& policy, const std::string& what) {
  try {
    return barrier_.any(slot, mine, policy.timeout_s, what);
  } catch (const BarrierTimeout& e) {
    throw WaitTimeout(e.what());
  }
}

void CudaWorld::all_ranks_barrier(CudaRank& rank, const WaitPolicy& policy,
                                  const std::string& what) {
  host_barrier(policy, what);
  if (rank.link()) rank.link()->any(false, policy, what + " (across processes)");
}

}  // namespace shardaccum::cuda
