// Experiment (not part of the suite): the host add ceiling's rate against its operands' size, to
// see whether the 256 MiB operands (the ceiling's until 2026-12-04) are served partly from the L3
// (300 MiB on the 1-GPU H200 VM). STREAM's rule: each array at least 4x the last-level cache.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <omp.h>
#include <vector>
static void add(float* __restrict d, const float* __restrict s, int64_t m, int th) {
#pragma omp parallel for simd num_threads(th) schedule(static)
  for (int64_t i = 0; i < m; ++i) d[i] += s[i];
}
static double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
int main() {
  const int th = omp_get_max_threads();
  const size_t MiB = 1ull << 20;
  for (int round = 0; round < 2; ++round)
    for (size_t mib : {64, 128, 256, 512, 1024, 2048}) {
      const size_t bytes = mib * MiB;
      void *a, *b;
      if (cudaHostAlloc(&a, bytes, cudaHostAllocPortable) ||
          cudaHostAlloc(&b, bytes, cudaHostAllocPortable))
        return 1;
      std::memset(a, 0, bytes);
      std::memset(b, 0, bytes);
      const int iters = std::max<size_t>(1, 3 * 256 / mib);
      add((float*)a, (const float*)b, bytes / 4, th);
      std::vector<double> r;
      for (int t = 0; t < 12; ++t) {
        const double s = now_ms();
        for (int i = 0; i < iters; ++i) add((float*)a, (const float*)b, bytes / 4, th);
        r.push_back(12.0 * (bytes / 4) * iters / ((now_ms() - s) * 1e6));
      }
      std::sort(r.begin(), r.end());
      std::printf("round %d operands %5zu MiB x%d: best %6.1f median %6.1f worst %6.1f GB/s\n",
                  round, mib, iters, r.back(), r[6], r[0]);
      std::fflush(stdout);
      cudaFreeHost(a);
      cudaFreeHost(b);
    }
  return 0;
}
