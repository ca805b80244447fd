// Bad input to shardaccum_bench (issue 11, items 8 and 9): every row runs the real binary with
// --list and expects exit 2 before any work, a message naming the flag and the fix, and no crash;
// the good rows next to them expect exit 0 and the number of cases they select.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "bench_cli_support.hpp"

namespace {

namespace fs = std::filesystem;

/// The files the rows point at, written once per test process under TempDir.
const std::string& files() {
  static const std::string dir = [] {
    std::string d = ::testing::TempDir() + "/shardaccum_inputs_" + std::to_string(getpid());
    fs::create_directories(d + "/x.json");  // a directory with a .json name
    auto write = [&](const std::string& name, const std::string& text) {
      std::ofstream(d + "/" + name) << text;
    };
    const int n = 100000;  // deep enough to overflow a recursive dump's stack
    write("deep.json", "{\"units\":" + std::string(n, '[') + std::string(n, ']') + "}");
    write("dup.json",
          R"({"units": [{"name": "a", "numel": 4}], "units": [{"name": "b", "numel": 8}]})");
    write("dup_inner.json", R"({"units": [{"name": "a", "numel": 4, "numel": 8}]})");
    write("both.json", R"({"units": [{"name": "a", "numel": 4}], "model_type": "gpt2"})");
    const std::string llama =
        R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "vocab_size": 100, "num_attention_heads": )";
    write("kv_more.json", llama + R"(4, "num_key_value_heads": 8})");
    write("kv_nodiv.json", llama + R"(6, "num_key_value_heads": 4})");
    write("kv_ok.json", llama + R"(8, "num_key_value_heads": 2})");
    std::string wide = "[0";  // a unit that is a long list, not an object
    for (int i = 1; i < 5000; ++i) wide.append(",").append(std::to_string(i));
    write("wide_unit.json", R"({"units": [)" + wide + "]]}");
    write("plain_file", "not a directory");
    return d;
  }();
  return dir;
}

struct Row {
  std::string label;                // the test's name
  std::string args;                 // after `--backend host --list`; @ is the files directory
  int rc;                           // 2: bad input; 0: accepted
  std::vector<std::string> expect;  // substrings of stderr
};

std::string expand_at(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '@' ? files() : std::string(1, c);
  return out;
}

const std::string kLongLiteral = std::string(4999, 'n') + "S";  // 5000 micro-batches > 4096

