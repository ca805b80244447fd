#include "bench/benchmark_args.hpp"

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <stdexcept>

namespace shardaccum {

std::string flag_value(const std::vector<std::string>& args, const std::string& flag) {
  // The last one wins, as Google Benchmark's own parsing of argv does (each overwrites the flag).
  std::string value;
  for (const auto& a : args)
    if (a.rfind(flag + "=", 0) == 0) value = a.substr(flag.size() + 1);
  return value;
}

std::vector<std::string> filtered_case_names(const std::vector<CaseSpec>& cases,
                                             const std::vector<std::string>& args,
                                             const std::string& gb_suffix, bool strict) {
  std::vector<std::string> run_names;
  std::string filter = flag_value(args, "--benchmark_filter");
  try {
    // As GB's RunSpecifiedBenchmarks: "all" first, then a leading '-', then a POSIX extended
    // regex (its re.h, std::regex or regcomp alike).
    const std::string spec = filter.empty() || filter == "all" ? "." : filter;
    const bool negate = spec[0] == '-';
    const std::regex re(negate ? spec.substr(1) : spec, std::regex::extended);
    for (const auto& c : cases)
      if (std::regex_search(c.name() + gb_suffix, re) != negate) run_names.push_back(c.name());
  } catch (const std::regex_error& e) {
    if (strict)
      throw std::invalid_argument("--benchmark_filter=" + filter +
                                  ": not a POSIX extended regular expression (" + e.what() + ")");
    for (const auto& c : cases) run_names.push_back(c.name());
  }
  return run_names;
}

std::string registered_suffix(int steps) {
  return "/iterations:" + std::to_string(steps) + "/manual_time";
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
