#include "strategies/backend/backend.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace shardaccum {

uint64_t process_rss_bytes() noexcept {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  const long page = sysconf(_SC_PAGE_SIZE);
  return n == 2 && page > 0 ? resident * static_cast<uint64_t>(page) : 0;
}

void RankBackend::host_busy(uint32_t us) {
  // steady_clock, not sleep_for: a sleep gives the CPU away and wakes tens of µs late.
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) {}
}

}  // namespace shardaccum
