#include "bench/reporters.hpp"

#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace shardaccum {

namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

/// Length of a non-finite token (-?nan, -?inf, any case) starting at text[i]; 0 when none.
size_t nonfinite_at(std::string_view text, size_t i) {
  const size_t sign = i < text.size() && text[i] == '-' ? 1 : 0;
  if (i + sign + 3 > text.size()) return 0;
  const std::string_view word = text.substr(i + sign, 3);
  if (!iequals(word, "nan") && !iequals(word, "inf")) return 0;
  size_t n = sign + 3;
  if (iequals(word, "inf") && iequals(text.substr(i + n, 5), "inity")) n += 5;
  if (i + n < text.size() && word_char(text[i + n])) return 0;  // part of a longer word
  return n;
}

}  // namespace

ReportFormat parse_report_format(const std::string& value, const std::string& flag) {
  if (value == "json") return ReportFormat::json;
  if (value == "csv") return ReportFormat::csv;
  if (value == "console") return ReportFormat::console;
  throw std::invalid_argument(flag + "=" + value + ": expected json, csv or console");
}

ReportFormat display_format(const std::vector<std::string>& args) {
  std::string v;
  for (const auto& a : args)
    if (a.rfind("--benchmark_format=", 0) == 0)
      v = a.substr(std::string("--benchmark_format=").size());
  if (v.empty())
    if (const char* e = std::getenv("BENCHMARK_FORMAT")) v = e;
  try {
    return parse_report_format(v.empty() ? "console" : v, "--benchmark_format");
  } catch (const std::invalid_argument&) {
    return ReportFormat::console;
  }
}

std::string json_nonfinite_to_null(std::string_view text, bool& in_string, bool& escaped) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      out += c;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    // GB writes exactly NaN, -NaN, Infinity, -Infinity (reporters' FormatKV); outside a string
    // nothing else can start with these letters in valid JSON.
    size_t matched = 0;
    for (const std::string_view tok : {"-Infinity", "Infinity", "-NaN", "NaN"})
      if (text.substr(i, tok.size()) == tok && (i == 0 || !word_char(text[i - 1]))) {
        matched = tok.size();
        break;
      }
    if (matched) {
      out += "null";
      i += matched - 1;
    } else {
      out += c;
    }
  }
  return out;
}

std::string csv_nonfinite_to_empty(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] ==
        '"') {  // a quoted field: copy through its closing quote ("" is an escaped quote)
      size_t j = i + 1;
      while (j < text.size() && !(text[j] == '"' && (j + 1 >= text.size() || text[j + 1] != '"')))
        j += text[j] == '"' ? 2 : 1;
      out.append(text.substr(i, j + 1 - i));
      i = j + 1;
      continue;
    }
    size_t j = i;
    while (j < text.size() && text[j] != ',' && text[j] != '\n') ++j;
    const std::string_view field = text.substr(i, j - i);
    if (!(nonfinite_at(field, 0) == field.size() && !field.empty())) out.append(field);
    if (j < text.size()) out += text[j];
    i = j + 1;
  }
  return out;
}

std::string console_nonfinite_to_dash(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const bool after_eq = i > 0 && text[i - 1] == '=';
    const bool after_blank = i > 0 && text[i - 1] == ' ';
    size_t n = (after_eq || after_blank) ? nonfinite_at(text, i) : 0;
    if (n == 0) {
      out += text[i];
      continue;
    }
    if (i + n < text.size() && text[i + n] == '%') ++n;  // a cv aggregate's unit goes too
    if (after_blank) out.append(n - 1, ' ');             // keep the column's width
    out += '-';
    i += n - 1;
  }
  return out;
}

FiniteReporter::FiniteReporter(ReportFormat format, bool tabular)
    : format_(format), to_text_(true) {
  switch (format) {
  case ReportFormat::json: owned_ = std::make_unique<benchmark::JSONReporter>(); break;
  case ReportFormat::csv:
    // GB marks CSVReporter deprecated but still offers --benchmark_out_format=csv: keep it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    owned_ = std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
    break;
  case ReportFormat::console:
    owned_ = std::make_unique<benchmark::ConsoleReporter>(
        tabular ? benchmark::ConsoleReporter::OO_Tabular : benchmark::ConsoleReporter::OO_None);
    break;
  }
  inner_ = owned_.get();
  inner_->SetOutputStream(&chunk_);
  inner_->SetErrorStream(
      &chunk_);  // as GB does for its file reporter: the CSV/console context goes in the file
}

FiniteReporter::FiniteReporter(benchmark::BenchmarkReporter* inner, ReportFormat format)
    : inner_(inner), format_(format), to_text_(false) {
  inner_->SetOutputStream(&chunk_);
  // Its error stream (stderr: the context) is passed through flush_errors, which drops the
  // registry.
  err_out_ = &inner_->GetErrorStream();
  inner_->SetErrorStream(&err_chunk_);
}

std::string FiniteReporter::take(bool runs, std::string_view after) {
  std::string s = chunk_.str();
  chunk_.str({});
  chunk_.clear();
  switch (format_) {
  case ReportFormat::json: return json_nonfinite_to_null(s, json_in_string_, json_escaped_);
  case ReportFormat::csv: return runs ? csv_nonfinite_to_empty(s) : s;
  case ReportFormat::console: {
    if (!runs) return s;
    // Only what follows the case's name: a name may be anything a layout file is called.
    const size_t at = after.empty() ? std::string::npos : s.rfind(after);
    const size_t from = at == std::string::npos ? 0 : at + after.size();
    return s.substr(0, from) + console_nonfinite_to_dash(std::string_view(s).substr(from));
  }
  }
  return s;
}

void FiniteReporter::emit(const std::string& s) {
  if (to_text_) {
    text_ += s;
  } else {
    GetOutputStream() << s;
    GetOutputStream().flush();
  }
}

std::string without_registry_line(std::string text) {
  const std::string key = "registry: ";
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at)) {
    if (at != 0 && text[at - 1] != '\n') {
      at += key.size();
      continue;
    }
    const size_t end = text.find('\n', at);
    text.erase(at, end == std::string::npos ? std::string::npos : end - at + 1);
  }
  return text;
}

void FiniteReporter::flush_errors(bool context) {
  if (!err_out_) return;
  std::string e = err_chunk_.str();
  err_chunk_.str({});
  err_chunk_.clear();
  *err_out_ << (context ? without_registry_line(std::move(e)) : e);
  err_out_->flush();
}

bool FiniteReporter::ReportContext(const Context& context) {
  const bool ok = inner_->ReportContext(context);
  flush_errors(true);
  std::string text = take(false);
  emit(format_ == ReportFormat::json ? text : without_registry_line(std::move(text)));
  return ok;
}

void FiniteReporter::ReportRuns(const std::vector<Run>& report) {
  if (format_ != ReportFormat::console) {
    inner_->ReportRuns(report);
    flush_errors(false);
    emit(take(true));
    return;
  }
  for (const Run& r : report) {  // one at a time, so each line's name is known
    inner_->ReportRuns({r});
    flush_errors(false);
    emit(take(true, r.benchmark_name()));
  }
}

void FiniteReporter::Finalize() {
  inner_->Finalize();
  flush_errors(false);
  emit(take(false));
}

}  // namespace shardaccum
