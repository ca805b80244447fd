#pragma once
// Test only: a RankBackend that forwards every call to another rank, so a test double overrides
// just the one call it changes (an extra copy, a wrong scale) and stays right when the interface
// grows.
#include <functional>
#include <utility>

#include "strategies/backend/backend.hpp"

namespace shardaccum::testing {

class ForwardingRank : public RankBackend {
 public:
  explicit ForwardingRank(RankBackend& inner) : in_(inner) {}
  int rank() const override { return in_.rank(); }
  int world_size() const override { return in_.world_size(); }
  Buffer allocate(MemSpace sp, DType t, uint64_t n, Stream s) override {
    return in_.allocate(sp, t, n, s);
  }
  Buffer allocate_host_cached(DType t, uint64_t n, Stream s,
                              std::span<const uint64_t> pieces) override {
    return in_.allocate_host_cached(t, n, s, pieces);
  }
  Buffer allocate_pinned_counted(DType t, uint64_t n, Stream s, uint64_t counted) override {
    return in_.allocate_pinned_counted(t, n, s, counted);
  }
  void set_cpu_add_threads(int n) override { in_.set_cpu_add_threads(n); }
  void set_cpu_add_split(CpuAddSplit s) override { in_.set_cpu_add_split(s); }
  void set_device_add_grid(DeviceAddGrid g) override { in_.set_device_add_grid(g); }
  void set_comm_priority(CommPriority p) override { in_.set_comm_priority(p); }
  void copy(Buffer& d, const Buffer& s, Stream st) override { in_.copy(d, s, st); }
  void copy_param(Buffer& d, const Buffer& s, Stream st) override { in_.copy_param(d, s, st); }
  void add(Buffer& d, const Buffer& s, MemSpace sp, Stream st) override { in_.add(d, s, sp, st); }
  void convert(Buffer& d, const Buffer& s, Stream st) override { in_.convert(d, s, st); }
  void scale(Buffer& d, double f, Stream s) override { in_.scale(d, f, s); }
  void generate(Buffer& g, const GradKey& k, bool acc, Stream s) override {
    in_.generate(g, k, acc, s);
  }
  void gemm_backward(Buffer& g, const FlatParam& u, uint64_t t, bool tf32, Buffer& w,
                     Stream s) override {
    in_.gemm_backward(g, u, t, tf32, w, s);
  }
  void reduce_scatter(Buffer& o, const Buffer& i, ReduceOp op = ReduceOp::sum) override {
    in_.reduce_scatter(o, i, op);
  }
  Event record(Stream s) override { return in_.record(s); }
  void wait(Stream w, Event e) override { in_.wait(w, e); }
  void host_wait(Event e) override { in_.host_wait(e); }
  bool host_ready(Event e) override { return in_.host_ready(e); }
  void host_task(Event e, std::function<void()> t) override { in_.host_task(e, std::move(t)); }
  void near_device(const std::function<void()>& fn) override { in_.near_device(fn); }
  void host_busy(uint32_t us) override { in_.host_busy(us); }
  bool any_rank(bool mine) override { return in_.any_rank(mine); }
  ShardCheck check_shard(const Buffer& b, const OracleKey& k) override {
    return in_.check_shard(b, k);
  }
  void begin_step() override { in_.begin_step(); }
  StepMetrics end_step() override { return in_.end_step(); }
  void release(Buffer& b) noexcept override { in_.release(b); }
  MemorySnapshot memory_snapshot() override { return in_.memory_snapshot(); }

 protected:
  RankBackend& in_;
};

}  // namespace shardaccum::testing
