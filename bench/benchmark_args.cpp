#include "bench/benchmark_args.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>
#include <stdexcept>

#include "bench/context_keys.hpp"

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

namespace {

bool is_boolean(std::string v) {
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* b : {"true", "false", "yes", "no", "on", "off", "1", "0", "t", "f", "y", "n"})
    if (v == b) return true;
  return false;
}

}  // namespace

std::string benchmark_flag_error(const std::string& arg) {
  const size_t eq = arg.find('=');
  if (arg.rfind("--benchmark_", 0) != 0 || eq == std::string::npos) return {};
  const std::string flag = arg.substr(0, eq), value = arg.substr(eq + 1);
  if (flag == "--benchmark_time_unit" && value != "ns" && value != "us" && value != "ms" &&
      value != "s")
    return arg + ": expected ns, us, ms or s";
  // GB answers an unknown display format with its usage text and exit 0, running nothing.
  if ((flag == "--benchmark_out_format" || flag == "--benchmark_format") && value != "json" &&
      value != "csv" && value != "console")
    return arg + ": expected json, csv or console";
  if (flag == "--benchmark_repetitions") {
    const bool digits = !value.empty() && value.size() <= 4 &&
                        std::all_of(value.begin(), value.end(),
                                    [](unsigned char c) { return std::isdigit(c) != 0; });
    const long n = digits ? std::atol(value.c_str()) : 0;
    if (n < 1 || n > 1000) return arg + ": give 1 to 1000 repetitions (a decimal integer)";
  }
  if (flag == "--benchmark_min_time")
    return arg + ": every case runs a fixed number of measured steps, which a minimum time never "
                 "lengthens; give --steps N (and --benchmark_repetitions=N) instead";
  if (flag == "--benchmark_color" && value != "auto" && !is_boolean(value))
    return arg + ": expected auto, true or false";
  for (const char* b : {"--benchmark_counters_tabular", "--benchmark_list_tests",
                        "--benchmark_report_aggregates_only", "--benchmark_display_aggregates_only",
                        "--benchmark_enable_random_interleaving"})
    if (flag == b && !is_boolean(value)) return arg + ": expected true or false";
  if (flag == "--benchmark_context") {
    size_t start = 0;
    while (start <= value.size()) {
      const size_t comma = std::min(value.find(',', start), value.size());
      const std::string pair = value.substr(start, comma - start);
      if (pair.find('=') == std::string::npos || pair.front() == '=')
        return arg + ": expected KEY=VALUE pairs separated by commas ('" + pair + "' has no KEY=)";
      const std::string key = pair.substr(0, pair.find('='));
      if (reserved_context_key(key))
        return arg + ": '" + key +
               "' is a key the run writes itself (docs/DESIGN.md §7); give your key another name";
      start = comma + 1;
    }
  }
  return {};
}

}  // namespace shardaccum
