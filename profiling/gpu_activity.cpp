#include "profiling/gpu_activity.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>

namespace shardaccum::gpu_activity {

const char* copy_kind_name(CopyKind k) {
  switch (k) {
  case CopyKind::h2d: return "HtoD";
  case CopyKind::d2h: return "DtoH";
  case CopyKind::d2d: return "DtoD";
  case CopyKind::p2p: return "PtoP";
  case CopyKind::other: break;
  }
  return "other";
}

namespace {

// `_Z10add_kernelPv` -> `add_kernelPv`; `_ZN2ns8generateEv` -> `generateEv`: an Itanium-mangled
// name from its (innermost) identifier on, or the name itself when it is not mangled.
std::string_view identifier(std::string_view n) {
  if (n.substr(0, 2) != "_Z") return n;
  n.remove_prefix(2);
  if (!n.empty() && n[0] == 'N') n.remove_prefix(1);
  // Skip the <len><id> components of a nested name, keeping the last one.
  std::string_view last = n;
  while (!n.empty() && std::isdigit(static_cast<unsigned char>(n[0]))) {
    size_t len = 0, i = 0;
    while (i < n.size() && std::isdigit(static_cast<unsigned char>(n[i])))
      len = len * 10 + (n[i++] - '0');
    if (i + len > n.size()) break;
    last = n.substr(i);
    n.remove_prefix(i + len);
  }
  return last;
}

bool contains_any(std::string_view s, const std::vector<std::string>& pats) {
  return std::any_of(pats.begin(), pats.end(),
                     [&](const std::string& p) { return s.find(p) != std::string_view::npos; });
}

std::string demangle(const std::string& n) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(
      abi::__cxa_demangle(n.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : n;
}

}  // namespace

KernelClass classify_kernel(std::string_view name, const KernelPatterns& p) {
  const std::string_view id = identifier(name);
  for (const std::string& pre : p.nccl_prefixes)
    if (id.substr(0, pre.size()) == pre || name.substr(0, pre.size()) == pre)
      return KernelClass::nccl;
  if (contains_any(name, p.generate_substrings)) return KernelClass::generate;
  if (contains_any(name, p.accumulate_substrings)) return KernelClass::accumulate;
  return KernelClass::other;
}

WindowTotals sum_window(const std::vector<ActivityRecord>& records, int device, uint64_t t_begin,
                        uint64_t t_end, const KernelPatterns& patterns) {
  WindowTotals w;
  for (const ActivityRecord& r : records) {
    if (r.device != device || r.start_ns < t_begin || r.start_ns >= t_end) continue;
    if (r.kind == ActivityRecord::Kind::memcpy) {
      ++w.memcpy_count;
      switch (r.copy) {
      case CopyKind::h2d: w.h2d_bytes += r.bytes, w.h2d_ms += r.ms(); break;
      case CopyKind::d2h: w.d2h_bytes += r.bytes, w.d2h_ms += r.ms(); break;
      case CopyKind::d2d: w.d2d_bytes += r.bytes, w.d2d_ms += r.ms(); break;
      case CopyKind::p2p: w.p2p_bytes += r.bytes; break;
      case CopyKind::other: break;
      }
    } else if (r.kind == ActivityRecord::Kind::kernel) {
      ++w.kernel_count;
      switch (classify_kernel(r.name, patterns)) {
      case KernelClass::nccl: w.nccl_ms += r.ms(), ++w.nccl_kernels; break;
      case KernelClass::generate: w.generate_ms += r.ms(); break;
      case KernelClass::accumulate: w.accumulate_ms += r.ms(); break;
      case KernelClass::other: w.other_kernel_ms += r.ms(); break;
      }
    } else {
      continue;  // markers have no device
    }
    w.records.push_back(r);
  }
  std::stable_sort(
      w.records.begin(), w.records.end(),
      [](const ActivityRecord& a, const ActivityRecord& b) { return a.start_ns < b.start_ns; });
  return w;
}

void append_to_trace(const trace::ThreadTrace& t, const std::vector<ActivityRecord>& records,
                     const ClockMap& clock, const std::function<std::string(uint32_t)>& track_of) {
  if (!t.recorder) return;
  static const char* const kClass[] = {"nccl", "generate", "accumulate", "other"};
  for (const ActivityRecord& r : records) {
    if (r.kind == ActivityRecord::Kind::marker) continue;
    const std::string track =
        track_of ? track_of(r.stream) : "gpu stream " + std::to_string(r.stream);
    nlohmann::json args = {{"device", r.device}, {"stream", r.stream}};
    std::string name;
    const char* cat;
    if (r.kind == ActivityRecord::Kind::memcpy) {
      name = std::string("memcpy ") + copy_kind_name(r.copy);
      cat = "memcpy";
      args["bytes"] = r.bytes;
    } else {
      name = demangle(r.name);
      cat = "kernel";
      args["class"] = kClass[static_cast<int>(classify_kernel(r.name))];
    }
    t.complete(track, name, cat, clock.to_steady(r.start_ns),
               clock.to_steady(std::max(r.end_ns, r.start_ns)), std::move(args));
  }
}

void append_markers_to_trace(const trace::ThreadTrace& t,
                             const std::vector<ActivityRecord>& markers, const ClockMap& clock) {
  if (!t.recorder) return;
  for (const ActivityRecord& m : markers) {
    if (m.kind != ActivityRecord::Kind::marker || m.end_ns < m.start_ns || m.end_ns == 0) continue;
    t.complete("NVTX via CUPTI, thread " + std::to_string(m.thread), m.name, "nvtx_cupti",
               clock.to_steady(m.start_ns), clock.to_steady(m.end_ns), {{"domain", m.domain}});
  }
}

std::string other_profiler_reason(const std::function<const char*(const char*)>& getenv_fn) {
  const auto env = [&](const char* k) -> const char* {
    return getenv_fn ? getenv_fn(k) : std::getenv(k);
  };
  // Set by Nsight Systems in the processes it profiles.
  static const char* const kNsysVars[] = {"NSYS_PROFILING_SESSION_ID",
                                          "NSYS_CONTROL_CUPTI_FEATURES", "NSYS_SESSION_TEMP_DIR",
                                          "NSYS_TARGET_STD_REDIRECT_ACTION", "NSYS_AGENT_TMP_DIR"};
  for (const char* k : kNsysVars)
    if (const char* v = env(k); v && *v)
      return std::string("Nsight Systems is attached (") + k + " is set)";
  for (const char* k : {"CUDA_INJECTION64_PATH", "LD_PRELOAD"}) {
    const char* v = env(k);
    if (!v) continue;
    const std::string_view s(v);
    constexpr auto npos = std::string_view::npos;
    if (s.find("nsys") != npos || s.find("ToolsInjection") != npos)
      return std::string("Nsight Systems is attached (") + k + "=" + v + ")";
  }
  return {};
}

}  // namespace shardaccum::gpu_activity
