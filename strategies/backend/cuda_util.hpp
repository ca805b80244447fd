#pragma once
// Small helpers the cuda backend's files share: stream indices and names, buffer shapes in
// messages, the text of a captured exception. Internal: not for strategies.
#include <chrono>
#include <exception>
#include <string>

#include "common/buffer.hpp"

namespace shardaccum::cuda {

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

constexpr int kStreamCount = 4;  // compute, comm, copy, h2d: the order of enum Stream
inline int idx(Stream s) { return static_cast<int>(s); }
inline const char* stream_name(int s) {
  constexpr const char* names[kStreamCount] = {"compute", "comm", "copy", "h2d"};
  return names[s];
}

/// "device fp32[1024]": a buffer in messages.
inline std::string shape(const Buffer& b) {
  return std::string(space_name(b.space())) + " " + dtype_name(b.dtype()) + "[" +
         std::to_string(b.numel()) + "]";
}

/// The message of a captured exception (`fallback` for one that is not a std::exception).
inline std::string error_text(const std::exception_ptr& e, const char* fallback = "unknown error") {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return fallback;  // described, not swallowed: the caller still holds `e`
  }
}

}  // namespace shardaccum::cuda
