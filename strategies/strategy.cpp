// Composition of the three axes, the presets, and the factories by name.
#include "strategies/strategy.hpp"

#include <algorithm>
#include <stdexcept>

namespace shardaccum {

std::unique_ptr<ModeTracking> make_flag_tracking(size_t units);
std::unique_ptr<ModeTracking> make_shape_tracking();
std::unique_ptr<OffloadPolicy> make_no_offload();
std::unique_ptr<OffloadPolicy> make_gpu_add();
std::unique_ptr<OffloadPolicy> make_cpu_add();
std::unique_ptr<OffloadPolicy> make_copy_offload();
std::unique_ptr<Binding> make_data_binding();
std::unique_ptr<Binding> make_data_free_binding();

std::string AddSite::describe() const {
  return "unit " + std::to_string(unit) + (unit_name ? " (" + *unit_name + ")" : "") +
         ", micro-batch " + std::to_string(micro_batch);
}

std::string StrategySpec::name() const {
  return "binding:" + binding + "/offload:" + offload + "/mode:" + mode;
}

StrategySpec preset(std::string_view name) {
  if (name == "fairscale") return {"data", "copy", "shape"};
  if (name == "fsdp1") return {"data-free", "copy", "shape"};
  if (name == "fsdp2") return {"data-free", "cpu-add", "flag"};
  if (name == "zero3") return {"data-free", "gpu-add", "flag"};
  throw std::invalid_argument("unknown preset '" + std::string(name) +
                              "' (expected fairscale, fsdp1, fsdp2 or zero3)");
}

std::vector<StrategySpec> all_strategies() {
  std::vector<StrategySpec> out;
  for (const char* o : kOffloads)
    for (const char* b : kBindings)
      for (const char* m : kModes) out.push_back({b, o, m});
  return out;
}

namespace {
template <size_t N>
std::string choices(const char* const (&names)[N]) {
  std::string s;
  for (const char* n : names) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}
}  // namespace

std::unique_ptr<ModeTracking> make_mode_tracking(std::string_view name, size_t units) {
  if (name == "flag") return make_flag_tracking(units);
  if (name == "shape") return make_shape_tracking();
  throw std::invalid_argument("--mode: unknown value '" + std::string(name) + "' (expected " +
                              choices(kModes) + ")");
}

std::unique_ptr<OffloadPolicy> make_offload_policy(std::string_view name) {
  if (name == "none") return make_no_offload();
  if (name == "gpu-add") return make_gpu_add();
  if (name == "cpu-add") return make_cpu_add();
  if (name == "copy") return make_copy_offload();
  throw std::invalid_argument("--offload: unknown value '" + std::string(name) + "' (expected " +
                              choices(kOffloads) + ")");
}

std::unique_ptr<Binding> make_binding(std::string_view name) {
  if (name == "data") return make_data_binding();
  if (name == "data-free") return make_data_free_binding();
  throw std::invalid_argument("--binding: unknown value '" + std::string(name) + "' (expected " +
                              choices(kBindings) + ")");
}

AccumulationStrategy::AccumulationStrategy(const StrategySpec& spec, size_t units, DTypeTriple dtypes)
    : spec_(spec),
      dtypes_(dtypes),
      mode_(make_mode_tracking(spec.mode, units)),
      offload_(make_offload_policy(spec.offload)),
      binding_(make_binding(spec.binding)) {}

void AccumulationStrategy::prepare_backward(UnitGrad& u, int, MicroBatchMode mode) {
  mode_->prepare_backward(u.index, mode);
}

void AccumulationStrategy::accumulate(RankBackend& be, UnitGrad& u, Buffer out, int mb) {
  const AddSite site{u.index, &u.name, mb};
  const bool add = mode_->has_saved_shard(u.index, view_of(u.saved), u.shard);
  if (offload_->accumulate(be, u, std::move(out), add, dtypes_.accum, *binding_, site))
    mode_->shard_saved(u.index);
}

void AccumulationStrategy::finalize(RankBackend& be, UnitGrad& u) {
  if (u.saved && u.saved.space() == MemSpace::pinned_host) {
    // After the last D2H into saved has landed and after every CPU add queued before it.
    const double inv_n = 1.0 / be.world_size();
    be.host_task(be.record(Stream::copy), [&be, &u, inv_n] { be.scale(u.saved, inv_n, Stream::copy); });
  } else if (u.saved) {
    be.scale(u.saved, 1.0 / be.world_size(), Stream::compute);
  }
  mode_->finalized(u.index);
}

}  // namespace shardaccum
