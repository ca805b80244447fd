#include "bench/cli_suggest.hpp"

#include <algorithm>

#include "bench/cli_values.hpp"

namespace shardaccum {

const std::vector<std::string>& google_benchmark_flags() {
  // The union of both versions: a flag only the newer reads is then reported by GB itself.
  static const std::vector<std::string> flags = {
      "--benchmark_list_tests",
      "--benchmark_filter",
      "--benchmark_min_time",
      "--benchmark_min_warmup_time",
      "--benchmark_repetitions",
      "--benchmark_enable_random_interleaving",
      "--benchmark_report_aggregates_only",
      "--benchmark_display_aggregates_only",
      "--benchmark_format",
      "--benchmark_out_format",
      "--benchmark_out",
      "--benchmark_color",
      "--benchmark_time_unit",
      "--benchmark_counters_tabular",
      "--benchmark_perf_counters",
      "--benchmark_context",
      "--v",
  };
  return flags;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows of the dynamic programme: the swap looks two rows back.
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string> nearest_all(std::string_view flag,
                                     const std::vector<std::string>& candidates) {
  const std::string_view name = flag.substr(0, flag.find('='));
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  std::vector<std::string> best;
  size_t best_d = limit + 1;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(name, c);
    if (d < best_d) {
      best.clear();
      best_d = d;
    }
    if (d == best_d) best.push_back(c);
  }
  return best;
}

std::string nearest_flag(std::string_view flag, const std::vector<std::string>& candidates) {
  const std::vector<std::string> best = nearest_all(flag, candidates);
  return best.empty() ? std::string() : best.front();
}

std::string unknown_flag_message(std::string_view flag,
                                 const std::vector<std::string>& candidates) {
  const std::string name(flag.substr(0, flag.find('=')));
  const std::string near = nearest_flag(name, candidates);
  return "unknown flag " + brief(name) + (near.empty() ? "" : "; did you mean " + near + "?") +
         " (see --help)";
}

}  // namespace shardaccum
