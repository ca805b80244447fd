#pragma once
// Google Benchmark reporters that never print a non-finite number as a token a reader chokes on.
// GB writes NaN for the `_cv` aggregate of a counter that is always 0 (0/0) and `NaN`/`Infinity`
// bare in its JSON, which no strict JSON parser accepts. These wrap GB's own reporters, render
// into a string and rewrite those tokens: JSON `null`, CSV an empty field, console `-`.
#include <benchmark/benchmark.h>

#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace shardaccum {

enum class ReportFormat { json, csv, console };

/// Parses a --benchmark_format / --benchmark_out_format value (json, csv, console). Throws
/// std::invalid_argument naming `flag` for any other value.
ReportFormat parse_report_format(const std::string& value, const std::string& flag);

/// The display (stdout) format GB was told: the last --benchmark_format= in `args`, else
/// BENCHMARK_FORMAT from the environment, else console. GB has refused any other value already.
ReportFormat display_format(const std::vector<std::string>& args);

/// JSON text with every bare NaN, -NaN, Infinity or -Infinity token outside strings replaced by
/// null. Strings (with their escapes) are copied as they are. `in_string`/`escaped` carry the
/// scanner's state across chunks of one document; pass the same variables for every chunk.
std::string json_nonfinite_to_null(std::string_view text, bool& in_string, bool& escaped);

/// One or more CSV lines with every unquoted field that is nan, -nan, inf or -inf (any case)
/// made empty. Quoted fields ("" escapes) are copied as they are.
std::string csv_nonfinite_to_empty(std::string_view text);

/// Console lines with every nan/inf value (after '=' or a blank, optionally signed, with an
/// optional '%' unit) replaced by '-': right-aligned in the same width when it stood in a column.
std::string console_nonfinite_to_dash(std::string_view text);

/// `text` without its `registry: ...` lines (kilobytes of JSON for the tools, who read them in the
/// JSON file): a console or CSV header for people leaves them out.
std::string without_registry_line(std::string text);

/// Wraps one of GB's reporters (JSONReporter, CSVReporter, ConsoleReporter). Each call renders the
/// inner reporter into a private buffer, rewrites non-finite numbers in the run data (not in the
/// context, whose strings are the user's) and then either appends to text() (a file reporter:
/// the caller writes and verifies the file itself) or writes to this reporter's output stream
/// (a display reporter, stdout by default).
class FiniteReporter : public benchmark::BenchmarkReporter {
 public:
  /// A file reporter owning a new GB reporter of `format`; `tabular` is
  /// --benchmark_counters_tabular (console only). Everything goes to text().
  FiniteReporter(ReportFormat format, bool tabular);
  /// A display reporter around `inner` (not owned: GB's CreateDefaultDisplayReporter() returns a
  /// static), printing to GetOutputStream() after each call.
  FiniteReporter(benchmark::BenchmarkReporter* inner, ReportFormat format);

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& report) override;
  void Finalize() override;

  /// Everything a file reporter rendered so far.
  const std::string& text() const { return text_; }

 private:
  std::string take(bool runs, std::string_view after = {});
  void emit(const std::string& s);
  /// A display reporter's error stream, captured: written on to the real one (`context`: without
  /// the registry line).
  void flush_errors(bool context);

  std::unique_ptr<benchmark::BenchmarkReporter> owned_;
  benchmark::BenchmarkReporter* inner_;
  ReportFormat format_;
  bool to_text_;
  std::ostringstream chunk_;
  std::ostream* err_out_ = nullptr;  // a display reporter's real error stream
  std::ostringstream err_chunk_;
  std::string text_;
  bool json_in_string_ = false, json_escaped_ = false;
};

/// Google Benchmark's output on ranks other than 0 of a multi-process launch: rank 0 reports.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace shardaccum
