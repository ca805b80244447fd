// The reduce-scatter's gate (docs/DESIGN.md §6): a one-thread kernel holds the comm stream until
// the host has returned from ncclReduceScatter, so the collective's start event is when the GPU
// reaches it, not the host's launch; %globaltimer stamps give each collective's start and end on
// a clock the process's ranks compare (nccl_wait_ms, nccl_link_ms).
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "common/errors.hpp"
#include "strategies/backend/cuda_rank.hpp"
#include "strategies/backend/cuda_world.hpp"

namespace shardaccum::cuda {

namespace {
constexpr size_t kStampsPerBlock = 1024;  // reduce-scatters per mapped block (24 KiB)
constexpr size_t kStampWords = 3;         // start ns, end ns, timed out
}  // namespace

void CudaRank::ensure_gate_flag() {
  if (gate_flag_.get()) return;
  gate_flag_ = PinnedMemory(sizeof(uint64_t), cudaHostAllocMapped | cudaHostAllocPortable);
  *static_cast<volatile uint64_t*>(gate_flag_.get()) = gate_seq_;
  SA_CUDA_CHECK(
      cudaHostGetDevicePointer(reinterpret_cast<void**>(&gate_flag_dev_), gate_flag_.get(), 0));
}

namespace {
// Driver entry points through the runtime (cudaGetDriverEntryPointByVersion): linking libcuda
// directly would stop the binary from starting on a machine without the driver, where the host
// backend must still run.
using WaitValue64 = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
using DeviceAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);

template <class Fn>
Fn driver_entry(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess)
    return nullptr;
  return reinterpret_cast<Fn>(fn);
}
}  // namespace

bool holds_wanted() {
  const char* env = std::getenv("SHARDACCUM_HOLD_OPS");
  return env && *env ? std::strcmp(env, "0") != 0 : kHoldOpsDefault;
}

namespace {
// Under lazy module loading (CUDA's default since 12.2) a kernel's first launch may synchronise
// the context: inside a hold, that waits for a stream the host releases only after the launch
// returns. With holds wanted, modules load when the context is created (before main's first CUDA
// call), unless the user set CUDA_MODULE_LOADING; the watchdog below covers what remains.
[[maybe_unused]] const bool eager_modules = [] {
  if (holds_wanted()) setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
  return true;
}();

constexpr uint64_t kHoldWatchdogNs = 1'000'000'000;  // as the reduce-scatter gate's spin limit
}  // namespace

bool op_holds_on(int device) {
  const auto wait_value = driver_entry<WaitValue64>("cuStreamWaitValue64");
  const auto attribute = driver_entry<DeviceAttribute>("cuDeviceGetAttribute");
  int can = 0;  // the runtime's device ordinal is the driver's CUdevice
  if (!attribute || !wait_value ||
      attribute(&can, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, device) != CUDA_SUCCESS)
    return false;
  return can != 0 && holds_wanted();
}

void CudaRank::watch_holds(std::stop_token stop) noexcept {
  while (!stop.stop_requested()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const uint64_t since = hold_since_ns_.load(std::memory_order_relaxed);
    if (since == 0 || static_cast<uint64_t>(steady_ns()) - since < kHoldWatchdogNs) continue;
    release_gates(hold_seq_.load(std::memory_order_relaxed));
    hold_since_ns_.store(0, std::memory_order_relaxed);
    if (!hold_watchdog_fired_.exchange(true))
      std::fprintf(stderr,
                   "shardaccum cuda: rank %d: an op's stream was held for more than %.1f s (the "
                   "host blocked inside a launch); released it: that op's time may include host "
                   "time (SHARDACCUM_HOLD_OPS=0 runs without holds)\n",
                   rank_, kHoldWatchdogNs * 1e-9);
  }
}

