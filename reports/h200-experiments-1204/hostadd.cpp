// Experiment (not part of the suite): does the host add's rate depend on the accumulator's size
// (page-table walks over 4 KiB pages) or on huge pages? fp32 d += s, 12 bytes per element.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <fstream>
#include <omp.h>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <vector>
#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__);                            \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)
static void add(float* __restrict d, const float* __restrict s, int64_t m, int th) {
#pragma omp parallel for simd num_threads(th) schedule(static)
  for (int64_t i = 0; i < m; ++i) d[i] += s[i];
}
static double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
static float* pinned(size_t bytes, bool thp) {
  void* p = nullptr;
  if (!thp) {
    CK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
  } else {
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::printf("mmap failed\n");
      std::exit(1);
    }
    if (madvise(p, bytes, MADV_HUGEPAGE)) std::printf("madvise failed\n");
    std::memset(p, 0, bytes);
    CK(cudaHostRegister(p, bytes, cudaHostRegisterPortable));
  }
  std::memset(p, 0, bytes);
  return static_cast<float*>(p);
}
static void stats(const char* what, std::vector<double> gbps) {
  std::sort(gbps.begin(), gbps.end());
  std::printf("%-58s best %6.1f  median %6.1f  worst %6.1f GB/s (n=%zu)\n", what, gbps.back(),
              gbps[gbps.size() / 2], gbps.front(), gbps.size());
  std::fflush(stdout);
}
int main(int argc, char** argv) {
  const int th = argc > 1 ? std::atoi(argv[1]) : omp_get_max_threads();
  const size_t MiB = 1ull << 20, small = 256 * MiB, big = 4096 * MiB, chunk = 64 * MiB;
  const int tries = 12;
  CK(cudaSetDevice(0));
  for (bool thp : {false, true}) {
    const char* tag = thp ? "THP+register" : "cudaHostAlloc";
    double t0 = now_ms();
    float* a = pinned(small, thp);
    float* b = pinned(small, thp);
    float* acc = pinned(big, thp);
    float* st = pinned(small, thp);
    float* land = pinned(small, thp);
    std::printf("[%s] allocated+touched in %.0f ms\n", tag, now_ms() - t0);
    {
      std::ifstream f("/proc/self/smaps_rollup");
      std::string l;
      while (std::getline(f, l))
        if (l.find("AnonHuge") != std::string::npos) std::printf("  %s\n", l.c_str());
    }
    add(a, b, small / 4, th);
    std::vector<double> r;
    for (int t = 0; t < tries; ++t) {
      double s = now_ms();
      for (int i = 0; i < 3; ++i) add(a, b, small / 4, th);
      r.push_back(36.0 * (small / 4) / ((now_ms() - s) * 1e6));
    }
    stats((std::string(tag) + " ceiling-like 2x256MiB, 3 adds").c_str(), r);
    r.clear();
    // case-like: 4 GiB accumulator walked in 64 MiB chunks, the 256 MiB staging reused per unit
    for (int t = 0; t < tries; ++t) {
      double s = now_ms();
      for (size_t u = 0; u < big; u += small)
        for (size_t c = 0; c < small; c += chunk) add(acc + (u + c) / 4, st + c / 4, chunk / 4, th);
      r.push_back(12.0 * (big / 4) / ((now_ms() - s) * 1e6));
    }
    stats((std::string(tag) + " case-like 4GiB acc, 64MiB chunks").c_str(), r);
    r.clear();
    // per-chunk rates of the case-like walk (a 64 MiB chunk: 201 MB of traffic)
    std::vector<double> rc;
    for (size_t u = 0; u < big; u += small)
      for (size_t c = 0; c < small; c += chunk) {
        double s = now_ms();
        add(acc + (u + c) / 4, st + c / 4, chunk / 4, th);
        rc.push_back(12.0 * (chunk / 4) / ((now_ms() - s) * 1e6));
      }
    stats((std::string(tag) + " case-like per 64MiB chunk").c_str(), rc);
    // case-like while D2H lands in another pinned buffer, back to back
    void* dbuf;
    CK(cudaMalloc(&dbuf, small));
    cudaStream_t cs;
    CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    double dsum = 0;
    for (int t = 0; t < 6; ++t) {
      CK(cudaEventRecord(e0, cs));
      for (int i = 0; i < 12; ++i)
        CK(cudaMemcpyAsync(land, dbuf, small, cudaMemcpyDeviceToHost, cs));
      CK(cudaEventRecord(e1, cs));
      double s = now_ms();
      for (size_t u = 0; u < big; u += small)
        for (size_t c = 0; c < small; c += chunk) add(acc + (u + c) / 4, st + c / 4, chunk / 4, th);
      double ms = now_ms() - s;
      CK(cudaEventSynchronize(e1));
      float cms;
      CK(cudaEventElapsedTime(&cms, e0, e1));
      r.push_back(12.0 * (big / 4) / (ms * 1e6));
      dsum += 12.0 * small / (cms * 1e6);
    }
    stats((std::string(tag) + " case-like during D2H (add rate)").c_str(), r);
    std::printf("  D2H rate beside it, mean %.1f GB/s\n", dsum / 6);
    // exactly the case: D2H of a chunk into the staging, then its add, the next chunk's D2H beside
    r.clear();
    for (int t = 0; t < 4; ++t) {
      double addms = 0;
      double s0 = now_ms();
      for (size_t u = 0; u < big; u += small) {
        std::vector<cudaEvent_t> ev(4);
        for (int c = 0; c < 4; ++c) {
          CK(cudaEventCreateWithFlags(&ev[c], cudaEventDisableTiming));
          CK(cudaMemcpyAsync((char*)st + c * chunk, dbuf, chunk, cudaMemcpyDeviceToHost, cs));
          CK(cudaEventRecord(ev[c], cs));
        }
        for (int c = 0; c < 4; ++c) {
          CK(cudaEventSynchronize(ev[c]));
          double s = now_ms();
          add(acc + (u + c * chunk) / 4, st + c * chunk / 4, chunk / 4, th);
          addms += now_ms() - s;
          cudaEventDestroy(ev[c]);
        }
      }
      std::printf("  pipelined-like: step %.1f ms, adds %.1f ms -> add %.1f GB/s\n", now_ms() - s0,
                  addms, 12.0 * (big / 4) / (addms * 1e6));
    }
    if (!thp) {
      for (int mode = 1; mode <= 3; ++mode) {
        std::atomic<bool> stop{false};
        std::thread bg([&] {
          while (!stop) {
            if (mode == 1)
              std::this_thread::sleep_for(std::chrono::microseconds(20));
            else if (mode == 2)
              std::this_thread::yield();
            else {
              cudaEventQuery(e1);
              std::this_thread::sleep_for(std::chrono::microseconds(20));
            }
          }
        });
        double addms = 0;
        double s0 = now_ms();
        for (size_t u = 0; u < big; u += small) {
          std::vector<cudaEvent_t> ev(4);
          for (int c = 0; c < 4; ++c) {
            CK(cudaEventCreateWithFlags(&ev[c], cudaEventDisableTiming));
            CK(cudaMemcpyAsync((char*)st + c * chunk, dbuf, chunk, cudaMemcpyDeviceToHost, cs));
            CK(cudaEventRecord(ev[c], cs));
          }
          for (int c = 0; c < 4; ++c) {
            CK(cudaEventSynchronize(ev[c]));
            double s = now_ms();
            add(acc + (u + c * chunk) / 4, st + c * chunk / 4, chunk / 4, th);
            addms += now_ms() - s;
            cudaEventDestroy(ev[c]);
          }
        }
        stop = true;
        bg.join();
        std::printf("  pipelined-like with a poller (%s): step %.1f ms, add %.1f GB/s\n",
                    mode == 1   ? "sleep 20us"
                    : mode == 2 ? "yield"
                                : "eventQuery+sleep 20us",
                    now_ms() - s0, 12.0 * (big / 4) / (addms * 1e6));
      }
    }
    cudaFree(dbuf);
    if (!thp) {
      cudaFreeHost(a);
      cudaFreeHost(b);
      cudaFreeHost(acc);
      cudaFreeHost(st);
      cudaFreeHost(land);
    } else {
      for (auto [p, n] : {std::pair<float*, size_t>{a, small},
                          {b, small},
                          {acc, big},
                          {st, small},
                          {land, small}}) {
        cudaHostUnregister(p);
        munmap(p, n);
      }
    }
  }
  return 0;
}
