#include "profiling/cupti_collector.hpp"

#include <cupti.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace shardaccum::cupti {

namespace {

constexpr size_t kBufferBytes = 8u << 20;  // per CUPTI activity buffer
constexpr size_t kBufferAlign = 8;         // CUPTI requires 8-byte aligned buffers

std::string describe(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
    return "CUPTI error " + std::to_string(static_cast<int>(r));
  return s;
}

void check(CUptiResult r, const char* call) {
  if (r != CUPTI_SUCCESS)
    throw CuptiError(std::string("CUPTI: ") + call + " failed: " + describe(r));
}

/// For calls whose failure cannot be thrown (CUPTI's callbacks, teardown): reported on stderr.
void log_failure(CUptiResult r, const char* call, const char* context) noexcept {
  if (r != CUPTI_SUCCESS)
    std::fprintf(stderr, "shardaccum: CUPTI collector, %s: %s failed: %s\n", context, call,
                 describe(r).c_str());
}

// Another CUPTI client (Nsight Systems, a second collector) holds the one subscription.
bool is_other_subscriber(CUptiResult r) {
  return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED || r == CUPTI_ERROR_NOT_COMPATIBLE;
}

void CUPTIAPI no_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

gpu_activity::CopyKind copy_kind(uint8_t k) {
  switch (k) {
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return gpu_activity::CopyKind::h2d;
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return gpu_activity::CopyKind::d2h;
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return gpu_activity::CopyKind::d2d;
  case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return gpu_activity::CopyKind::p2p;
  default: return gpu_activity::CopyKind::other;
  }
}

std::mutex g_start_mu;
std::atomic<CuptiCollector*> g_instance{nullptr};
bool g_off = false;  // a start found another subscriber: stay off for the whole process

}  // namespace

struct CuptiCallbacks {
  static void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;  // a null buffer: CUPTI drops records (counted as dropped)
    *max_records = 0;                    // as many as fit
  }
  static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t,
                                 size_t valid) {
    if (CuptiCollector* c = g_instance.load(std::memory_order_acquire)) {
      c->take(buffer, valid);
      size_t dropped = 0;
      const CUptiResult r = cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped);
      log_failure(r, "cuptiActivityGetNumDroppedRecords", "buffer completed");
      if (r == CUPTI_SUCCESS && dropped) {
        std::lock_guard<std::mutex> lock(c->mu_);
        c->dropped_ += dropped;
      }
    }
    std::free(buffer);
  }
};

CuptiCollector* CuptiCollector::start_if_allowed(bool want, bool kernels) {
  if (!want) return nullptr;
  std::lock_guard<std::mutex> lock(g_start_mu);
  if (CuptiCollector* c = g_instance.load()) return c;
  if (g_off) return nullptr;
  std::string why = gpu_activity::other_profiler_reason();
  if (why.empty()) {
    auto* c = new CuptiCollector();  // lives until exit: CUPTI tears down with the process
    c->kernels_ = kernels;
    g_instance.store(c,
                     std::memory_order_release);  // before enabling: buffers may complete at once
    try {
      if (c->start(why)) return c;
    } catch (...) {
      g_instance.store(nullptr);
      delete c;
      throw;
    }
    g_instance.store(nullptr);
    delete c;
  }
  g_off = true;
  std::fprintf(stderr,
               "shardaccum: CUPTI collector off: %s; bytes and NCCL times come from the backend's "
               "accounting\n",
               why.c_str());
  return nullptr;
}

bool CuptiCollector::start(std::string& why) {
  CUpti_SubscriberHandle sub = nullptr;
  CUptiResult r = cuptiSubscribe(&sub, no_callback, nullptr);
  if (is_other_subscriber(r)) {
    why = "cuptiSubscribe: another CUPTI subscriber is attached (" + describe(r) + ")";
    return false;
  }
  check(r, "cuptiSubscribe");
  subscriber_ = sub;
  try {
    // Buffers are per thread by default (CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER = 1):
    // one rank's flush is not held back by another rank's work still in flight.
    r = cuptiActivityRegisterCallbacks(CuptiCallbacks::requested, CuptiCallbacks::completed);
    if (is_other_subscriber(r)) {
      why =
          "cuptiActivityRegisterCallbacks: another CUPTI client is attached (" + describe(r) + ")";
      stop();
      return false;
    }
    check(r, "cuptiActivityRegisterCallbacks");
    const char* inj = std::getenv("NVTX_INJECTION64_PATH");
    const bool want_markers = inj && std::string_view(inj).find("cupti") != std::string_view::npos;
    std::vector<std::pair<CUpti_ActivityKind, const char*>> kinds = {
        {CUPTI_ACTIVITY_KIND_MEMCPY, "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY)"}};
    if (kernels_)
      kinds.push_back({CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                       "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)"});
    if (want_markers)
      kinds.push_back(
          {CUPTI_ACTIVITY_KIND_MARKER, "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER)"});
    for (const auto& [kind, call] : kinds) {
      r = cuptiActivityEnable(kind);
      if (is_other_subscriber(r)) {
        why = std::string(call) + ": another CUPTI client is attached (" + describe(r) + ")";
        stop();
        return false;
      }
      check(r, call);
      enabled_.push_back(static_cast<int>(kind));
    }
    markers_enabled_ = want_markers;

    // The clock map: the steady-clock midpoint of the tightest of a few bracketed samples.
    int64_t best_gap = INT64_MAX;
    for (int i = 0; i < 8; ++i) {
      const auto a = trace::Clock::now();
      uint64_t ts = 0;
      check(cuptiGetTimestamp(&ts), "cuptiGetTimestamp");
      const auto b = trace::Clock::now();
      const int64_t gap = std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
      if (gap < best_gap) {
        best_gap = gap;
        const int64_t mid =
            std::chrono::duration_cast<std::chrono::nanoseconds>(a.time_since_epoch()).count() +
            gap / 2;
        clock_.offset_ns = mid - static_cast<int64_t>(ts);
      }
    }
  } catch (...) {
    stop();
    throw;
  }
  return true;
}