const std::vector<Row> kRows = {
    // Item 8: --model files.
    {"DeepJson", "--model @/deep.json", 2, {"--model", "JSON nested deeper than 64 levels"}},
    {"DuplicateKey", "--model @/dup.json", 2, {"--model", "duplicate key \"units\""}},
    {"DuplicateKeyInUnit", "--model @/dup_inner.json", 2, {"--model", "duplicate key \"numel\""}},
    {"UnitsAndModelType",
     "--model @/both.json",
     2,
     {"--model", "\"units\"", "\"model_type\"", "give either"}},
    {"KvHeadsAboveHeads",
     "--model @/kv_more.json",
     2,
     {"--model", "num_key_value_heads", "num_attention_heads", "divide"}},
    {"KvHeadsNotDividing",
     "--model @/kv_nodiv.json",
     2,
     {"--model", "num_key_value_heads", "num_attention_heads", "divide"}},
    {"KvHeadsDividing",
     "--model @/kv_ok.json --preset fsdp2 --schedule sync",
     0,
     {"1 case on backend host"}},
    {"DirectoryNamedJson", "--model @/x.json", 2, {"--model", "is a directory"}},
    {"DeviceAsModel", "--model /dev/zero", 2, {"--model", "is not a regular file"}},
    {"WideUnitIsQuotedShort",
     "--model @/wide_unit.json",
     2,
     {"--model", "unit 0 must be an object", "..."}},
    // Item 9: list flags never take an empty element or the next flag as their value.
    {"ModelComma", "--model , --steps 2", 2, {"--model", "empty"}},
    {"ScheduleComma", "--schedule , --steps 2", 2, {"--schedule", "empty"}},
    {"PresetCommas", "--preset ,, --steps 2", 2, {"--preset", "empty"}},
    {"OffloadInnerEmpty", "--offload none,,copy", 2, {"--offload", "empty"}},
    {"DtypeTrailingComma", "--dtype fp32-fp32-fp32,", 2, {"--dtype", "empty"}},
    {"ModelThenFlag", "--model --steps 2", 2, {"--model needs a value", "--steps"}},
    {"TraceThenFlag", "--trace --steps 2", 2, {"--trace needs a value", "--steps"}},
    {"LookaheadTwice", "--lookahead buckets,buckets", 2, {"--lookahead 'buckets'", "given twice"}},
    {"KTwoSpellings", "--k 4,04", 2, {"--k '04' is given twice (as 4)"}},
    {"WorldTwoSpellings", "--world-size 2,02", 2, {"--world-size '02' is given twice (as 2)"}},
    {"ModelTwiceInTwoFlags",
     "--model uniform:2x4 --model uniform:2x4",
     2,
     {"--model 'uniform:2x4'", "given twice"}},
    {"RepeatedModelAccumulates",
     "--model uniform:2x4 --model uniform:3x4 --preset fsdp2 --schedule sync",
     0,
     {"2 cases on backend host"}},
    // A single-valued flag given twice names the flag and both values, where CLI11 would count.
    {"WarmupTwice",
     "--warmup 1 --warmup=2",
     2,
     {"--warmup is given twice (1 and 2)", "give it once"}},
    {"SeedTwiceApart", "--seed 3 --preset fsdp2 --seed 4", 2, {"--seed is given twice (3 and 4)"}},
    {"SwitchTwiceSaysTwoThings",
     "--tf32=true --tf32=false",
     2,
     {"--tf32 is given twice (true and false)"}},
    {"SwitchTwiceSaysOneThing",
     "--list --preset fsdp2 --schedule sync",
     0,
     {"1 case on backend host"}},
    // Integers: decimal only, with ranges.
    {"SeedNegative", "--seed -1", 2, {"--seed -1", "0..18446744073709551615"}},
    {"SeedTwoTo64", "--seed 18446744073709551616", 2, {"--seed", "0..18446744073709551615"}},
    {"SeedExponent", "--seed 1e23", 2, {"--seed", "decimal", "0..18446744073709551615"}},
    {"SeedMax",
     "--seed 18446744073709551615 --preset fsdp2 --schedule sync",
     0,
     {"1 case on backend host"}},
    {"KHex", "--k 0x8", 2, {"--k", "decimal"}},
    {"TimeoutHex", "--timeout 0x10", 2, {"--timeout", "decimal"}},
    {"WorldSizeHex", "--world-size 0x2", 2, {"--world-size", "decimal"}},
    {"StepsOctalLooking",
     "--steps 010 --preset fsdp2 --schedule sync",
     0,
     {"1 case on backend host"}},
    {"ThreadsTooLarge", "--threads 99999999999", 2, {"--threads"}},
    // --k and a literal schedule.
    {"KAgainstLiteral",
     "--k 8 --schedule nnnS",
     2,
     {"--k 8", "--schedule nnnS", "4 micro-batches"}},
    {"KMatchingLiteral", "--k 8 --schedule nnnnnnnS --preset fsdp2", 0, {"1 case on backend host"}},
    // The canonical schedules (`all`, the default) need K >= 3: the error names --k, whether or
    // not --schedule was typed, and the literal way out.
    {"KBelowCanonicalDefault", "--k 2", 2, {"--k 2", "--schedule all (the default)", "nS,SS"}},
    {"KBelowCanonicalAll", "--k 1 --schedule all", 2, {"--k 1", ">= 3"}},
    {"KTwoLiterals", "--k 2 --schedule nS,SS --preset fsdp2", 0, {"2 cases on backend host"}},
    {"WorldAboveHostCap", "--world-size 1025", 2, {"--world-size 1025", "at most 1024", "1..1024"}},
    // Past int64 the message still names the backend's limit, not INT_MAX.
    {"WorldPastInt64",
     "--world-size 99999999999999999999",
     2,
     {"--world-size", "too large (at most 1024)", "1..1024"}},
    {"LiteralWithoutK", "--schedule nnnnnS --preset fsdp2", 0, {"1 case on backend host"}},
    {"LiteralTooLong",
     "--schedule " + kLongLiteral,
     2,
     {"--schedule", "5000 micro-batches", "4096"}},
    // `all`: every axis, alone only.
    {"DtypeAll", "--dtype all --preset fsdp2 --schedule sync", 0, {"4 cases on backend host"}},
    {"PresetAllMixed", "--preset all,fsdp2", 2, {"--preset", "cannot be combined"}},
    {"ScheduleAllMixed", "--schedule all,sync", 2, {"--schedule", "cannot be combined"}},
    {"DtypeAllMixed", "--dtype all,bf16-bf16-fp32", 2, {"--dtype", "cannot be combined"}},
    // --config-dir must be a directory.
    {"ConfigDirMissing", "--config-dir /nonexistent", 2, {"--config-dir", "not a directory"}},
    {"ConfigDirFile", "--config-dir @/plain_file", 2, {"--config-dir", "not a directory"}},
    // --rendezvous.
    {"RendezvousUnclosedBracket", "--rendezvous 'tcp:[::1:29600'", 2, {"--rendezvous", "']'"}},
    {"RendezvousExtraColon", "--rendezvous tcp:127.0.0.1:29600:1", 2, {"--rendezvous", "brackets"}},
    {"RendezvousEmptyHost", "--rendezvous tcp::29600", 2, {"--rendezvous", "empty host"}},
    {"RendezvousPortZero", "--rendezvous tcp:localhost:0", 2, {"--rendezvous", "1..65535"}},
    {"RendezvousPortTooLarge", "--rendezvous tcp:localhost:65536", 2, {"--rendezvous", "1..65535"}},
    {"RendezvousV6",
     "--rendezvous 'tcp:[::1]:29600' --preset fsdp2 --schedule sync",
     0,
     {"1 case on backend host"}},
    // An oracle bound too loose for the case: the threshold it missed, and fixes that apply (a
    // preset refuses --division: its axes are the way to another division).
    {"OracleTooLoosePreset",
     "--model uniform:2x1K --world-size 6 --preset fsdp2 --dtype bf16-bf16-fp32 --schedule nnnS",
     2,
     {"is not below 0.062500", "division collective (the preset's)",
      "--division end (--binding data-free --offload cpu-add-pageable --mode flag instead of "
      "--preset fsdp2)"}},
    {"OracleTooLooseAxes",
     "--model uniform:2x1K --world-size 6 --binding data-free --offload none --mode flag "
     "--division collective --dtype bf16-bf16-fp32 --copy-in chunk-cat --schedule nnnS",
     2,
     {"is not below 0.062500", "division collective (case",
      "--dtype fp32-fp32-fp32, --division end,"}},
    // Dtype errors name the flag and the triples.
    {"DtypeUnknownElement",
     "--dtype fp16-fp16-fp32",
     2,
     {"--dtype", "fp16", "fp32-fp32-fp32, bf16-bf16-fp32, bf16-bf16-bf16"}},
    {"DtypeSingle",
     "--dtype fp16",
     2,
     {"--dtype", "fp32-fp32-fp32, bf16-bf16-fp32, bf16-bf16-bf16"}},
};

