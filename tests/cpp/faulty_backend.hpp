#pragma once
// Test only (never linked into shardaccum_bench): a backend that wraps the host backend and makes
// the strategy's result wrong on chosen steps. Strategies never see the step index, so the fault
// sits in the one call every strategy with the division `end` (the default) makes once per unit
// and step: finalize's divide by N (RankBackend::scale), doubled on a faulty step, which leaves
// each shard 2x the exact sum / N.
#include <functional>
#include <memory>
#include <vector>

#include "forwarding_rank.hpp"
#include "strategies/backend/host_backend.hpp"

namespace shardaccum::testing {

/// Step `s` (0 = the first begin_step, the warm-up) is faulty when faulty(s).
using StepFault = std::function<bool(int step)>;

class FaultyRank final : public ForwardingRank {
 public:
  FaultyRank(RankBackend& inner, StepFault faulty)
      : ForwardingRank(inner), faulty_(std::move(faulty)) {}
  void scale(Buffer& d, double f, Stream s) override {
    in_.scale(d, faulty_(step_) ? 2 * f : f, s);
  }
  void begin_step() override {
    ++step_;
    in_.begin_step();
  }

 private:
  StepFault faulty_;
  int step_ = -1;
};

/// The host backend with every rank wrapped by `wrap` (kept across steps and cases: a StepDriver
/// holds on to its rank, and each rank thread has its own slot).
class WrappedBackend final : public Backend {
 public:
  using RankFactory = std::function<std::unique_ptr<RankBackend>(RankBackend&)>;
  WrappedBackend(int world, RankFactory wrap)
      : inner_(make_host_backend({world, 1})), wrap_(std::move(wrap)), ranks_(world) {}
  std::string name() const override { return "host"; }
  int world_size() const override { return inner_->world_size(); }
  nlohmann::json context() const override { return inner_->context(); }
  bool gpu_times() const override { return false; }
  void run(const std::function<void(RankBackend&)>& fn) override {
    inner_->run([&](RankBackend& rb) {
      auto& mine = ranks_[rb.rank()];  // one slot per rank thread: no two threads share one
      if (!mine) mine = wrap_(rb);
      fn(*mine);
    });
  }

 private:
  std::unique_ptr<Backend> inner_;
  RankFactory wrap_;
  std::vector<std::unique_ptr<RankBackend>> ranks_;
};

/// The host backend with every rank wrapped in a FaultyRank.
inline std::unique_ptr<Backend> faulty_backend(int world, StepFault faulty) {
  return std::make_unique<WrappedBackend>(
      world, [faulty = std::move(faulty)](RankBackend& rb) -> std::unique_ptr<RankBackend> {
        return std::make_unique<FaultyRank>(rb, faulty);
      });
}

}  // namespace shardaccum::testing
