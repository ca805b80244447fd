#pragma once
// Test only (never linked into shardaccum_bench): a backend that wraps the host backend and makes
// the strategy's result wrong on chosen steps. Strategies never see the step index, so the fault
// sits in the one call every strategy makes once per unit and step: finalize's divide by N
// (RankBackend::scale), doubled on a faulty step, which leaves each shard 2x the exact sum / N.
#include <functional>
#include <memory>
#include <vector>

#include "strategies/backend/host_backend.hpp"

namespace shardaccum::testing {

/// Step `s` (0 = the first begin_step, the warm-up) is faulty when faulty(s).
using StepFault = std::function<bool(int step)>;

class FaultyRank final : public RankBackend {
 public:
  FaultyRank(RankBackend& inner, StepFault faulty) : in_(inner), faulty_(std::move(faulty)) {}
  int rank() const override { return in_.rank(); }
  int world_size() const override { return in_.world_size(); }
  Buffer allocate(MemSpace sp, DType t, uint64_t n, Stream s) override { return in_.allocate(sp, t, n, s); }
  void copy(Buffer& d, const Buffer& s, Stream st) override { in_.copy(d, s, st); }
  void add(Buffer& d, const Buffer& s, MemSpace sp, Stream st) override { in_.add(d, s, sp, st); }
  void convert(Buffer& d, const Buffer& s, Stream st) override { in_.convert(d, s, st); }
  void scale(Buffer& d, double f, Stream s) override { in_.scale(d, faulty_(step_) ? 2 * f : f, s); }
  void generate(Buffer& g, const GradKey& k, bool acc, Stream s) override { in_.generate(g, k, acc, s); }
  void reduce_scatter(Buffer& o, const Buffer& i) override { in_.reduce_scatter(o, i); }
  Event record(Stream s) override { return in_.record(s); }
  void wait(Stream w, Event e) override { in_.wait(w, e); }
  void host_wait(Event e) override { in_.host_wait(e); }
  void host_task(Event e, std::function<void()> t) override { in_.host_task(e, std::move(t)); }
  bool any_rank(bool mine) override { return in_.any_rank(mine); }
  ShardCheck check_shard(const Buffer& b, const OracleKey& k) override { return in_.check_shard(b, k); }
  void begin_step() override {
    ++step_;
    in_.begin_step();
  }
  StepMetrics end_step() override { return in_.end_step(); }
  void release(Buffer& b) noexcept override { in_.release(b); }

 private:
  RankBackend& in_;
  StepFault faulty_;
  int step_ = -1;
};

/// The host backend with every rank wrapped in a FaultyRank (kept across steps: a StepDriver
/// holds on to its rank).
class FaultyBackend final : public Backend {
 public:
  FaultyBackend(int world, StepFault faulty)
      : inner_(make_host_backend({world, 1})), faulty_(std::move(faulty)), ranks_(world) {}
  std::string name() const override { return "host"; }
  int world_size() const override { return inner_->world_size(); }
  nlohmann::json context() const override { return inner_->context(); }
  bool gpu_times() const override { return false; }
  void run(const std::function<void(RankBackend&)>& fn) override {
    inner_->run([&](RankBackend& rb) {
      auto& mine = ranks_[rb.rank()];  // one slot per rank thread: no two threads share one
      if (!mine) mine = std::make_unique<FaultyRank>(rb, faulty_);
      fn(*mine);
    });
  }

 private:
  std::unique_ptr<Backend> inner_;
  StepFault faulty_;
  std::vector<std::unique_ptr<FaultyRank>> ranks_;
};

}  // namespace shardaccum::testing
