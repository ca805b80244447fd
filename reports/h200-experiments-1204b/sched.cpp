// Experiment (not part of the suite): is the host add's rate in a case below its best-of-12
// ceiling because a static OpenMP partition waits for a thread whose vCPU the hypervisor took
// (steal time), and would a dynamic schedule keep the rate? fp32 d += s, 12 bytes per element, on
// operands of 1200 MiB (the ceiling's on the H200 VM), alone and beside back-to-back D2Hs.
#include <cuda_runtime.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__);                            \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)
static void add_static(float* __restrict d, const float* __restrict s, int64_t m, int th) {
#pragma omp parallel for simd num_threads(th) schedule(static)
  for (int64_t i = 0; i < m; ++i) d[i] += s[i];
}
static void add_dynamic(float* __restrict d, const float* __restrict s, int64_t m, int th) {
#pragma omp parallel for simd num_threads(th) schedule(dynamic, 1 << 18)
  for (int64_t i = 0; i < m; ++i) d[i] += s[i];
}
static double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
// Jiffies the hypervisor took from every vCPU (/proc/stat "cpu" line, 8th figure), summed.
static long long steal() {
  std::ifstream f("/proc/stat");
  std::string cpu;
  long long v[8] = {};
  f >> cpu;
  for (long long& x : v) f >> x;
  return v[7];
}
static void stats(const char* what, std::vector<double> gbps, long long stolen) {
  std::sort(gbps.begin(), gbps.end());
  std::printf("%-44s best %6.1f  median %6.1f  worst %6.1f GB/s (n=%zu)  steal %lld jiffies\n",
              what, gbps.back(), gbps[gbps.size() / 2], gbps.front(), gbps.size(), stolen);
  std::fflush(stdout);
}
int main() {
  const size_t MiB = 1ull << 20, bytes = 1200 * MiB, copy = 256 * MiB;
  const int64_t el = bytes / 4;
  const int tries = 40;
  CK(cudaSetDevice(0));
  float *a, *b, *land;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&a), bytes, cudaHostAllocPortable));
  CK(cudaHostAlloc(reinterpret_cast<void**>(&b), bytes, cudaHostAllocPortable));
  CK(cudaHostAlloc(reinterpret_cast<void**>(&land), copy, cudaHostAllocPortable));
  std::memset(a, 0, bytes);
  std::memset(b, 0, bytes);
  std::memset(land, 0, copy);
  void* dbuf;
  CK(cudaMalloc(&dbuf, copy));
  cudaStream_t cs;
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  const int hw = omp_get_num_procs();
  std::printf("%d processors\n", hw);
  for (int round = 0; round < 2; ++round)
    for (int th : {hw, hw - 1})
      for (bool dyn : {false, true})
        for (bool d2h : {false, true}) {
          auto fn = dyn ? add_dynamic : add_static;
          fn(a, b, el, th);  // warm-up: the team
          std::vector<double> r;
          const long long s0 = steal();
          for (int t = 0; t < tries; ++t) {
            if (d2h)  // about the add's time of D2Hs, back to back
              for (int i = 0; i < 3; ++i)
                CK(cudaMemcpyAsync(land, dbuf, copy, cudaMemcpyDeviceToHost, cs));
            const double s = now_ms();
            fn(a, b, el, th);
            r.push_back(12.0 * el / ((now_ms() - s) * 1e6));
            CK(cudaStreamSynchronize(cs));
          }
          char what[96];
          std::snprintf(what, sizeof what, "round %d %2d threads %-7s %s", round, th,
                        dyn ? "dynamic" : "static", d2h ? "beside D2H" : "alone");
          stats(what, r, steal() - s0);
        }
  return 0;
}