void PrintTo(const Row& r, std::ostream* os) { *os << r.label; }

class BadInput : public ::testing::TestWithParam<Row> {};

TEST_P(BadInput, ExitCodeAndMessage) {
  const Row& row = GetParam();
  const auto r =
      shardaccum::testing::run_bench_cli("", "--backend host --list " + expand_at(row.args));
  // The shell reports a child killed by a signal as 128 + the signal (a segfault: 139).
  ASSERT_TRUE(r.rc >= 0 && r.rc < 128) << "crashed (rc " << r.rc << "): " << r.err.substr(0, 500);
  EXPECT_EQ(r.rc, row.rc) << r.err.substr(0, 500);
  for (const auto& s : row.expect)
    EXPECT_NE(r.err.find(s), std::string::npos)
        << "want '" << s << "' in: " << r.err.substr(0, 500);
  // Untrusted values are quoted short: no message repeats a long literal or a file's content.
  EXPECT_LT(r.err.size(), 1500u) << r.err.substr(0, 500);
}

INSTANTIATE_TEST_SUITE_P(InputErrors, BadInput, ::testing::ValuesIn(kRows),
                         [](const ::testing::TestParamInfo<Row>& i) { return i.param.label; });

// A value with control characters (a pasted newline, an escape sequence) is refused on one
// printable line, each character as \xNN, whichever path the flag's message takes (a CliError, or
// setup's UsageError around a layout's or a schedule's error).
TEST(InputErrors, ControlCharactersInAValueComeOutEscapedOnOneLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--offload", "\\033[31mx"},
      {"--model", "uniform:3x10\\n09"},
      {"--model", "/tmp/x\\033.json"},
      {"--schedule", "nnn\\rS"},
      {"--dtype", "\\177"},
      {"--trace", "/nonexistent/a\\nb"}};
  for (const auto& [flag, printf_value] : cases) {
    SCOPED_TRACE(flag + " " + printf_value);
    const auto r = shardaccum::testing::run_bench_cli(
        "", "--backend host --list " + flag + " \"$(printf '" + printf_value + "')\"");
    EXPECT_EQ(r.rc, 2) << r.err;
    const size_t error_line = r.err.find("error: ");
    ASSERT_NE(error_line, std::string::npos) << r.err;
    const std::string line = r.err.substr(error_line);
    EXPECT_EQ(line.find('\n'), line.size() - 1) << line;  // one line, ended by its newline
    for (const char c : line.substr(0, line.size() - 1))
      EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) << line;
    EXPECT_NE(line.find("\\x"), std::string::npos) << line;
  }
}

