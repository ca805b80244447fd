#pragma once
// GPU activity records as the CUPTI collector keeps them, and what the suite makes of them:
// per-step window totals (docs/DESIGN.md §6: traffic by copy direction, NCCL, accumulate and
// generator kernel time) and trace events. No CUPTI here, so the logic is tested on the host; the
// collector itself is profiling/cupti_collector.hpp.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "profiling/trace.hpp"

namespace shardaccum::gpu_activity {

/// Direction of a memcpy record (CUPTI_ACTIVITY_MEMCPY_KIND_*, reduced to what the suite reads).
enum class CopyKind : uint8_t { other, h2d, d2h, d2d, p2p };
const char* copy_kind_name(CopyKind k);  // "HtoD", "DtoH", "DtoD", "PtoP", "other"

/// One activity record, copied out of a CUPTI buffer.
struct ActivityRecord {
  enum class Kind : uint8_t { memcpy, kernel, marker };
  Kind kind = Kind::kernel;
  CopyKind copy = CopyKind::other;  // memcpy only
  int device = -1;                  // CUDA device ordinal (CUPTI deviceId); -1 for markers
  uint32_t context = 0;             // CUPTI context id
  uint32_t stream = 0;              // CUPTI stream id (see CuptiCollector::stream_id)
  uint32_t thread = 0;              // markers: the OS thread id CUPTI reports
  std::string name;    // kernel name as CUPTI gives it (may be mangled); marker message
  std::string domain;  // markers: NVTX domain ("" for the default domain)
  uint64_t bytes = 0;  // memcpy: bytes moved
  uint64_t start_ns = 0, end_ns = 0;  // CUPTI timestamps (cuptiGetTimestamp's clock), nanoseconds
  double ms() const { return end_ns > start_ns ? (end_ns - start_ns) * 1e-6 : 0.0; }
};

/// Kernel name patterns of the window totals. A mangled name (`_Z<len><name>...`) is matched on
/// its identifier. The first matching class wins, in the order nccl, generate, accumulate.
struct KernelPatterns {
  // NCCL's kernels: ncclDevKernel_ReduceScatter_Sum_f32_RING_LL, ...
  std::vector<std::string> nccl_prefixes{"nccl"};
  // The synthetic backward: the cuda backend's generate_kernel<...>.
  std::vector<std::string> generate_substrings{"generate"};
  // Device adds: add_kernel<...> (accumulate phase), or a kernel named *accumulate*.
  std::vector<std::string> accumulate_substrings{"accumulate", "add_"};
};

enum class KernelClass : uint8_t { nccl, generate, accumulate, other };
KernelClass classify_kernel(std::string_view name, const KernelPatterns& p = {});

/// What one device did in one time window [t_begin, t_end) of CUPTI timestamps: sums over records
/// whose start lies in the window. Times are sums of record durations (busy time, milliseconds;
/// overlapping records both count), bytes are bytes.
struct WindowTotals {
  uint64_t h2d_bytes = 0, d2h_bytes = 0, d2d_bytes = 0, p2p_bytes = 0;
  double h2d_ms = 0, d2h_ms = 0, d2d_ms = 0;
  uint64_t memcpy_count = 0;
  double nccl_ms = 0, accumulate_ms = 0, generate_ms = 0, other_kernel_ms = 0;
  uint64_t nccl_kernels = 0, kernel_count = 0;
  uint64_t dropped_records = 0;  // records CUPTI dropped (buffers full); non-zero: totals are low
  std::vector<ActivityRecord> records;  // the window's records of that device, by start time
};

/// Sums the memcpy and kernel records of `device` whose start lies in [t_begin, t_end).
WindowTotals sum_window(const std::vector<ActivityRecord>& records, int device, uint64_t t_begin,
                        uint64_t t_end, const KernelPatterns& patterns = {});

/// Maps CUPTI timestamps (ns) onto the trace clock: steady = cupti + offset_ns.
struct ClockMap {
  int64_t offset_ns = 0;
  trace::Clock::time_point to_steady(uint64_t cupti_ns) const {
    return trace::Clock::time_point(
        std::chrono::nanoseconds(static_cast<int64_t>(cupti_ns) + offset_ns));
  }
};

/// Records `records` (memcpy and kernel) into the calling rank's trace: one complete event each
/// on the track `track_of(stream id)` names (default "gpu stream <id>"), named by the demangled
/// kernel name or "memcpy HtoD" etc., category "kernel"/"memcpy", args bytes, device, stream,
/// kernel class. Does nothing when `t.recorder` is null.
void append_to_trace(const trace::ThreadTrace& t, const std::vector<ActivityRecord>& records,
                     const ClockMap& clock,
                     const std::function<std::string(uint32_t stream)>& track_of = {});

/// Records NVTX ranges as CUPTI's MARKER records delivered them (NVTX_INJECTION64_PATH naming
/// libcupti) into the calling rank's trace: one complete event per range on the track
/// "NVTX via CUPTI, thread <CUPTI thread id>", named by the range's message, category
/// "nvtx_cupti", args domain. They are the GPU-side witness of the hierarchy the host recorder
/// also writes (track "NVTX"); a marker without an end is skipped. Does nothing when `t.recorder`
/// is null.
void append_markers_to_trace(const trace::ThreadTrace& t,
                             const std::vector<ActivityRecord>& markers, const ClockMap& clock);

/// A reason to keep the in-process CUPTI collector off because another CUPTI client (Nsight
/// Systems) is attached, read from the environment through `getenv_fn` (std::getenv by
/// default): NSYS_PROFILING_SESSION_ID and the other variables nsys sets in its target, or
/// CUDA_INJECTION64_PATH / LD_PRELOAD naming nsys' injection library. Empty when none.
std::string other_profiler_reason(const std::function<const char*(const char*)>& getenv_fn = {});

}  // namespace shardaccum::gpu_activity