void CudaRank::hold_stream(int s) {
  static const WaitValue64 wait_value = driver_entry<WaitValue64>("cuStreamWaitValue64");
  if (hold_ops_ < 0) {
    hold_ops_ = op_holds_on(device_) ? 1 : 0;
    if (hold_ops_ == 1)
      hold_watchdog_ = std::jthread([this](std::stop_token st) { watch_holds(std::move(st)); });
  }
  if (hold_ops_ == 0) return;
  ensure_gate_flag();
  const uint64_t seq = ++gate_seq_;
  hold_seq_.store(seq, std::memory_order_relaxed);
  hold_since_ns_.store(static_cast<uint64_t>(steady_ns()), std::memory_order_relaxed);
  const CUresult r = wait_value(streams_[s].get(), reinterpret_cast<CUdeviceptr>(gate_flag_dev_),
                                seq, CU_STREAM_WAIT_VALUE_GEQ);
  if (r != CUDA_SUCCESS)
    throw CudaError(who("hold_stream") + ": cuStreamWaitValue64 failed with CUresult " +
                    std::to_string(static_cast<int>(r)) +
                    " (SHARDACCUM_HOLD_OPS=0 runs without holds)");
}

CudaRank::GateStamps CudaRank::next_gate_stamps() {
  ensure_gate_flag();
  const size_t i = step_gates_.size();
  if (i / kStampsPerBlock >= stamp_blocks_.size())
    stamp_blocks_.emplace_back(kStampsPerBlock * kStampWords * sizeof(uint64_t),
                               cudaHostAllocMapped | cudaHostAllocPortable);
  GateStamps g;
  g.host = static_cast<uint64_t*>(stamp_blocks_[i / kStampsPerBlock].get()) +
           i % kStampsPerBlock * kStampWords;
  std::fill(g.host, g.host + kStampWords, 0);  // a collective that failed leaves no stale figure
  SA_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&g.dev), g.host, 0));
  step_gates_.push_back(g);
  return g;
}

void CudaRank::release_gates(uint64_t seq) noexcept {
  if (!gate_flag_.get()) return;
  auto* flag = static_cast<uint64_t*>(gate_flag_.get());
  // Monotonic: a later release never lowers the value an earlier, higher one wrote.
  if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) < seq) __atomic_store_n(flag, seq, __ATOMIC_RELEASE);
}

void CudaRank::gate_figures(Lock& l, bool ok) {
  published_starts_.clear();
  std::vector<uint64_t> ends;
  bool timed_out = false;
  if (ok)
    for (const GateStamps& g : step_gates_) {
      const volatile uint64_t* v = g.host;  // written by the gate and stamp kernels (idle now)
      published_starts_.push_back(static_cast<uint64_t>(v[0]));
      ends.push_back(static_cast<uint64_t>(v[1]));
      timed_out = timed_out || v[2] != 0;
    }
  if (timed_out && !gate_timeout_warned_) {
    gate_timeout_warned_ = true;
    std::fprintf(stderr,
                 "shardaccum cuda: rank %d: a reduce-scatter's gate gave up after %.1f s waiting "
                 "for the host; that collective's nccl_ms includes host time\n",
                 rank_, kGateSpinNs * 1e-9);
  }
  std::vector<uint64_t> latest = published_starts_;
  // Ranks of this process compare stamps between two barriers; across processes (one rank each
  // under --launcher env) the stamps are not exchanged: the latest start is this rank's own.
  if (world_.local_count() > 1) {
    l.unlock();
    try {
      world_.host_any(local_index(), false, policy(), who("end_step (gate stamps)"));
      for (int r = 0; r < world_.local_count(); ++r) {
        const std::vector<uint64_t>& peer = world_.gate_starts_of(r);
        if (peer.size() != latest.size()) continue;  // a failed step: nothing to compare
        for (size_t k = 0; k < latest.size(); ++k) latest[k] = std::max(latest[k], peer[k]);
      }
      // No rank publishes its next step's stamps before every rank has read these.
      world_.host_any(local_index(), false, policy(), who("end_step (gate stamps read)"));
    } catch (const PeerFailure&) {
      latest = published_starts_;  // the run fails with the peer's error; no wait is claimed
    } catch (...) {
      l.lock();
      throw;
    }
    l.lock();
  }
  for (size_t k = 0; k < latest.size(); ++k) {
    const uint64_t own = published_starts_[k];
    m_.nccl_wait_ms += static_cast<double>(latest[k] - own) * 1e-6;
    if (ends[k] > latest[k]) m_.nccl_link_ms += static_cast<double>(ends[k] - latest[k]) * 1e-6;
  }
}

}  // namespace shardaccum::cuda