void CuptiCollector::stop() noexcept {
  for (int k : enabled_)
    log_failure(cuptiActivityDisable(static_cast<CUpti_ActivityKind>(k)), "cuptiActivityDisable",
                "stop");
  enabled_.clear();
  if (subscriber_)
    log_failure(cuptiUnsubscribe(static_cast<CUpti_SubscriberHandle>(subscriber_)),
                "cuptiUnsubscribe", "stop");
  subscriber_ = nullptr;
}

uint64_t CuptiCollector::now() const {
  uint64_t ts = 0;
  check(cuptiGetTimestamp(&ts), "cuptiGetTimestamp");
  return ts;
}

void CuptiCollector::flush() {
  std::lock_guard<std::mutex> lock(flush_mu_);
  check(cuptiActivityFlushAll(0), "cuptiActivityFlushAll(0)");
}

void CuptiCollector::take(uint8_t* buffer, size_t valid) noexcept {
  if (!valid) return;
  std::lock_guard<std::mutex> lock(mu_);
  CUpti_Activity* rec = nullptr;
  for (;;) {
    const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &rec);
    if (r != CUPTI_SUCCESS) {  // CUPTI_ERROR_MAX_LIMIT_REACHED: end of the buffer
      if (r != CUPTI_ERROR_MAX_LIMIT_REACHED)
        log_failure(r, "cuptiActivityGetNextRecord", "reading a completed buffer");
      break;
    }
    try {
      switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        ActivityRecord a;
        a.kind = ActivityRecord::Kind::memcpy;
        a.copy = copy_kind(m->copyKind);
        a.device = static_cast<int>(m->deviceId);
        a.context = m->contextId;
        a.stream = m->streamId;
        a.bytes = m->bytes;
        a.start_ns = m->start;
        a.end_ns = m->end;
        records_.push_back(std::move(a));
        break;
      }
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        ActivityRecord a;
        a.kind = ActivityRecord::Kind::kernel;
        a.device = static_cast<int>(k->deviceId);
        a.context = k->contextId;
        a.stream = k->streamId;
        a.name = k->name ? k->name : "";
        a.start_ns = k->start;
        a.end_ns = k->end;
        records_.push_back(std::move(a));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MARKER: {
        const auto* mk = reinterpret_cast<const CUpti_ActivityMarker2*>(rec);
        if (mk->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
          ActivityRecord a;
          a.kind = ActivityRecord::Kind::marker;
          a.thread = mk->objectId.pt.threadId;
          a.name = mk->name ? mk->name : "";
          a.domain = mk->domain ? mk->domain : "";
          a.start_ns = mk->timestamp;
          open_markers_.emplace_back(mk->id, std::move(a));
        } else if (mk->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
          auto it = std::find_if(open_markers_.begin(), open_markers_.end(),
                                 [&](const auto& p) { return p.first == mk->id; });
          if (it == open_markers_.end()) break;
          it->second.end_ns = mk->timestamp;
          markers_.push_back(std::move(it->second));
          open_markers_.erase(it);
          if (markers_.size() > kMaxMarkers) markers_.pop_front();
        }
        break;
      }
      default: break;
      }
    } catch (const std::exception& e) {
      ++dropped_;  // out of memory copying a record: count it as dropped, and say so once
      if (!copy_failure_logged_)
        std::fprintf(stderr, "shardaccum: CUPTI collector: a record dropped: %s\n", e.what());
      copy_failure_logged_ = true;
    }
  }
}

WindowTotals CuptiCollector::totals(int device, uint64_t t_begin, uint64_t t_end) {
  flush();
  std::lock_guard<std::mutex> lock(mu_);
  WindowTotals w = gpu_activity::sum_window(records_, device, t_begin, t_end, patterns_);
  w.dropped_records = dropped_;
  dropped_ = 0;
  std::erase_if(records_,
                [&](const ActivityRecord& r) { return r.device == device && r.start_ns < t_end; });
  return w;
}

void CuptiCollector::discard(int device, uint64_t t_end) {
  flush();
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(records_,
                [&](const ActivityRecord& r) { return r.device == device && r.start_ns < t_end; });
}

std::vector<ActivityRecord> CuptiCollector::markers(uint64_t t_begin, uint64_t t_end) {
  flush();
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ActivityRecord> out;
  for (const ActivityRecord& m : markers_)
    if (m.start_ns >= t_begin && m.start_ns < t_end) out.push_back(m);
  return out;
}

void CuptiCollector::set_kernel_patterns(KernelPatterns p) {
  std::lock_guard<std::mutex> lock(mu_);
  patterns_ = std::move(p);
}

uint32_t CuptiCollector::stream_id(void* cuda_stream) const {
  uint32_t id = 0;
  check(cuptiGetStreamIdEx(nullptr, static_cast<CUstream>(cuda_stream), 0, &id),
        "cuptiGetStreamIdEx");
  return id;
}

size_t CuptiCollector::held_records() {
  std::lock_guard<std::mutex> l(mu_);
  return records_.size() + markers_.size() + open_markers_.size();
}

}  // namespace shardaccum::cupti
