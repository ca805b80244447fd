#pragma once
// The in-process CUPTI activity collector (docs/DESIGN.md §6): the one CUPTI subscriber of the
// process. It enables MEMCPY and CONCURRENT_KERNEL activity (and MARKER when NVTX is injected into
// CUPTI), keeps the records in memory, and answers per-device window totals for the cuda backend:
//
//   CuptiCollector* c = CuptiCollector::start_if_allowed(opts.cupti);  // nullptr: off
//   begin_step:  t0 = c->now();
//   end_step:    (synchronise the rank's streams) t1 = c->now();
//                WindowTotals w = c->totals(device, t0, t1);   // bytes, NCCL/add/generate ms
//
// so work outside the measured steps (oracle, ceilings, warm-up bookkeeping) is excluded. CUPTI
// allows one subscriber: under Nsight Systems the collector stays off (nsys is the subscriber).
// This header does not include CUPTI; only profiling/cupti_collector.cpp does.
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "profiling/gpu_activity.hpp"

namespace shardaccum::cupti {

using gpu_activity::ActivityRecord;
using gpu_activity::ClockMap;
using gpu_activity::KernelPatterns;
using gpu_activity::WindowTotals;

/// A failed CUPTI call; the message names the call and CUPTI's description of the error.
struct CuptiError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class CuptiCollector {
 public:
  /// Nullptr when `want` is false, or when another CUPTI client is attached (Nsight Systems:
  /// detected from its environment, or cuptiSubscribe / cuptiActivityEnable reporting another
  /// subscriber); the second case prints one line to stderr. Otherwise the process's collector,
  /// started on the first call (later calls return the same one). It lives until the process
  /// exits. Thread-safe. Throws CuptiError for any other CUPTI failure (the call is named).
  /// `kernels` also enables CONCURRENT_KERNEL records (NCCL / accumulate / generate kernel
  /// times). Off by default: on an H200 pair it slowed NCCL's reduce-scatter kernels about 2.4x
  /// (busbw 112 against 274 GB/s at 1 GiB), while MEMCPY records alone are cheap. The first
  /// call decides for the process.
  static CuptiCollector* start_if_allowed(bool want, bool kernels = false);

  /// CUPTI's timestamp now (cuptiGetTimestamp), nanoseconds; the clock of every record.
  uint64_t now() const;

  /// Flushes CUPTI's completed buffers (cuptiActivityFlushAll(0)) and sums the memcpy and kernel
  /// records of CUDA device `device` whose start lies in [t_begin, t_end) (see WindowTotals:
  /// H2D/D2H bytes and ms, D2D bytes, NCCL / accumulate / generate kernel ms by the name
  /// patterns, the window's raw records). Call it after synchronising the device's streams, so
  /// every record of the window has completed. The device's records that start before t_end
  /// are then discarded (windows of one device must be asked in time order). Thread-safe: each
  /// rank thread asks for its own device.
  WindowTotals totals(int device, uint64_t t_begin, uint64_t t_end);

  /// CUPTI's id of a CUDA stream (cuptiGetStreamIdEx), as in ActivityRecord::stream: pass a
  /// cudaStream_t, e.g. to name trace tracks after the rank's compute/comm/copy streams.
  uint32_t stream_id(void* cuda_stream) const;

  /// CUPTI timestamps -> the trace clock (sampled at start), for gpu_activity::append_to_trace.
  ClockMap clock_map() const { return clock_; }

  /// Whether NVTX ranges reach CUPTI (NVTX_INJECTION64_PATH names libcupti, MARKER enabled).
  bool markers_enabled() const { return markers_enabled_; }
  /// NVTX push/pop ranges CUPTI delivered (MARKER), start in [t_begin, t_end), after a flush;
  /// device -1, `thread` the OS thread id. At most the newest kMaxMarkers are kept.
  std::vector<ActivityRecord> markers(uint64_t t_begin, uint64_t t_end);
  static constexpr size_t kMaxMarkers = 1 << 20;

  /// The kernel name patterns of totals(); defaults in gpu_activity::KernelPatterns. Set before
  /// the first totals() call.
  void set_kernel_patterns(KernelPatterns p);

  /// Drops device `device`'s records that start before t_end, after a flush: work outside every
  /// step (the oracle's staging copies) that no window will ever count.
  void discard(int device, uint64_t t_end);

  /// Records held now (memcpy/kernel records not yet consumed, markers, open markers): a level
  /// that must stay flat over a long run.
  size_t held_records();

  CuptiCollector(const CuptiCollector&) = delete;
  CuptiCollector& operator=(const CuptiCollector&) = delete;

 private:
  CuptiCollector() = default;
  bool kernels_ = false;
  /// Subscribes and enables; false (with `why` set) when another subscriber holds CUPTI.
  bool start(std::string& why);
  void stop() noexcept;  // disables what start enabled and unsubscribes (after a failed start)
  void flush();

  friend struct CuptiCallbacks;  // CUPTI's buffer callbacks (cupti_collector.cpp)
  void take(uint8_t* buffer, size_t valid) noexcept;  // copies a completed buffer's records

  void* subscriber_ = nullptr;  // CUpti_SubscriberHandle
  std::vector<int> enabled_;    // CUpti_ActivityKind values enabled
  bool markers_enabled_ = false;
  ClockMap clock_;
  KernelPatterns patterns_;

  std::mutex
      flush_mu_;   // one flush at a time (buffer_completed runs inside it, or on CUPTI's thread)
  std::mutex mu_;  // guards everything below
  std::vector<ActivityRecord> records_;  // memcpy and kernel records not yet consumed
  std::deque<ActivityRecord> markers_;   // completed NVTX ranges
  std::vector<std::pair<uint32_t, ActivityRecord>> open_markers_;  // by marker id, until their end
  bool copy_failure_logged_ = false;  // take() reports its first failure to copy a record
  uint64_t dropped_ = 0;              // records CUPTI reported dropped, not yet reported
};

}  // namespace shardaccum::cupti
