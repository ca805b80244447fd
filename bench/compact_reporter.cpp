#include "bench/compact_reporter.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "bench/cli_values.hpp"
#include "bench/reporters.hpp"
#include "strategies/preset/preset.hpp"

namespace shardaccum {
namespace {

/// Whether GB recorded an error for `r` (SkipWithError), and its message: GB 1.7 names them
/// error_occurred/error_message, 1.8 skipped/skip_message.
template <class R>
bool run_error(const R& r, std::string& message) {
  if constexpr (requires { r.skipped; }) {
    message = r.skip_message;
    return static_cast<unsigned>(r.skipped) != 0;
  } else {
    message = r.error_message;
    return r.error_occurred;
  }
}

/// A counter's value, or NaN when the run has none.
double counter(const benchmark::BenchmarkReporter::Run& r, const char* name) {
  const auto it = r.counters.find(name);
  return it == r.counters.end() ? std::nan("") : static_cast<double>(it->second);
}

std::string number(double v, const char* fmt) {
  if (!std::isfinite(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

/// "data-free/cpu-add/flag (fsdp2)": the strategy's axis values, the division unless its default,
/// the copy-in unless its default or the preset's own (two cases differing only there printed the
/// same label), the lookahead when it was chosen (--lookahead), and the preset these values are, if
/// any.
std::string strategy_label(const StrategySpec& s) {
  const PresetInfo* preset = nullptr;
  for (const PresetInfo& p : PresetRegistry::get().entries())
    if (p.spec == s) preset = &p;
  std::string out = s.binding + "/" + s.offload + "/" + s.mode +
                    (s.division == kDefaultDivision ? "" : "/" + s.division);
  if (!preset && s.copy_in != kDefaultCopyIn) out += " copy-in " + s.copy_in;
  if (s.lookahead) out += std::string(" lookahead ") + lookahead_name(*s.lookahead);
  return preset ? out + " (" + preset->name + ")" : out;
}

}  // namespace

std::string format_bytes(double bytes) {
  if (!std::isfinite(bytes)) return "-";
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  if (u == 0) return number(bytes, "%.0f") + " B";
  return number(bytes, std::fabs(bytes) >= 100  ? "%.0f"
                       : std::fabs(bytes) >= 10 ? "%.1f"
                                                : "%.2f") +
         " " + units[u];
}

CompactReporter::CompactReporter(const std::vector<CaseSpec>& cases, std::string time_domain)
    : time_domain_(std::move(time_domain)) {
  for (const auto& c : cases) cases_.emplace(c.name(), c);
}

bool CompactReporter::ReportContext(const Context& context) {
  std::ostringstream s;
  PrintBasicContext(&s, context);
  GetErrorStream() << without_registry_line(s.str())
                   << "One line per case: strategy, case, step time (" << time_domain_
                   << "), verdict, bytes per step (H2D, D2H, reduce-scatter input), peak device "
                      "memory. Every counter is in --benchmark_out.\n";
  GetErrorStream().flush();
  return true;
}

std::string CompactReporter::head(const std::string& name) const {
  const auto it = cases_.find(name);
  if (it == cases_.end()) return name;  // a case this reporter does not know: its whole name
  const CaseSpec& c = it->second;
  return strategy_label(c.strategy) + "  " + c.layout->name + " w" + std::to_string(c.world_size) +
         " K" + std::to_string(c.schedule.k()) + " " + c.schedule.modes + " " + c.dtypes.name();
}

std::string CompactReporter::line(const Run& r) const {
  const std::string unit = benchmark::GetTimeUnitString(r.time_unit);
  if (r.run_type == Run::RT_Aggregate)  // GB's cv is a fraction in real_accumulated_time
    return r.aggregate_name + " " +
           (r.aggregate_unit == benchmark::kPercentage
                ? number(r.real_accumulated_time * 100, "%.1f") + " %"
                : number(r.GetAdjustedRealTime(), "%.3f") + " " + unit);
  std::string error;
  const std::string head = this->head(r.run_name.function_name);
  if (run_error(r, error)) return head + "  ERROR " + error;
  const double correct = counter(r, "correct");
  const std::string verdict = std::isnan(correct) ? "unchecked"
                              : correct >= 0.999  ? "correct"
                                                  : "WRONG";
  std::string rep;
  if (r.repetitions > 1)
    rep = "rep " + std::to_string(r.repetition_index + 1) + "/" + std::to_string(r.repetitions) +
          "  ";
  return rep + head + "  step " + number(r.GetAdjustedRealTime(), "%.3f") + " " + unit + " (" +
         time_domain_ + ")  " + verdict + " max_rel_err " +
         number(counter(r, "max_rel_err"), "%.2g") + "  H2D " +
         format_bytes(counter(r, "h2d_bytes")) + "  D2H " + format_bytes(counter(r, "d2h_bytes")) +
         "  RS " + format_bytes(counter(r, "nccl_input_bytes")) + "  peak device " +
         format_bytes(counter(r, "peak_device_bytes"));
}

void CompactReporter::ReportRuns(const std::vector<Run>& report) {
  std::string aggregates;  // mean, median, stddev, cv of one case: one line after its repetitions
  const Run* first = nullptr;
  for (const Run& r : report) {
    if (r.run_type != Run::RT_Aggregate) {
      GetOutputStream() << line(r) << "\n";
      continue;
    }
    aggregates += (aggregates.empty() ? "" : ", ") + line(r);
    first = first ? first : &r;
  }
  if (first)
    GetOutputStream() << "  step over " << count_of(first->repetitions, "repetition") << ": "
                      << aggregates << "  (" << head(first->run_name.function_name) << ")\n";
  GetOutputStream().flush();
}

}  // namespace shardaccum
