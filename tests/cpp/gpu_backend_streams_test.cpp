// The cuda backend's ordering and failure paths (label gpu): events between streams, host tasks,
// a failing rank, a stuck collective.
#include "gpu_backend_fixture.hpp"

namespace shardaccum {
namespace {

using testing::CudaBackendTest;
using testing::fill;
using testing::gpus;
using testing::kMiB;
using testing::kPinnedPool;
using testing::read;

TEST_F(CudaBackendTest, EventsOrderStreams) {
  be().run([&](RankBackend& rb) {
    const uint64_t n = 8 * kMiB;
    Buffer a = rb.allocate(MemSpace::device, DType::fp32, n, Stream::compute);
    Buffer h = rb.allocate(MemSpace::pinned_host, DType::fp32, n, Stream::copy);
    for (int round = 0; round < 3; ++round) {
      rb.begin_step();
      const GradKey key{5, static_cast<uint32_t>(round), 0, 0, 0, n, GenMode::dyadic};
      rb.generate(a, key, false, Stream::compute);
      rb.wait(Stream::copy, rb.record(Stream::compute));
      rb.copy(h, a, Stream::copy);
      const Event done = rb.record(Stream::copy);
      rb.host_wait(done);
      const float* v = static_cast<const float*>(h.data());
      for (uint64_t i = 0; i < n; i += 4099)
        ASSERT_EQ(v[i], grad_value(key, i)) << round << " " << i;
      rb.end_step();
    }
    rb.wait(Stream::compute, Event{});  // a default event: nothing to wait for
  });
}

// Host tasks run in order, each after its event, at most host_task_depth pending; a pinned buffer
// that existed when a task was queued is used by the rank's thread only after that task; a new
// staging is not held up by it; a task's error is rethrown by end_step and the next step works.
TEST_F(CudaBackendTest, HostTasksRunInOrderAfterTheirEventsWithBoundedDepth) {
  const int depth = be().host_task_depth();
  ASSERT_GT(depth, 0);
  be().run([&](RankBackend& rb) {
    using namespace std::chrono_literals;
    const uint64_t n = 4 * kMiB;
    Buffer d = rb.allocate(MemSpace::device, DType::fp32, n, Stream::compute);
    Buffer old = rb.allocate(MemSpace::pinned_host, DType::fp32, 16, Stream::copy);
    static_cast<float*>(old.data())[0] = 1.0f;
    rb.begin_step();
    std::vector<int> order;
    std::atomic<int> pending{0};
    int max_pending = 0;
    for (int i = 0; i < 6; ++i) {
      const GradKey key{9, static_cast<uint32_t>(i), 0, 0, 0, n, GenMode::dyadic};
      rb.generate(d, key, false, Stream::compute);
      auto h = std::make_shared<Buffer>(
          rb.allocate(MemSpace::pinned_host, DType::fp32, n, Stream::copy));
      rb.copy(*h, d, Stream::copy);
      ++pending;
      rb.host_task(rb.record(Stream::copy), [&, h, key, i] {
        std::this_thread::sleep_for(10ms);
        const float* v = static_cast<const float*>(h->data());
        for (uint64_t j = 0; j < n; j += 65537)
          ASSERT_EQ(v[j], grad_value(key, j)) << i << " " << j;
        order.push_back(i);
        --pending;
      });
      max_pending = std::max(max_pending, pending.load());
    }
    // A task writes into `old`, allocated before it was queued: the scale on this thread waits.
    rb.host_task(Event{}, [&] {
      std::this_thread::sleep_for(50ms);
      static_cast<float*>(old.data())[0] = 42.0f;
    });
    rb.scale(old, 2.0, Stream::copy);
    EXPECT_EQ(static_cast<const float*>(old.data())[0], 84.0f);
    // A slow task does not hold up a copy into a staging allocated after it.
    rb.host_task(Event{}, [] { std::this_thread::sleep_for(300ms); });
    const auto t0 = std::chrono::steady_clock::now();
    Buffer fresh = rb.allocate(MemSpace::pinned_host, DType::fp32, n, Stream::copy);
    rb.copy(fresh, d, Stream::copy);
    rb.host_wait(rb.record(Stream::copy));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(ms, 200.0) << "the copy into a new staging waited for an unrelated host task";
    const StepMetrics m = rb.end_step();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
    EXPECT_LE(max_pending, depth);
    EXPECT_GE(m.step_ms, 300.0);  // the step ends after its last host task

    // A failing task: end_step rethrows it, later tasks of the step are skipped.
    rb.begin_step();
    bool later_ran = false;
    rb.host_task(Event{}, [] { throw std::runtime_error("planted task failure"); });
    rb.host_task(Event{}, [&] { later_ran = true; });
    try {
      rb.end_step();
      ADD_FAILURE() << "end_step did not rethrow the task's error";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("planted task failure"), std::string::npos);
    }
    EXPECT_FALSE(later_ran);
    rb.begin_step();
    bool ran = false;
    rb.host_task(Event{}, [&] { ran = true; });
    rb.end_step();
    EXPECT_TRUE(ran);
  });
}

// A failing rank ends the run with its own error, its peers are released, and the next run works
// (communicators rebuilt when a collective was left unmatched).
TEST_F(CudaBackendTest, FailingRankEndsTheRunAndTheNextRunWorks) {
  if (world() < 2) GTEST_SKIP() << "needs 2 GPUs";
  try {
    be().run([&](RankBackend& rb) {
      Buffer in = rb.allocate(MemSpace::device, DType::fp32, 1024, Stream::compute);
      Buffer out = rb.allocate(MemSpace::device, DType::fp32, 1024 / rb.world_size(), Stream::comm);
      rb.generate(in, GradKey{1, 0, 0, 0, 0, 1024, GenMode::dyadic}, false, Stream::compute);
      rb.begin_step();
      if (rb.rank() == 1) throw std::runtime_error("planted failure on rank 1");
      rb.reduce_scatter(out, in);  // rank 0 joins a collective that rank 1 never joins
      rb.end_step();
    });
    FAIL() << "expected the planted failure";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("planted failure"), std::string::npos) << e.what();
  }
  // any_rank and the next collective work again.
  be().run([&](RankBackend& rb) {
    EXPECT_TRUE(rb.any_rank(rb.rank() == 1));
    EXPECT_FALSE(rb.any_rank(false));
    Buffer in = rb.allocate(MemSpace::device, DType::fp32, 1024, Stream::compute);
    Buffer out = rb.allocate(MemSpace::device, DType::fp32, 1024 / rb.world_size(), Stream::comm);
    rb.generate(in, GradKey{1, 0, 0, static_cast<uint32_t>(rb.rank()), 0, 1024, GenMode::dyadic},
                false, Stream::compute);
    rb.reduce_scatter(out, in);
    const std::vector<float> v = read(rb, out);
    const uint64_t j0 = out.numel() * rb.rank();
    for (uint64_t j = 0; j < out.numel(); ++j) {
      float want = 0;
      for (int r = 0; r < rb.world_size(); ++r)
        want += grad_value(GradKey{1, 0, 0, static_cast<uint32_t>(r), 0, 1024, GenMode::dyadic},
                           j0 + j);
      ASSERT_EQ(v[j], want) << j;
    }
  });
}

