// The checked add of binding data-free rejects operands of the wrong space, size or dtype, with a
// message naming unit, micro-batch and both operands; the raw add of binding data does not check,
// and only the host backend's own guard stops a wrong-space operand.
#include <gtest/gtest.h>

#include "strategies/backend/host_backend.hpp"
#include "strategies/strategy.hpp"

namespace shardaccum {
namespace {

template <class Fn>
void on_one_rank(Fn fn) {
  auto be = make_host_backend({1, 1});
  be->run([&](RankBackend& r) { fn(r); });
}

std::string add_error(const Binding& b, RankBackend& r, Buffer& dst, const Buffer& src,
                      MemSpace where) {
  UnitGrad u;
  u.index = 3;
  u.name = "layers.2";
  const AddSite site{3, &u.name, 1};
  try {
    b.add(r, dst, src, where, u, site);
  } catch (const AccumulationError& e) {
    return e.what();
  }
  return {};
}

TEST(CheckedAdd, RejectsWrongSpaceSizeAndDtype) {
  on_one_rank([](RankBackend& r) {
    const auto b = BindingRegistry::get().make("data-free", {});
    Buffer dev = r.allocate(MemSpace::device, DType::fp32, 64, Stream::compute);
    Buffer pin = r.allocate(MemSpace::pinned_host, DType::fp32, 64, Stream::copy);
    Buffer small = r.allocate(MemSpace::device, DType::fp32, 32, Stream::compute);
    Buffer narrow = r.allocate(MemSpace::device, DType::bf16, 64, Stream::compute);

    std::string e = add_error(*b, r, pin, dev, MemSpace::device);
    EXPECT_NE(e.find("memory space"), std::string::npos) << e;
    EXPECT_NE(e.find("unit 3 (layers.2), micro-batch 1"), std::string::npos) << e;
    EXPECT_NE(e.find("pinned_host fp32[64]"), std::string::npos) << e;
    EXPECT_NE(e.find("device fp32[64]"), std::string::npos) << e;

    e = add_error(*b, r, dev, small, MemSpace::device);
    EXPECT_NE(e.find("element counts differ"), std::string::npos) << e;

    e = add_error(*b, r, narrow, dev, MemSpace::device);
    EXPECT_NE(e.find("narrower"), std::string::npos) << e;
  });
}

TEST(CheckedAdd, AcceptsMatchingOperandsAndBumpsTheVersion) {
  on_one_rank([](RankBackend& r) {
    const auto b = BindingRegistry::get().make("data-free", {});
    Buffer acc = r.allocate(MemSpace::device, DType::fp32, 16, Stream::compute);
    Buffer add = r.allocate(MemSpace::device, DType::bf16, 16, Stream::compute);
    r.generate(acc, GradKey{1, 0, 0, 0, 0, 16}, false, Stream::compute);
    r.generate(add, GradKey{2, 0, 0, 0, 0, 16}, false, Stream::compute);
    UnitGrad u;
    const AddSite site{0, &u.name, 0};
    b->add(r, acc, add, MemSpace::device, u, site);
    b->add(r, acc, add, MemSpace::device, u, site);
    EXPECT_EQ(u.saved_version, 2u);
    const float* a = static_cast<const float*>(acc.data());
    for (uint64_t i = 0; i < 16; ++i)
      EXPECT_EQ(a[i], grad_value(GradKey{1, 0, 0, 0, 0, 16}, i) +
                          2 * grad_value(GradKey{2, 0, 0, 0, 0, 16}, i));
  });
}

TEST(RawAdd, HasNoChecksButTheBackendStopsAWrongSpace) {
  on_one_rank([](RankBackend& r) {
    const auto b = BindingRegistry::get().make("data", {});
    Buffer dev = r.allocate(MemSpace::device, DType::fp32, 8, Stream::compute);
    Buffer pin = r.allocate(MemSpace::pinned_host, DType::fp32, 8, Stream::copy);
    UnitGrad u;
    const AddSite site{0, &u.name, 0};
    EXPECT_THROW(b->add(r, pin, dev, MemSpace::device, u, site), BackendError);
    EXPECT_EQ(u.saved_version, 0u);  // the raw add keeps no version
  });
}

}  // namespace
}  // namespace shardaccum
