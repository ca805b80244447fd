#include "bench/progress.hpp"

#include <algorithm>
#include <cstdio>

namespace shardaccum {

void Progress::set_total(size_t cases, size_t repetitions) {
  cases_ = cases;
  reps_ = std::max<size_t>(1, repetitions);
}

std::string Progress::line(const std::string& name, bool ok) const {
  const auto it = seen_.find(name);
  const size_t number = it == seen_.end() ? 0 : it->second.first;
  const size_t rep = it == seen_.end() ? 0 : it->second.second;
  // GB's own warm-up may call a case once more than counted: the totals never read below done.
  std::string s =
      "[case " + std::to_string(number) + "/" + std::to_string(std::max(cases_, seen_.size()));
  if (reps_ > 1 || rep > 1)
    s += ", rep " + std::to_string(rep) + "/" + std::to_string(std::max(reps_, rep));
  return s + "] " + (ok ? "done " : "FAILED ") + name;
}

void Progress::case_done(const std::string& name, bool ok) {
  ++done_;
  failed_ += ok ? 0 : 1;
  const auto it = seen_.try_emplace(name, seen_.size() + 1, 0).first;
  ++it->second.second;
  if (rank_ != 0) return;  // its failures are printed where they are caught; rank 0 shows the run
  const double el =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const size_t total = std::max(cases_ * reps_, done_);
  const double eta = el / static_cast<double>(done_) * static_cast<double>(total - done_);
  std::fprintf(stderr, "%s  (elapsed %.0f s, about %.0f s left)\n", line(name, ok).c_str(), el,
               eta);
}

}  // namespace shardaccum