// A collective that one rank never joins, with no error anywhere: the wait times out with a clear
// error instead of hanging, the communicators are aborted, and the backend still works after.
TEST(CudaBackendTimeout, StuckCollectiveTimesOut) {
  SKIP_WITHOUT_GPU();
  if (gpus() < 2) GTEST_SKIP() << "needs 2 GPUs";
  CudaBackendOptions o;
  o.world_size = 2;
  o.pinned_pool_bytes = 0;
  o.measure_ceilings = false;
  o.timeout_s = 3;
  auto be = make_cuda_backend(o);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    be->run([&](RankBackend& rb) {
      if (rb.rank() == 1) return;  // leaves quietly
      Buffer in = rb.allocate(MemSpace::device, DType::fp32, 1 << 20, Stream::compute);
      Buffer out = rb.allocate(MemSpace::device, DType::fp32, 1 << 19, Stream::comm);
      rb.begin_step();
      rb.reduce_scatter(out, in);
      rb.end_step();
    });
    FAIL() << "expected a timeout";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    std::printf("stuck collective: %s\n", e.what());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 60.0);
  be->run([&](RankBackend& rb) {
    Buffer in = rb.allocate(MemSpace::device, DType::fp32, 1 << 20, Stream::compute);
    Buffer out = rb.allocate(MemSpace::device, DType::fp32, 1 << 19, Stream::comm);
    rb.generate(in, GradKey{}, false, Stream::compute);
    rb.reduce_scatter(out, in);
    rb.begin_step();
    rb.end_step();
  });
}

}  // namespace
}  // namespace shardaccum
