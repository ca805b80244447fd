#include "strategies/division/division.hpp"

namespace shardaccum {

void Division::before_reduce_scatter(RankBackend& be, Buffer& grad) const {
  const DivisionSteps d = steps(be.world_size());
  if (d.pre_pass) be.scale(grad, 1.0 / d.pre, Stream::comm);
}

void Division::after_reduce_scatter(RankBackend& be, Buffer& out) const {
  const DivisionSteps d = steps(be.world_size());
  if (d.post_pass) be.scale(out, 1.0 / d.post, Stream::comm);
}

void Division::finalize(RankBackend& be, UnitGrad& u) const {
  if (!u.saved || !steps(be.world_size()).at_end) return;
  const double inv_n = 1.0 / be.world_size();
  if (u.saved.space() == MemSpace::pinned_host) {
    // After the last D2H into saved has landed and after every CPU add queued before it.
    be.host_task(be.record(Stream::copy),
                 [&be, &u, inv_n] { be.scale(u.saved, inv_n, Stream::copy); });
  } else {
    be.scale(u.saved, inv_n, Stream::compute);
  }
}

DivisionSteps division_steps(std::string_view name, int world_size) {
  // The steps depend on N only: the unit count and dtypes of AxisArgs are not read.
  return DivisionRegistry::get().make(name, AxisArgs{})->steps(world_size);
}

std::pair<double, double> gradient_divide_factors(int world_size) {
  int factor = 1;
  while (world_size % factor == 0 && world_size / static_cast<double>(factor) > factor) factor *= 2;
  return {factor, world_size / static_cast<double>(factor)};
}

}  // namespace shardaccum
