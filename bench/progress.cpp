#include "bench/progress.hpp"

#include <algorithm>
#include <cstdio>

namespace shardaccum {

void Progress::case_done(const std::string& name, bool ok) {
  ++done_;
  failed_ += ok ? 0 : 1;
  total_ = std::max(total_, done_);  // Google Benchmark's own warm-up may call a case again
  if (rank_ != 0) return;  // its failures are printed where they are caught; rank 0 shows the run
  const double el =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = done_ ? el / done_ * (total_ - done_) : 0;
  std::fprintf(stderr, "[%zu/%zu] %s %s  (elapsed %.0f s, about %.0f s left)\n", done_, total_,
               ok ? "done" : "FAILED", name.c_str(), el, eta);
}

}  // namespace shardaccum
