// Composition of the five axes behind one AccumulationStrategy.
#include "strategies/strategy.hpp"

#include <algorithm>
#include <stdexcept>

#include "strategies/preset/preset.hpp"

namespace shardaccum {

const char* lookahead_name(Lookahead l) {
  switch (l) {
  case Lookahead::zero: return "0";
  case Lookahead::one: return "1";
  case Lookahead::unbounded: return "unbounded";
  case Lookahead::buckets: return "buckets";
  }
  return "?";
}

Lookahead parse_lookahead(std::string_view s) {
  for (Lookahead l : kLookaheads)
    if (s == lookahead_name(l)) return l;
  throw std::invalid_argument("--lookahead: unknown value '" + std::string(s) +
                              "' (expected 0, 1, unbounded, buckets)");
}

std::string StrategySpec::name() const {
  std::string n = "binding:" + binding + "/offload:" + offload + "/mode:" + mode;
  if (division != kDefaultDivision) n += "/division:" + division;
  if (copy_in != kDefaultCopyIn) n += "/copy-in:" + copy_in;
  // Named whenever it was chosen (--lookahead), default or not: one run's cases at one lookahead
  // share the segment, so filters and the report's groups see the lookahead each really ran at.
  if (lookahead) n += std::string("/lookahead:") + lookahead_name(*lookahead);
  return n;
}

Lookahead StrategySpec::default_lookahead() const {
  const PresetInfo* p = PresetRegistry::get().of(*this);
  return p ? p->lookahead : Lookahead::one;
}

void validate(const StrategySpec& s) {
  (void)BindingRegistry::get().at(s.binding);
  (void)OffloadRegistry::get().at(s.offload);
  (void)ModeRegistry::get().at(s.mode);
  (void)DivisionRegistry::get().at(s.division);
  (void)CopyInRegistry::get().at(s.copy_in);
}

void validate(const StrategySpec& s, const DTypeTriple& t) {
  validate(s);
  if (t.grad != t.reduce && !copy_in_separate(s.copy_in))
    throw std::invalid_argument("--dtype " + t.name() +
                                " casts the gradient to the reduce dtype, which only a copy-in "
                                "does: add --copy-in chunk-cat (FSDP2's), or use --dtype " +
                                dtype_name(t.grad) + "-" + dtype_name(t.grad) + "-" +
                                dtype_name(t.accum) + " (case strategy " + s.name() + ")");
}

AccumulationStrategy::AccumulationStrategy(const StrategySpec& spec, size_t units,
                                           DTypeTriple dtypes, uint64_t chunk_bytes,
                                           int host_threads)
    : spec_(spec), dtypes_(dtypes) {
  const AxisArgs args{units, dtypes, chunk_bytes, host_threads};
  mode_ = ModeRegistry::get().make(spec.mode, args);
  offload_ = OffloadRegistry::get().make(spec.offload, args);
  binding_ = BindingRegistry::get().make(spec.binding, args);
  division_ = DivisionRegistry::get().make(spec.division, args);
  copy_in_ = CopyInRegistry::get().make(spec.copy_in, args);
  validate(spec, dtypes);
  lookahead_ = spec.effective_lookahead();
}

void AccumulationStrategy::prepare_backward(UnitGrad& u, int, MicroBatchMode mode) {
  mode_->prepare_backward(u.index, mode);
}

void AccumulationStrategy::accumulate(RankBackend& be, UnitGrad& u, Buffer out, int mb,
                                      bool boundary) {
  const AddSite site{u.index, &u.name, mb, boundary};
  if (!mode_->has_saved_shard(u.index, view_of(u.saved), u.shard)) {
    offload_->start_saved(be, u, std::move(out), dtypes_.accum, site);
    mode_->shard_saved(u.index);
  } else if (offload_->add_to_saved(be, u, std::move(out), dtypes_.accum, *binding_, site)) {
    mode_->shard_saved(u.index);
  }
}

void AccumulationStrategy::finalize(RankBackend& be, UnitGrad& u) {
  division_->finalize(be, u);
  mode_->finalized(u.index);
}

}  // namespace shardaccum
