#pragma once
// The cuda backend tests' shared fixture (label gpu): one backend for the suite CudaBackendTest,
// whose tests live in gpu_backend_ops_test.cpp and gpu_backend_streams_test.cpp, and the helpers
// that read and fill buffers. Every test skips with a visible message when no GPU is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/layout.hpp"
#include "strategies/backend/cuda_backend.hpp"
#include "strategies/unit_grad.hpp"
namespace shardaccum::testing {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kPinnedPool = 64 * kMiB;

inline int gpus() { return cuda_device_count(); }

#define SKIP_WITHOUT_GPU()                                                                         \
  do {                                                                                             \
    if (gpus() == 0) GTEST_SKIP() << "no CUDA device visible: cuda backend tests skipped";         \
  } while (0)

/// One backend for the whole suite (NCCL init and the ceilings take a second or two).
class CudaBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (gpus() == 0) {
      std::printf("[ SKIPPED  ] no CUDA device visible (cudaGetDeviceCount is 0 or failed)\n");
      return;
    }
    CudaBackendOptions o;
    o.world_size = std::min(2, gpus());
    o.pinned_pool_bytes = kPinnedPool;
    o.timeout_s = 120;
    // These tests check the backend's own accounting, some with oracle work inside a step window
    // (which CUPTI would count); gpu_strategy_test.cpp covers the CUPTI-measured bytes.
    o.cupti = false;
    const auto t0 = std::chrono::steady_clock::now();
    backend_ = make_cuda_backend(o).release();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf(
        "cuda backend: world %d, created in %.2f s (NCCL init, arenas, ceilings)\ncontext: %s\n",
        o.world_size, s, backend_->context().dump(2).c_str());
  }
  static void TearDownTestSuite() {
    delete backend_;
    backend_ = nullptr;
  }
  void SetUp() override { SKIP_WITHOUT_GPU(); }

  static Backend& be() { return *backend_; }
  static int world() { return backend_->world_size(); }

  inline static Backend* backend_ = nullptr;
};

/// Reads a buffer back as floats (device buffers through a pinned copy; counted traffic outside
/// any step, which the tests that count bytes do not see).
inline std::vector<float> read(RankBackend& rb, const Buffer& b) {
  Buffer host;
  const Buffer* src = &b;
  if (b.space() == MemSpace::device) {
    host = rb.allocate(MemSpace::pinned_host, b.dtype(), b.numel(), Stream::copy);
    rb.copy(host, b, Stream::copy);
    rb.host_wait(rb.record(Stream::copy));
    src = &host;
  }
  std::vector<float> v(b.numel());
  for (uint64_t i = 0; i < b.numel(); ++i)
    v[i] = b.dtype() == DType::fp32 ? static_cast<const float*>(src->data())[i]
                                    : bf16_to_float(static_cast<const uint16_t*>(src->data())[i]);
  return v;
}

/// Writes floats into a pinned buffer (rounded to its dtype).
inline void fill(Buffer& pinned, const std::vector<float>& v) {
  for (uint64_t i = 0; i < pinned.numel(); ++i) {
    if (pinned.dtype() == DType::fp32)
      static_cast<float*>(pinned.data())[i] = v[i];
    else
      static_cast<uint16_t*>(pinned.data())[i] = float_to_bf16(v[i]);
  }
}

}  // namespace shardaccum::testing
