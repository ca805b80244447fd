// The host backend's own guarantees: poison, accounting, wrong-space guards, the collective, and
// that a rank failing never hangs the others.
#include <gtest/gtest.h>

#include <cmath>

#include "bench/case_runner.hpp"
#include "strategies/backend/host_backend.hpp"
#include "strategies/preset/preset.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

TEST(HostBackend, NewBuffersArePoisonedAndAccounted) {
  auto be = make_host_backend({1, 1});
  be->run([](RankBackend& r) {
    r.begin_step();
    {
      Buffer a = r.allocate(MemSpace::device, DType::fp32, 100, Stream::compute);
      EXPECT_TRUE(std::isnan(static_cast<const float*>(a.data())[57]));
      Buffer b = r.allocate(MemSpace::pinned_host, DType::bf16, 10, Stream::copy);
      Buffer c = r.allocate(MemSpace::device, DType::bf16, 50, Stream::compute);
    }
    Buffer d = r.allocate(MemSpace::device, DType::fp32, 10, Stream::compute);
    const StepMetrics m = r.end_step();
    EXPECT_EQ(m.peak_device_bytes, 400u + 100u);
    EXPECT_EQ(m.peak_pinned_bytes, 20u);
  });
}

TEST(HostBackend, CopiesAreCountedByDirection) {
  auto be = make_host_backend({1, 1});
  be->run([](RankBackend& r) {
    r.begin_step();
    Buffer dev = r.allocate(MemSpace::device, DType::fp32, 100, Stream::compute);
    Buffer pin = r.allocate(MemSpace::pinned_host, DType::fp32, 100, Stream::copy);
    r.generate(dev, GradKey{9, 0, 0, 0, 0, 100}, false, Stream::compute);
    r.copy(pin, dev, Stream::copy);
    r.copy(dev, pin, Stream::copy);
    r.copy(pin, dev, Stream::copy);
    const StepMetrics m = r.end_step();
    EXPECT_EQ(m.d2h_bytes, 800u);
    EXPECT_EQ(m.h2d_bytes, 400u);
    EXPECT_EQ(static_cast<const float*>(pin.data())[42],
              grad_value(GradKey{9, 0, 0, 0, 0, 100}, 42));
    Buffer wrong = r.allocate(MemSpace::device, DType::bf16, 100, Stream::compute);
    EXPECT_THROW(r.copy(wrong, dev, Stream::copy), BackendError);  // copies move bytes: same dtype
  });
}

TEST(HostBackend, KernelsRejectPinnedOperands) {
  auto be = make_host_backend({1, 1});
  be->run([](RankBackend& r) {
    Buffer pin = r.allocate(MemSpace::pinned_host, DType::fp32, 8, Stream::copy);
    Buffer dev = r.allocate(MemSpace::device, DType::fp32, 8, Stream::compute);
    EXPECT_THROW(r.generate(pin, GradKey{}, false, Stream::compute), BackendError);
    EXPECT_THROW(r.add(dev, pin, MemSpace::device, Stream::compute), BackendError);
    EXPECT_THROW(r.convert(dev, pin, Stream::compute), BackendError);
  });
}

TEST(HostBackend, ReduceScatterSumsShards) {
  auto be = make_host_backend({3, 1});
  be->run([](RankBackend& r) {
    Buffer in = r.allocate(MemSpace::device, DType::fp32, 24, Stream::compute);
    Buffer out = r.allocate(MemSpace::device, DType::fp32, 8, Stream::comm);
    float* p = static_cast<float*>(in.data());
    for (int i = 0; i < 24; ++i) p[i] = static_cast<float>(i * (r.rank() + 1));
    r.reduce_scatter(out, in);
    for (int j = 0; j < 8; ++j)  // sum over ranks of (off + j) * (rank + 1) = (off + j) * 6
      EXPECT_EQ(static_cast<const float*>(out.data())[j], (8.0f * r.rank() + j) * 6) << j;
  });
}

TEST(HostBackend, WorldSizeZeroIsAClearError) {
  try {
    make_host_backend({0, 1});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--world-size"), std::string::npos) << e.what();
  }
}

// One rank fails before a collective: the others are released with PeerFailure, run() reports
// the failing rank's own error, nothing hangs, and the backend runs the next case normally.
TEST(HostBackend, AFailingRankNeverHangsTheOthers) {
  auto be = make_host_backend({3, 1});
  try {
    be->run([](RankBackend& r) {
      if (r.rank() == 1) throw AccumulationError("planted failure on rank 1");
      Buffer in = r.allocate(MemSpace::device, DType::fp32, 24, Stream::compute);
      Buffer out = r.allocate(MemSpace::device, DType::fp32, 8, Stream::comm);
      r.reduce_scatter(out, in);
    });
    FAIL() << "expected the planted failure";
  } catch (const AccumulationError& e) {
    EXPECT_NE(std::string(e.what()).find("planted failure on rank 1"), std::string::npos);
  }
  const CasePlan plan{testing::make_layout({100}),
                      canonical_schedule("sync", 4),
                      preset("zero3"),
                      parse_dtype_triple("fp32-fp32-fp32"),
                      GenMode::dyadic,
                      1,
                      "t"};
  EXPECT_TRUE(testing::run_two_steps(*be, plan).correct);
}

// An error inside accumulate on every rank (a checked add with an accumulator narrower than the
// addend) ends the case with the strategy's message, agreed before the next collective.
TEST(HostBackend, AnErrorInsideACaseEndsItWithTheStrategysMessage) {
  auto be = make_host_backend({2, 1});
  const CasePlan plan{testing::make_layout({100, 50}),
                      canonical_schedule("sync", 4),
                      {"data-free", "none", "flag"},
                      DTypeTriple{DType::fp32, DType::fp32, DType::bf16},
                      GenMode::dyadic,
                      1,
                      "t"};
  CaseRunner runner(*be, plan);
  try {
    runner.step(0, false);
    FAIL() << "expected a checked-add error";
  } catch (const AccumulationError& e) {
    EXPECT_NE(std::string(e.what()).find("checked add rejected"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardaccum
