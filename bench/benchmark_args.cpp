#include "bench/benchmark_args.hpp"

#include <algorithm>
#include <cstdlib>
#include <regex>

namespace shardaccum {

std::string flag_value(const std::vector<std::string>& args, const std::string& flag) {
  for (const auto& a : args)
    if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
  return {};
}

std::vector<std::string> filtered_case_names(const std::vector<CaseSpec>& cases,
                                             const std::vector<std::string>& args) {
  std::vector<std::string> run_names;
  try {
    std::string filter = flag_value(args, "--benchmark_filter");
    const bool negate = !filter.empty() && filter[0] == '-';
    if (negate) filter.erase(0, 1);
    const std::regex re(filter.empty() || filter == "all" ? "." : filter);
    for (const auto& c : cases)
      if (std::regex_search(c.name(), re) != negate) run_names.push_back(c.name());
  } catch (const std::regex_error&) {
    for (const auto& c : cases) run_names.push_back(c.name());
  }
  return run_names;
}

size_t case_runs(size_t runs, const std::vector<std::string>& args) {
  const std::string reps = flag_value(args, "--benchmark_repetitions");
  if (!reps.empty()) runs *= std::max(1, std::atoi(reps.c_str()));
  return runs;
}

bool lists_tests(const std::vector<std::string>& args) {
  return flag_value(args, "--benchmark_list_tests") == "true" ||
         std::find(args.begin(), args.end(), "--benchmark_list_tests") != args.end();
}

}  // namespace shardaccum
