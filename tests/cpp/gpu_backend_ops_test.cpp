// The cuda backend's operations against their obvious results (label gpu): context, generate and
// reduce-scatter, adds and conversions, counted copies, errors, peaks, pinned accounting, the
// check.
#include <cmath>

#include "gpu_backend_fixture.hpp"

namespace shardaccum {
namespace {

using testing::CudaBackendTest;
using testing::fill;
using testing::gpus;
using testing::kMiB;
using testing::kPinnedPool;
using testing::read;

TEST_F(CudaBackendTest, ContextNamesDevicesVersionsAndCeilings) {
  const nlohmann::json c = be().context();
  EXPECT_EQ(c["backend"], "cuda");
  EXPECT_EQ(c["world_size"], world());
  EXPECT_GE(c["device_count"].get<int>(), world());
  EXPECT_EQ(c["devices"].size(), static_cast<size_t>(world()));
  for (const char* k : {"driver_version", "runtime_version", "nccl_version"})
    EXPECT_FALSE(c[k].get<std::string>().empty()) << k;
  for (const char* k : {"ceiling_h2d_gbps", "ceiling_d2h_gbps", "ceiling_bidir_gbps",
                        "ceiling_device_copy_gbps", "ceiling_host_add_gbps"})
    EXPECT_GT(c[k].get<double>(), 0.0) << k;
  if (world() > 1) {
    EXPECT_GT(c["ceiling_reduce_scatter_busbw_gbps"].get<double>(), 0.0);
  }
  EXPECT_TRUE(be().gpu_times());
  EXPECT_EQ(be().name(), "cuda");
}

TEST_F(CudaBackendTest, WorldSizeBeyondTheGpusIsAClearError) {
  CudaBackendOptions o;
  o.world_size = gpus() + 1;
  try {
    make_cuda_backend(o);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--world-size"), std::string::npos) << e.what();
  }
}

// ReduceOp::avg (NCCL ncclAvg, the division `collective`): the shard is the sum over ranks / N;
// dyadic values sum exactly, so only the division rounds (none at a power-of-two N).
TEST_F(CudaBackendTest, ReduceScatterAvgIsTheSumOverN) {
  const uint64_t numel = 100'003;
  be().run([&](RankBackend& rb) {
    const int n = rb.world_size();
    const uint64_t padded = padded_numel(numel, n), shard = padded / n;
    Buffer grad = rb.allocate(MemSpace::device, DType::fp32, padded, Stream::compute);
    const GradKey key{9, 1, 0, static_cast<uint32_t>(rb.rank()), 2, numel, GenMode::dyadic};
    rb.generate(grad, key, false, Stream::compute);
    Buffer out = rb.allocate(MemSpace::device, DType::fp32, shard, Stream::comm);
    rb.reduce_scatter(out, grad, n > 1 ? ReduceOp::avg : ReduceOp::sum);
    grad.reset();
    const std::vector<float> got = read(rb, out);
    uint64_t wrong = 0;
    for (uint64_t j = 0; j < shard; ++j) {
      double sum = 0;
      for (int r = 0; r < n; ++r) {
        GradKey k = key;
        k.rank = r;
        sum += grad_value(k, shard * rb.rank() + j);
      }
      const double want = sum / n;  // NCCL premultiplies by 1/N: within 2 fp32 roundings
      if (std::abs(got[j] - want) > 0x1p-22 * std::abs(want)) ++wrong;
    }
    EXPECT_EQ(wrong, 0u) << "rank " << rb.rank();
  });
}

// generate on every rank, reduce_scatter: the shard is the exact sum of the ranks' gradients, in
// fp32 and in bf16 (dyadic values sum exactly), padding zero; numel not a multiple of 8.
TEST_F(CudaBackendTest, GenerateAndReduceScatterSum) {
  for (DType t : {DType::fp32, DType::bf16}) {
    const uint64_t numel = 1'000'003;
    be().run([&](RankBackend& rb) {
      const int n = rb.world_size();
      const uint64_t padded = padded_numel(numel, n), shard = padded / n;
      Buffer grad = rb.allocate(MemSpace::device, t, padded, Stream::compute);
      const GradKey key{7, 1, 0, static_cast<uint32_t>(rb.rank()), 3, numel, GenMode::dyadic};
      rb.generate(grad, key, false, Stream::compute);
      GradKey key2 = key;
      key2.mb = 1;
      rb.generate(grad, key2, true, Stream::compute);  // grad += g(mb 1): the no-sync backward
      Buffer out = rb.allocate(MemSpace::device, t, shard, Stream::comm);
      rb.reduce_scatter(out, grad);  // no explicit wait: the backend orders it after generate
      grad.reset();
      const std::vector<float> got = read(rb, out);
      uint64_t wrong = 0;
      for (uint64_t j = 0; j < shard; ++j) {
        const uint64_t i = shard * rb.rank() + j;
        double want = 0;
        for (int r = 0; r < n; ++r) {
          GradKey k = key;
          k.rank = r;
          want += grad_value(k, i);
          k.mb = 1;
          want += grad_value(k, i);
        }
        if (got[j] != static_cast<float>(want)) ++wrong;
      }
      EXPECT_EQ(wrong, 0u) << "rank " << rb.rank() << " " << dtype_name(t);
    });
  }
}

// Device add with bf16 -> fp32 conversion, convert, scale; and the CPU add on pinned memory.
TEST_F(CudaBackendTest, AddConvertScaleWithDtypeConversion) {
  be().run([&](RankBackend& rb) {
    const uint64_t n = 4099;  // a vector body and a scalar tail
    const GradKey ka{1, 0, 0, 0, 0, n, GenMode::random}, kb{2, 0, 0, 0, 0, n, GenMode::random};
    Buffer a = rb.allocate(MemSpace::device, DType::fp32, n, Stream::compute);
    Buffer b = rb.allocate(MemSpace::device, DType::bf16, n, Stream::compute);
    rb.generate(a, ka, false, Stream::compute);
    rb.generate(b, kb, false, Stream::compute);
    rb.add(a, b, MemSpace::device, Stream::compute);
    std::vector<float> got = read(rb, a);
    for (uint64_t i = 0; i < n; ++i) {
      const float want = grad_value(ka, i) + bf16_to_float(float_to_bf16(grad_value(kb, i)));
      ASSERT_EQ(got[i], want) << i;
    }
    Buffer c = rb.allocate(MemSpace::device, DType::bf16, n, Stream::compute);
    rb.convert(c, a, Stream::compute);
    rb.scale(c, 0.5, Stream::compute);
    got = read(rb, c);
    for (uint64_t i = 0; i < n; ++i) {
      const float sum = grad_value(ka, i) + bf16_to_float(float_to_bf16(grad_value(kb, i)));
      ASSERT_EQ(got[i], bf16_to_float(float_to_bf16(bf16_to_float(float_to_bf16(sum)) * 0.5f)))
          << i;
    }
    // CPU add: fp32 += bf16 on pinned memory.
    Buffer ha = rb.allocate(MemSpace::pinned_host, DType::fp32, n, Stream::copy);
    Buffer hb = rb.allocate(MemSpace::pinned_host, DType::bf16, n, Stream::copy);
    std::vector<float> va(n), vb(n);
    for (uint64_t i = 0; i < n; ++i) {
      va[i] = grad_value(ka, i);
      vb[i] = grad_value(kb, i);
    }
    fill(ha, va);
    fill(hb, vb);
    rb.add(ha, hb, MemSpace::pinned_host, Stream::copy);
    rb.scale(ha, 2.0, Stream::copy);
    got = read(rb, ha);
    for (uint64_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i], (va[i] + bf16_to_float(float_to_bf16(vb[i]))) * 2.0f) << i;
  });
}

// Copies are counted where issued, exactly; a d2d copy is no transfer; every phase is timed.
TEST_F(CudaBackendTest, CopiesCountedExactlyAndPhasesTimed) {
  std::vector<StepMetrics> ms(world());
  be().run([&](RankBackend& rb) {
    const uint64_t n = 3 * kMiB + 5;  // fp32: 12 MiB + 20 B
    Buffer d = rb.allocate(MemSpace::device, DType::fp32, n, Stream::compute);
    Buffer d2 = rb.allocate(MemSpace::device, DType::fp32, n, Stream::compute);
    Buffer h = rb.allocate(MemSpace::pinned_host, DType::fp32, n, Stream::copy);
    rb.begin_step();
    rb.generate(d, GradKey{3, 0, 0, 0, 0, n, GenMode::dyadic}, false, Stream::compute);
    rb.copy(h, d, Stream::copy);      // D2H, ordered after generate by the backend
    rb.copy(d2, h, Stream::copy);     // H2D
    rb.copy(d, h, Stream::copy);      // H2D
    rb.copy(d2, d, Stream::compute);  // d2d: counted in neither direction
    rb.add(d, d2, MemSpace::device, Stream::compute);
    Buffer h2 = rb.allocate(MemSpace::pinned_host, DType::fp32, n, Stream::copy);
    rb.copy(h2, d, Stream::copy);  // D2H
    rb.add(h, h2, MemSpace::pinned_host, Stream::copy);
    rb.scale(d, 0.5, Stream::compute);
    Buffer out = rb.allocate(MemSpace::device, DType::fp32,
                             padded_numel(n, rb.world_size()) / rb.world_size(), Stream::comm);
    Buffer in =
        rb.allocate(MemSpace::device, DType::fp32, out.numel() * rb.world_size(), Stream::compute);
    rb.generate(in, GradKey{3, 0, 0, 0, 0, n, GenMode::dyadic}, false, Stream::compute);
    rb.reduce_scatter(out, in);
    ms[rb.rank()] = rb.end_step();
    // Values: h = g + (2g) = 3g; d = 2g * 0.5 = g.
    const std::vector<float> hv = read(rb, h), dv = read(rb, d);
    const GradKey k{3, 0, 0, 0, 0, n, GenMode::dyadic};
    for (uint64_t i = 0; i < n; i += 997) {
      ASSERT_EQ(hv[i], 3 * grad_value(k, i)) << i;
      ASSERT_EQ(dv[i], grad_value(k, i)) << i;
    }
  });
  const uint64_t bytes = (3 * kMiB + 5) * 4;
  for (const StepMetrics& m : ms) {
    EXPECT_EQ(m.h2d_bytes, 2 * bytes);
    EXPECT_EQ(m.d2h_bytes, 2 * bytes);
    EXPECT_EQ(m.reduce_scatter_calls, 1u);
    EXPECT_EQ(m.nccl_input_bytes, padded_numel(3 * kMiB + 5, world()) * 4);
    EXPECT_GT(m.step_ms, 0);
    for (int p = 0; p < kPhaseCount; ++p)
      EXPECT_GT(m.phase_ms[p], 0) << phase_name(static_cast<Phase>(p));
    double busy = 0;
    for (int p = 0; p < kPhaseCount; ++p) busy += m.phase_ms[p];
    EXPECT_LE(m.phase_ms[static_cast<int>(Phase::h2d)], m.step_ms);
    std::printf("step %.3f ms, phases busy %.3f ms, h2d %.3f ms (%.1f GB/s), d2h %.3f ms\n",
                m.step_ms, busy, m.phase_ms[static_cast<int>(Phase::h2d)],
                2 * bytes / (m.phase_ms[static_cast<int>(Phase::h2d)] * 1e-3) / 1e9,
                m.phase_ms[static_cast<int>(Phase::d2h)]);
  }
}

TEST_F(CudaBackendTest, WrongSpaceAndShapeAreBackendErrors) {
  be().run([&](RankBackend& rb) {
    Buffer d = rb.allocate(MemSpace::device, DType::fp32, 64, Stream::compute);
    Buffer h = rb.allocate(MemSpace::pinned_host, DType::fp32, 64, Stream::copy);
    Buffer h2 = rb.allocate(MemSpace::pinned_host, DType::fp32, 64, Stream::copy);
    Buffer small = rb.allocate(MemSpace::device, DType::fp32, 32, Stream::compute);
    Buffer bf = rb.allocate(MemSpace::device, DType::bf16, 64, Stream::compute);
    EXPECT_THROW(rb.add(d, h, MemSpace::device, Stream::compute), BackendError);  // addend on host
    EXPECT_THROW(rb.add(h, d, MemSpace::pinned_host, Stream::copy),
                 BackendError);  // addend on device
    EXPECT_THROW(rb.add(d, small, MemSpace::device, Stream::compute), BackendError);
    EXPECT_THROW(rb.generate(h, GradKey{}, false, Stream::compute), BackendError);
    EXPECT_THROW(rb.convert(h, d, Stream::compute), BackendError);
    EXPECT_THROW(rb.copy(d, bf, Stream::copy), BackendError);  // dtype differs
    EXPECT_THROW(rb.copy(h, h2, Stream::copy), BackendError);  // host to host
    EXPECT_THROW(rb.reduce_scatter(small, h), BackendError);
    if (rb.world_size() > 1) {
      EXPECT_THROW(rb.reduce_scatter(d, d), BackendError);  // out must be in / N
    }
    EXPECT_THROW(rb.allocate(MemSpace::device, DType::fp32, 0, Stream::compute), BackendError);
    EXPECT_THROW(rb.wait(Stream::compute, Event{999999}), BackendError);
    Buffer gone = rb.allocate(MemSpace::device, DType::fp32, 64, Stream::compute);
    Buffer alias(&rb, gone.data(), MemSpace::device, DType::fp32, 64);
    gone.reset();
    EXPECT_THROW(rb.scale(alias, 2.0, Stream::compute), BackendError);  // freed
    Buffer none;
    alias = Buffer();  // the alias's release finds nothing live: no double free
    EXPECT_THROW(rb.scale(none, 2.0, Stream::compute), BackendError);
  });
}

// Peak device memory is what was really alive at once, from the pool's used high watermark.
TEST_F(CudaBackendTest, PeakDeviceMemoryIsTheHighWatermark) {
  constexpr uint64_t kOverhead = 2 * kMiB;  // the pool's rounding of one allocation, at most
  const uint64_t x = 100 * kMiB + 1000;     // bytes: 26,214,650 fp32 elements
  std::vector<StepMetrics> one(world()), two(world()), seq(world());
  be().run([&](RankBackend& rb) {
    rb.begin_step();
    {
      Buffer a = rb.allocate(MemSpace::device, DType::fp32, x / 4, Stream::compute);
      rb.generate(a, GradKey{}, false, Stream::compute);
    }
    one[rb.rank()] = rb.end_step();
    rb.begin_step();
    {
      Buffer a = rb.allocate(MemSpace::device, DType::fp32, x / 4, Stream::compute);
      Buffer b = rb.allocate(MemSpace::device, DType::fp32, x / 4, Stream::comm);
      rb.generate(a, GradKey{}, false, Stream::compute);
      rb.generate(b, GradKey{}, false, Stream::comm);
    }
    two[rb.rank()] = rb.end_step();
    rb.begin_step();
    for (int i = 0; i < 3; ++i) {  // freed before the next: the peak stays one buffer
      Buffer a = rb.allocate(MemSpace::device, DType::fp32, x / 4, Stream::compute);
      rb.generate(a, GradKey{}, false, Stream::compute);
    }
    seq[rb.rank()] = rb.end_step();
  });
  for (int r = 0; r < world(); ++r) {
    EXPECT_GE(one[r].peak_device_bytes, x);
    EXPECT_LE(one[r].peak_device_bytes, x + kOverhead);
    EXPECT_GE(two[r].peak_device_bytes, 2 * x);
    EXPECT_LE(two[r].peak_device_bytes, 2 * x + 2 * kOverhead);
    EXPECT_GE(seq[r].peak_device_bytes, x);
    EXPECT_LE(seq[r].peak_device_bytes, x + kOverhead);
    std::printf("rank %d: peak device %llu B for one buffer of %llu B\n", r,
                static_cast<unsigned long long>(one[r].peak_device_bytes),
                static_cast<unsigned long long>(x));
  }
}

// Pinned memory: exact current/peak accounting, reuse of freed blocks, growth beyond the arena.
TEST_F(CudaBackendTest, PinnedAccountingIsExact) {
  std::vector<StepMetrics> first(world()), second(world()), grown(world());
  be().run([&](RankBackend& rb) {
    rb.begin_step();
    Buffer a = rb.allocate(MemSpace::pinned_host, DType::fp32, 10 * kMiB / 4, Stream::copy);
    Buffer b = rb.allocate(MemSpace::pinned_host, DType::bf16, 20 * kMiB / 2, Stream::copy);
    a.reset();
    Buffer c = rb.allocate(MemSpace::pinned_host, DType::fp32, 5 * kMiB / 4 + 3, Stream::copy);
    first[rb.rank()] = rb.end_step();
    rb.begin_step();  // the peak restarts from what is alive: b and c
    second[rb.rank()] = rb.end_step();
    rb.begin_step();
    Buffer big = rb.allocate(MemSpace::pinned_host, DType::fp32, 2 * kPinnedPool / 4, Stream::copy);
    std::memset(big.data(), 0, big.bytes());
    grown[rb.rank()] = rb.end_step();
  });
  const uint64_t c_bytes = 5 * kMiB + 12;
  for (int r = 0; r < world(); ++r) {
    EXPECT_EQ(first[r].peak_pinned_bytes, 30 * kMiB);
    EXPECT_EQ(second[r].peak_pinned_bytes, 20 * kMiB + c_bytes);
    EXPECT_EQ(grown[r].peak_pinned_bytes, 20 * kMiB + c_bytes + 2 * kPinnedPool);
    EXPECT_EQ(first[r].peak_device_bytes, 0u);
  }
  const nlohmann::json c = be().context();
  for (int r = 0; r < world(); ++r) EXPECT_GE(c["pinned_arena_growths"][r].get<int>(), 1);
}

// check_shard: zero error on a correct shard; a planted error, NaN and nonzero padding are seen,
// on the device and on pinned memory alike; the oracle's copies are not counted.
TEST_F(CudaBackendTest, CheckShardFindsPlantedErrors) {
  const uint64_t numel = 1'000'003;  // the last rank's shard ends in padding
  be().run([&](RankBackend& rb) {
    const int n = rb.world_size();
    const uint64_t padded = padded_numel(numel, n), shard = padded / n;
    const uint32_t k = 2;
    Buffer saved;
    for (uint32_t mb = 0; mb < k; ++mb) {  // the sync schedule SS, accumulating on the device
      Buffer grad = rb.allocate(MemSpace::device, DType::fp32, padded, Stream::compute);
      rb.generate(grad,
                  GradKey{11, 2, mb, static_cast<uint32_t>(rb.rank()), 5, numel, GenMode::dyadic},
                  false, Stream::compute);
      Buffer out = rb.allocate(MemSpace::device, DType::fp32, shard, Stream::comm);
      rb.reduce_scatter(out, grad);
      if (saved)
        rb.add(saved, out, MemSpace::device, Stream::compute);
      else
        saved = std::move(out);
    }
    rb.scale(saved, 1.0 / n, Stream::compute);
    const OracleKey key{11,
                        2,
                        k,
                        static_cast<uint32_t>(n),
                        static_cast<uint32_t>(rb.rank()),
                        5,
                        numel,
                        shard * rb.rank(),
                        GenMode::dyadic,
                        DType::fp32};
    rb.begin_step();
    ShardCheck ok = rb.check_shard(saved, key);
    EXPECT_EQ(ok.err_norm2, 0.0);
    EXPECT_GT(ok.ref_norm2, 0.0);
    EXPECT_EQ(ok.nonfinite, 0u);
    EXPECT_EQ(ok.bad_padding, 0u);

    // Plant: +1 at element 0, NaN at element 1, 1.0 in the last padding element (last rank).
    Buffer h = rb.allocate(MemSpace::pinned_host, DType::fp32, shard, Stream::copy);
    rb.copy(h, saved, Stream::copy);
    rb.host_wait(rb.record(Stream::copy));
    float* p = static_cast<float*>(h.data());
    p[0] += 1.0f;
    p[1] = std::numeric_limits<float>::quiet_NaN();
    const bool has_padding = shard * (rb.rank() + 1) > numel;
    if (has_padding) p[shard - 1] = 1.0f;
    const StepMetrics before = rb.end_step();
    rb.begin_step();
    const ShardCheck on_host = rb.check_shard(h, key);
    rb.copy(saved, h, Stream::copy);
    const ShardCheck on_device = rb.check_shard(saved, key);
    const StepMetrics m = rb.end_step();
    for (const ShardCheck& c : {on_host, on_device}) {
      EXPECT_EQ(c.err_norm2, 1.0);
      EXPECT_EQ(c.nonfinite, 1u);
      EXPECT_EQ(c.bad_padding, has_padding ? 1u : 0u);
      EXPECT_EQ(c.ref_norm2, ok.ref_norm2);
    }
    EXPECT_EQ(m.h2d_bytes, shard * 4);  // the planted copy back, not the oracle's staging
    EXPECT_EQ(m.d2h_bytes, 0u);
    EXPECT_EQ(before.d2h_bytes, shard * 4);
  });
}

// Events order streams; an event id that was never recorded is rejected.

}  // namespace
}  // namespace shardaccum
