// The watchdog of a multi-process launch and the abandonment of a world whose peer died: a call
// stuck outside the bounded waits ends the process; an abandoned world tears nothing down.
#include "strategies/backend/cuda_world.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace shardaccum::cuda {

CudaWorld::Busy::Busy(CudaWorld& world) : w(world) { w.busy_since_ns_ = steady_ns(); }
CudaWorld::Busy::~Busy() { w.busy_since_ns_ = 0; }

void CudaWorld::watchdog_loop() {
  while (!watchdog_stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    const int64_t since = busy_since_ns_.load();
    if (!since) continue;
    const int64_t now = steady_ns();
    const double idle =
        (now - std::max(since, last_poll_ns_.load(std::memory_order_relaxed))) * 1e-9;
    if (idle > opts_.timeout_s + 15) {
      std::fprintf(
          stderr,
          "shardaccum cuda: rank %d: no progress for %.0f s (--timeout %g + 15 s): a CUDA or NCCL "
          "call is stuck, most likely on a peer process that died; ending this process (exit 1)\n",
          rank_base(), idle, opts_.timeout_s);
      std::fflush(nullptr);
      std::_Exit(1);
    }
  }
}

void CudaWorld::abandon(const std::string& why) noexcept {
  if (abandoned_) return;
  abandoned_ = true;
  comms_ok_ = false;
  for (auto& r : ranks_) {
    if (!r) continue;
    if (r->link()) r->link()->abandon();
    (void)r->take_comm().leak();  // never torn down, not even by the rank's destructor
  }
  dead_ = "this multi-process launch lost a peer process or a collective hung (" + why +
          "); the remaining cases cannot run";
  std::fprintf(
      stderr,
      "shardaccum cuda: rank %d: %s. The process ends once its results are written, without "
      "tearing NCCL down (ncclCommAbort can hang on a dead peer).\n",
      rank_base(), dead_.c_str());
}

}  // namespace shardaccum::cuda
