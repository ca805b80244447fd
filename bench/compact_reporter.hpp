#pragma once
// The console of shardaccum_bench: one line per case and repetition (strategy, case, step time in
// its time domain, verdict and max_rel_err, H2D/D2H/reduce-scatter bytes per step, peak device
// memory) instead of Google Benchmark's dump of every counter. The --benchmark_out file keeps
// every counter (bench/reporters.hpp's file reporter); --benchmark_counters_tabular=true or
// --benchmark_format=json|csv on the display get Google Benchmark's own reporter back.
#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

#include "bench/case_matrix.hpp"

namespace shardaccum {

class CompactReporter : public benchmark::BenchmarkReporter {
 public:
  /// `cases`: the run's cases (looked up by their registered name); `time_domain`: how the step
  /// times were taken ("host wall-clock", "GPU events"), written after every time.
  CompactReporter(const std::vector<CaseSpec>& cases, std::string time_domain);

  /// GB's context (machine, date, the suite's custom context without the registry's JSON) and a
  /// line that says what the columns are, on the error stream as GB's console writes it.
  bool ReportContext(const Context& context) override;
  /// One line per repetition on the output stream, then one for the aggregates of the case's step
  /// time (mean, median, stddev, cv), if any.
  void ReportRuns(const std::vector<Run>& report) override;

  /// The line of one repetition (no newline), or an aggregate's "mean 1.234 ms" part of its line.
  std::string line(const Run& run) const;

 private:
  /// "data-free/cpu-add/flag (fsdp2)  uniform:4x1M w2 K4 nnnS fp32-fp32-fp32": strategy and case.
  std::string head(const std::string& name) const;

  std::map<std::string, CaseSpec> cases_;
  std::string time_domain_;
};

/// Bytes with a binary unit and three significant digits: "0 B", "512 B", "4.00 MiB", "1.25 GiB".
std::string format_bytes(double bytes);

}  // namespace shardaccum
