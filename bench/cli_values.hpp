#pragma once
// How shardaccum_bench reads the values of its flags, the same way for every flag: lists split at
// commas with no empty element, integers in decimal only with a range, seconds in decimal, and
// untrusted text quoted short in messages. Every error is a CliError naming the flag.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardaccum {

/// `s` with each control character (below 0x20, and 0x7f) written as `\xNN`, so that text a user
/// typed prints as one printable line in a message.
std::string escape_controls(std::string_view s);

/// `s` as one POSIX shell word, as Python's shlex.quote writes it: itself when it is non-empty and
/// only of letters, digits and @%+=:,./_-, else in single quotes (each ' as '"'"'). The run's
/// `command` joins argv so, so that it can be pasted into a shell and split back
/// (scripts/merge.py).
std::string shell_quote(std::string_view s);

/// `s` itself when at most `max` characters, else its first `max` characters, "..." and its length:
/// for quoting a user's value or a file's text in a message without repeating all of it. Control
/// characters (below 0x20, and 0x7f) come out as `\xNN`, so a message stays one printable line.
std::string brief(std::string_view s, size_t max = 80);

/// "1 case", "2 cases": `n` and `noun` with an s unless n is 1, for every count in a message.
std::string count_of(size_t n, const std::string& noun);

/// Splits every value of a list flag at its commas. Throws CliError naming `flag` for an empty
/// element anywhere (`,`, `a,,b`, a trailing comma): CLI11 would otherwise drop it silently; and
/// for a value given twice, across the flag's repeats too (it would make the same cases twice).
std::vector<std::string> split_list(const std::vector<std::string>& values, const char* flag);

/// Parses all of `s` as a decimal integer (digits, an optional leading '-') in [lo, hi].
/// Hex, octal prefixes, '+', exponents and spaces are refused, for every integer flag alike.
/// Throws CliError "FLAG 'S': ..." ending in "; give " + `give` (e.g. "1..4096 micro-batches").
int64_t parse_int_flag(const std::string& s, const char* flag, int64_t lo, int64_t hi,
                       const std::string& give);

/// parse_int_flag for a full-range unsigned value, 0..2^64-1 (--seed).
uint64_t parse_u64_flag(const std::string& s, const char* flag, const std::string& give);

/// Parses all of `s` as a decimal number of seconds ("30", "0.5", "1e3"); hex, inf and nan are
/// refused. Throws CliError naming `flag`, ending in "; give " + `give`.
double parse_seconds_flag(const std::string& s, const char* flag, const std::string& give);

}  // namespace shardaccum
