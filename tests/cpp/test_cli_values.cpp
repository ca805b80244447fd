// The one syntax of shardaccum_bench's flag values (bench/cli_values.hpp): lists without empty
// elements, decimal integers with ranges, decimal seconds, short quotes of untrusted text.
#include <gtest/gtest.h>

#include "bench/cli.hpp"
#include "bench/cli_values.hpp"

namespace shardaccum {
namespace {

std::string cli_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const CliError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(CliValues, ListsSplitAtCommasAndRefuseEmptyElements) {
  EXPECT_EQ(split_list({"a,b", "c"}, "--x"), (std::vector<std::string>{"a", "b", "c"}));
  for (const char* bad : {",", ",,", "a,,b", "a,", ",a", ""}) {
    const std::string e = cli_error([&] { split_list({bad}, "--offload"); });
    EXPECT_NE(e.find("--offload"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("empty element"), std::string::npos) << bad << ": " << e;
  }
}

TEST(CliValues, IntegersAreDecimalWithARange) {
  EXPECT_EQ(parse_int_flag("8", "--k", 1, 4096, "1..4096"), 8);
  EXPECT_EQ(parse_int_flag("010", "--k", 1, 4096, "1..4096"), 10);  // decimal, not octal
  EXPECT_EQ(parse_int_flag("-3", "--x", -5, 5, "-5..5"), -3);
  for (const char* bad : {"0x8", "+8", "8.0", "1e2", " 8", "8 ", "", "-", "eight"})
    EXPECT_NE(cli_error([&] { parse_int_flag(bad, "--k", 1, 4096, "1..4096"); }).find("--k '"),
              std::string::npos)
        << bad;
  for (const char* out : {"0", "4097", "99999999999999999999999"})
    EXPECT_NE(
        cli_error([&] { parse_int_flag(out, "--k", 1, 4096, "1..4096"); }).find("give 1..4096"),
        std::string::npos)
        << out;
}

TEST(CliValues, AValuePastTheTopSaysItIsTooLarge) {
  EXPECT_NE(cli_error([] {
              parse_int_flag("99999999999999999999", "--world-size", 1, 2147483647,
                             "at least 1 rank");
            }).find("too large (at most 2147483647)"),
            std::string::npos);
  EXPECT_NE(cli_error([] { parse_int_flag("5000", "--k", 1, 4096, "1..4096"); }).find("too large"),
            std::string::npos);
  EXPECT_EQ(cli_error([] { parse_int_flag("0", "--k", 1, 4096, "1..4096"); }).find("too large"),
            std::string::npos);
  EXPECT_EQ(cli_error([] {
              parse_int_flag("-99999999999999999999", "--x", -5, 5, "-5..5");
            }).find("too large"),
            std::string::npos);
}

TEST(CliValues, SeedTakesTheFullUnsignedRangeOnly) {
  EXPECT_EQ(parse_u64_flag("0", "--seed", "0..2^64-1"), 0u);
  EXPECT_EQ(parse_u64_flag("18446744073709551615", "--seed", "0..2^64-1"), 18446744073709551615u);
  for (const char* bad : {"-1", "18446744073709551616", "1e23", "0x10"})
    EXPECT_NE(cli_error([&] { parse_u64_flag(bad, "--seed", "0..2^64-1"); }).find("--seed"),
              std::string::npos)
        << bad;
}

TEST(CliValues, SecondsAreDecimal) {
  EXPECT_EQ(parse_seconds_flag("30", "--timeout", "1..86400"), 30.0);
  EXPECT_EQ(parse_seconds_flag("0.5", "--timeout", "1..86400"), 0.5);
  EXPECT_EQ(parse_seconds_flag("1e3", "--timeout", "1..86400"), 1000.0);
  for (const char* bad : {"0x10", "inf", "nan", "", ".", "1e", "1s", "-1"})
    EXPECT_NE(
        cli_error([&] { parse_seconds_flag(bad, "--timeout", "1..86400"); }).find("--timeout '"),
        std::string::npos)
        << bad;
  // A negative number is out of range, not malformed; an exponent is accepted, so not named.
  EXPECT_NE(cli_error([] { parse_seconds_flag("-5", "--timeout", "1..86400"); }).find("negative"),
            std::string::npos);
  EXPECT_EQ(cli_error([] { parse_seconds_flag("0x10", "--timeout", "1..86400"); }).find("exponent"),
            std::string::npos);
}

TEST(CliValues, BriefCutsLongText) {
  EXPECT_EQ(brief("abc"), "abc");
  const std::string b = brief(std::string(1000, 'n'));
  EXPECT_EQ(b, std::string(80, 'n') + "... (1000 characters)");
}

TEST(CliValues, BriefEscapesControlCharacters) {
  EXPECT_EQ(brief(std::string("a\nb\x1b[31m\x7f\tc")), "a\\x0ab\\x1b[31m\\x7f\\x09c");
  EXPECT_EQ(brief("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 passes unchanged
}

TEST(CliValues, EscapeControlsKeepsAllOfALongMessage) {
  // report_error escapes a whole message, however long: nothing is cut, every control escaped.
  const std::string long_text = std::string(300, 'm') + "\n" + std::string(300, 'm');
  EXPECT_EQ(escape_controls(long_text), std::string(300, 'm') + "\\x0a" + std::string(300, 'm'));
  EXPECT_EQ(escape_controls(""), "");
}

TEST(CliValues, ShellQuoteWritesOneWordAsShlexQuoteDoes) {
  // The run's `command` (scripts/merge.py splits it with shlex): a path with a space stays one
  // word.
  EXPECT_EQ(shell_quote("--benchmark_out=/tmp/r.json"), "--benchmark_out=/tmp/r.json");
  EXPECT_EQ(shell_quote("uniform:16x64M,gpt2-xl"), "uniform:16x64M,gpt2-xl");
  EXPECT_EQ(shell_quote("--benchmark_out=/tmp/sp ace/r.json"),
            "'--benchmark_out=/tmp/sp ace/r.json'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("it's"), "'it'\"'\"'s'");
  EXPECT_EQ(shell_quote("a*b;$x"), "'a*b;$x'");
}

}  // namespace
}  // namespace shardaccum
