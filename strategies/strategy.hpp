#pragma once
// The strategy (docs/DESIGN.md §3): one value of each axis — binding, offload, mode, division,
// copy-in — each a small state machine or policy in a file of its own under strategies/<axis>/,
// registered by name (strategies/registry.hpp), composed here behind one AccumulationStrategy
// whose hooks the step driver calls.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype.hpp"
#include "strategies/binding/binding.hpp"
#include "strategies/copy_in/copy_in.hpp"
#include "strategies/division/division.hpp"
#include "strategies/mode/mode_tracking.hpp"
#include "strategies/offload/offload_policy.hpp"
#include "strategies/schedule.hpp"
#include "strategies/unit_grad.hpp"

namespace shardaccum {

/// How many reduce-scatters may still be in flight when the backward goes on (docs/DESIGN.md §2):
/// zero, the compute stream waits for each (fully exposed); one, FSDP2's one group behind;
/// unbounded, no per-unit wait, the compute stream waits for the comm stream at the micro-batch's
/// end; buckets, DeepSpeed ZeRO-3's reduce buckets (ReduceBuckets, strategies/reduce_buckets.hpp):
/// a unit's sync waits until its bucket is flushed, at most 3 buckets are in flight before the
/// host waits for the oldest, and the host waits for the comm stream at the micro-batch's end.
enum class Lookahead : uint8_t { zero, one, unbounded, buckets };

/// "0", "1", "unbounded" or "buckets", as on the command line and in case names.
const char* lookahead_name(Lookahead l);
/// Parses lookahead_name's spellings. Throws std::invalid_argument naming --lookahead.
Lookahead parse_lookahead(std::string_view s);
/// Every lookahead value, in order.
inline constexpr Lookahead kLookaheads[] = {Lookahead::zero, Lookahead::one, Lookahead::unbounded,
                                            Lookahead::buckets};

/// A strategy = one value of each axis, by registered name, and its lookahead.
struct StrategySpec {
  std::string binding = "data-free";
  std::string offload = "none";
  std::string mode = "flag";
  std::string division = "end";
  /// nullopt: the strategy's default (default_lookahead()).
  std::optional<Lookahead> lookahead = std::nullopt;
  /// What the reduce-scatter reads (strategies/copy_in/); last, so that positional initialisers of
  /// the four axes and the lookahead keep their meaning.
  std::string copy_in = kDefaultCopyIn;
  /// "binding:B/offload:O/mode:M", then "/division:D" unless D is the axis's default
  /// (kDefaultDivision), then "/copy-in:C" unless C is kDefaultCopyIn, then "/lookahead:V" when
  /// `lookahead` was chosen (--lookahead; left out at the strategy's default): an axis added later
  /// leaves names, filters and compare baselines as they were, and one run's cases at one chosen
  /// lookahead share the segment.
  std::string name() const;
  /// The registered lookahead of the preset with these four axis values, whatever the copy-in
  /// (PresetRegistry::of), else Lookahead::one, so that one case name always means one behaviour.
  Lookahead default_lookahead() const;
  /// `lookahead` if given, else default_lookahead().
  Lookahead effective_lookahead() const { return lookahead ? *lookahead : default_lookahead(); }
  /// The same axis values and the same effective lookahead.
  bool operator==(const StrategySpec& o) const {
    return binding == o.binding && offload == o.offload && mode == o.mode &&
           division == o.division && copy_in == o.copy_in &&
           effective_lookahead() == o.effective_lookahead();
  }
};

/// The default of the `division` axis, left out of case names.
inline constexpr const char* kDefaultDivision = "end";

/// Throws std::invalid_argument naming the flag when an axis value of `s` is not registered.
void validate(const StrategySpec& s);
/// As validate(s), and refuses dtypes `t` the strategy cannot run: grad != reduce without a
/// copy-in that casts (separate_input), with std::invalid_argument naming --dtype and --copy-in.
void validate(const StrategySpec& s, const DTypeTriple& t);

/// One rank's strategy: the hooks the step driver calls.
class AccumulationStrategy {
 public:
  /// Throws std::invalid_argument for an unregistered axis value or dtypes the copy-in cannot
  /// cast (validate(spec, dtypes)). `chunk_bytes`: the pipelined
  /// offloads' chunk (CasePlan::chunk_bytes).
  AccumulationStrategy(const StrategySpec& spec, size_t units, DTypeTriple dtypes,
                       uint64_t chunk_bytes = kDefaultChunkBytes, int host_threads = 0);
  const StrategySpec& spec() const { return spec_; }
  bool offloaded() const { return offload_->offloaded(); }
  const OffloadPolicy& offload() const { return *offload_; }
  const ModeTracking& mode() const { return *mode_; }
  const CopyIn& copy_in() const { return *copy_in_; }
  /// How far the backward runs ahead of the reduce-scatters (spec().effective_lookahead()).
  Lookahead lookahead() const { return lookahead_; }

  /// Decide what the existing gradient means, before the unit's backward of micro-batch mb.
  void prepare_backward(UnitGrad& u, int mb, MicroBatchMode mode);
  /// THE variable part: fold the reduce-scatter result `out` into the saved shard. `boundary`:
  /// mb is the step's last micro-batch (AddSite::boundary).
  void accumulate(RankBackend& be, UnitGrad& u, Buffer out, int mb, bool boundary = false);
  /// The division axis at a sync: before the reduce-scatter (on the unsharded gradient), its
  /// reduction, and after it (on its output); see Division.
  void before_reduce_scatter(RankBackend& be, Buffer& grad) const {
    division_->before_reduce_scatter(be, grad);
  }
  ReduceOp reduce_op(int world_size) const { return division_->steps(world_size).op; }
  void after_reduce_scatter(RankBackend& be, Buffer& out) const {
    division_->after_reduce_scatter(be, out);
  }
  /// The end of a backward micro-batch with syncs (OffloadPolicy::end_backward).
  void end_backward(RankBackend& be, std::span<UnitGrad> units) const {
    offload_->end_backward(be, units);
  }
  /// Make the saved shard the mean over ranks (the division axis `end`); then it is ready for
  /// the optimizer.
  void finalize(RankBackend& be, UnitGrad& u);

 private:
  StrategySpec spec_;
  DTypeTriple dtypes_;
  std::unique_ptr<ModeTracking> mode_;
  std::unique_ptr<OffloadPolicy> offload_;
  std::unique_ptr<Binding> binding_;
  std::unique_ptr<Division> division_;
  std::unique_ptr<CopyIn> copy_in_;
  Lookahead lookahead_ = Lookahead::one;
};

}  // namespace shardaccum
