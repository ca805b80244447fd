#include "bench/cli_values.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <set>

#include "bench/cli.hpp"

namespace shardaccum {

std::string escape_controls(std::string_view s) {
  // A value pasted with a newline or an escape sequence must not break the error's one line or
  // the terminal that shows it.
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out += c;
      continue;
    }
    out += "\\x";
    out += kHex[u >> 4];
    out += kHex[u & 0xf];
  }
  return out;
}

std::string shell_quote(std::string_view s) {
  const auto safe = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
  };
  if (!s.empty() && std::all_of(s.begin(), s.end(), safe)) return std::string(s);
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  return out + "'";
}

std::string brief(std::string_view s, size_t max) {
  std::string out = escape_controls(s.substr(0, std::min(s.size(), max)));
  if (s.size() <= max) return out;
  return out + "... (" + std::to_string(s.size()) + " characters)";
}

std::string count_of(size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::vector<std::string> split_list(const std::vector<std::string>& values, const char* flag) {
  std::vector<std::string> out;
  std::set<std::string> seen;  // a value given twice would make the same cases twice
  for (const auto& s : values) {
    size_t b = 0;
    while (true) {
      const size_t e = std::min(s.find(',', b), s.size());
      if (e == b)
        throw CliError(
            std::string(flag) + " '" + brief(s) +
            "': an empty element; give a comma-separated list without empty items (e.g. a,b)");
      out.push_back(s.substr(b, e - b));
      if (!seen.insert(out.back()).second)
        throw CliError(std::string(flag) + " '" + brief(out.back()) +
                       "' is given twice: give each value once");
      if (e == s.size()) break;
      b = e + 1;
    }
  }
  return out;
}

namespace {

/// Whether `s` is an optional '-' and one or more decimal digits, nothing else.
bool is_decimal_integer(const std::string& s) {
  const size_t start = !s.empty() && s[0] == '-' ? 1 : 0;
  return s.size() > start && s.find_first_not_of("0123456789", start) == std::string::npos;
}

[[noreturn]] void not_decimal(const std::string& s, const char* flag, const char* what,
                              const char* refused, const std::string& give) {
  throw CliError(std::string(flag) + " '" + brief(s) + "': not a " + what + " (" + refused +
                 " are not accepted); give " + give);
}

}  // namespace

int64_t parse_int_flag(const std::string& s, const char* flag, int64_t lo, int64_t hi,
                       const std::string& give) {
  if (!is_decimal_integer(s))
    not_decimal(s, flag, "decimal integer", "hex, '+' and exponents", give);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) {
    // A value past the top (or past int64) is too large, whatever lower bound `give` states.
    const bool big = ec == std::errc::result_out_of_range ? s[0] != '-' : v > hi;
    throw CliError(std::string(flag) + " " + brief(s) + ": " +
                   (big ? "too large (at most " + std::to_string(hi) + "); " : "") + "give " +
                   give);
  }
  return v;
}

uint64_t parse_u64_flag(const std::string& s, const char* flag, const std::string& give) {
  if (!is_decimal_integer(s))
    not_decimal(s, flag, "decimal integer", "hex, '+' and exponents", give);
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);  // refuses '-'
  if (ec != std::errc() || end != s.data() + s.size())
    throw CliError(std::string(flag) + " " + brief(s) + ": give " + give);
  return v;
}

double parse_seconds_flag(const std::string& s, const char* flag, const std::string& give) {
  // digits [. digits] [e [sign] digits]: what strtod reads in decimal, without hex, inf or nan.
  // A value of this form with a leading '-' is a number out of range, and said so.
  const bool negative = !s.empty() && s[0] == '-';
  size_t i = negative ? 1 : 0;
  auto digits = [&] {
    const size_t b = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - b;
  };
  size_t n = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    n += digits();
  }
  bool ok = n > 0;
  if (ok && i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    ok = digits() > 0;
  }
  if (!ok || i != s.size()) not_decimal(s, flag, "decimal number", "hex, '+', inf and nan", give);
  if (negative) throw CliError(std::string(flag) + " '" + brief(s) + "': negative; give " + give);
  return std::strtod(s.c_str(), nullptr);
}

}  // namespace shardaccum
