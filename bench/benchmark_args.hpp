#pragma once
// What Google Benchmark's own flags (--benchmark_*, passed through untouched) say about the run:
// which cases will run and how often, for the progress line and the ranks' build hash.
#include <cstddef>
#include <string>
#include <vector>

#include "bench/case_matrix.hpp"

namespace shardaccum {

/// The value of the last "FLAG=VALUE" in `args`, or empty.
std::string flag_value(const std::vector<std::string>& args, const std::string& flag);

/// The names of `cases` that --benchmark_filter in `args` keeps, as Google Benchmark selects them:
/// a POSIX extended regex searched in the registered name (the case's name and `gb_suffix`, e.g.
/// "/iterations:3/manual_time"), a leading '-' negates, empty or "all" keeps every case. A regex
/// GB would refuse keeps every case (GB then reports it), or with `strict` throws
/// std::invalid_argument naming --benchmark_filter (--list, where GB never sees the filter).
std::vector<std::string> filtered_case_names(const std::vector<CaseSpec>& cases,
                                             const std::vector<std::string>& args,
                                             const std::string& gb_suffix = {},
                                             bool strict = false);

/// The suffix Google Benchmark appends to a case registered with `steps` fixed iterations and
/// manual time (bench/bench_cases.cpp), as its filter sees the name.
std::string registered_suffix(int steps);

/// Case runs the progress line counts down: `runs` x --benchmark_repetitions (at least 1).
size_t case_runs(size_t runs, const std::vector<std::string>& args);

/// Whether `args` ask GB only to list the cases (--benchmark_list_tests or =true).
bool lists_tests(const std::vector<std::string>& args);

/// The error for one Google Benchmark argument "--benchmark_NAME=VALUE" whose value GB would take
/// silently or answer with its usage text and exit 0 (its flag parser falls back to a default, or
/// prints usage, for a bad value), or empty when it is fine or not one of these flags:
/// --benchmark_time_unit (ns, us, ms, s), --benchmark_out_format (json, csv, console),
/// --benchmark_repetitions (1..1000, decimal, as --steps),
/// the boolean flags (true/false, yes/no, on/off, 1/0, t/f, y/n; --benchmark_color also auto),
/// --benchmark_context (KEY=VALUE pairs, comma-separated), and --benchmark_min_time, refused
/// because every case runs a fixed number of iterations (--steps), which GB's minimum time never
/// lengthens.
std::string benchmark_flag_error(const std::string& arg);

}  // namespace shardaccum
