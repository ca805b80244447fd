// The cuda rank's comm stream priority (label gpu, RankBackend::set_comm_priority,
// strategies/backend/comm_priority.hpp): the comm stream is at the device's greatest priority until
// a case asks for 0, the swap waits for the old stream's work, and a change inside a step is
// refused.
#include <cuda_runtime.h>

#include "gpu_backend_fixture.hpp"
#include "strategies/backend/cuda_rank.hpp"

namespace shardaccum {
namespace {

using testing::CudaBackendTest;
using testing::kMiB;

int priority_of(cudaStream_t s) {
  int p = 1;
  EXPECT_EQ(cudaStreamGetPriority(s, &p), cudaSuccess);
  return p;
}

TEST_F(CudaBackendTest, CommPrioritySwapsTheCommStreamAfterItsWork) {
  int least = 0, greatest = 0;
  ASSERT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  ASSERT_LT(greatest, 0) << "this device has one stream priority: nothing to tell apart";
  be().run([&](RankBackend& rb) {
    auto& cr = dynamic_cast<cuda::CudaRank&>(rb);
    EXPECT_EQ(priority_of(cr.stream(Stream::comm)), greatest);
    const uint64_t n = 64 * kMiB;
    Buffer d = rb.allocate(MemSpace::device, DType::fp32, n, Stream::comm);
    Buffer h = rb.allocate(MemSpace::pinned_host, DType::fp32, n, Stream::copy);
    const GradKey key{3, 1, 0, 0, 0, n, GenMode::dyadic};
    rb.generate(d, key, false, Stream::comm);  // queued on the greatest-priority stream
    rb.set_comm_priority(CommPriority::normal);
    EXPECT_EQ(priority_of(cr.stream(Stream::comm)), 0);
    // Nothing orders the copy after the generator but the swap's wait for the old stream.
    rb.begin_step();
    rb.copy(h, d, Stream::comm);
    rb.host_wait(rb.record(Stream::comm));
    const float* v = static_cast<const float*>(h.data());
    for (uint64_t i = 0; i < n; i += 65537) ASSERT_EQ(v[i], grad_value(key, i)) << i;
    EXPECT_THROW(rb.set_comm_priority(CommPriority::greatest), BackendError);
    rb.end_step();
    rb.set_comm_priority(CommPriority::greatest);
    EXPECT_EQ(priority_of(cr.stream(Stream::comm)), greatest);
  });
}

}  // namespace
}  // namespace shardaccum