// An error in the output flags is the first thing on stderr, before the matrix's notices (here
// zero3's left-out interleaved schedules), so that it is not lost below them.
TEST(InputErrors, AnOutputFlagErrorComesBeforeTheMatrixNotices) {
  const auto r = shardaccum::testing::run_bench_cli(
      "", "--backend host --preset zero3 --model uniform:2x1K --benchmark_out=" + files() +
              "/a.json --benchmark_out=" + files() + "/b.json");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_EQ(r.err.rfind("shardaccum_bench: error: --benchmark_out is given more than once", 0), 0u)
      << r.err;
}

// A --benchmark_filter that is no regular expression is refused before any case runs (as --list
// refuses it), and a run that ran nothing does not claim to have kept a file that never existed.
TEST(InputErrors, AFilterThatRunsNothingWritesNothing) {
  const std::string out = files() + "/never_written.json";
  const std::string run =
      "--backend host --model uniform:2x1K --offload none --benchmark_out=" + out;
  const auto bad = shardaccum::testing::run_bench_cli("", run + " '--benchmark_filter=('");
  EXPECT_EQ(bad.rc, 2) << bad.err;
  EXPECT_NE(bad.err.find("--benchmark_filter=(: not a POSIX extended regular expression"),
            std::string::npos)
      << bad.err;
  const auto none = shardaccum::testing::run_bench_cli("", run + " --benchmark_filter=zzzz");
  EXPECT_EQ(none.rc, 2) << none.err;
  EXPECT_NE(none.err.find("no case ran"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("nothing written"), std::string::npos) << none.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
