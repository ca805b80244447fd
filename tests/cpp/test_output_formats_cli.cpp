// --benchmark_out in every format is strict and complete: repetitions (whose _cv aggregate of an
// always-zero counter is 0/0 = NaN) give strict JSON with null, CSV an empty field, the console a
// '-'; a write cut short (ulimit -f) in any format keeps the old result and exits 1.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "output_cli_support.hpp"

namespace {

using namespace shardaccum::testing;

const std::string kSmall =
    "--backend host --model uniform:2x1000 --schedule nnnS --binding data --offload none "
    "--mode flag --steps 1 --warmup 0 --benchmark_repetitions=3 ";

using OutputFormats = OutputDir;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : s) {
    if (c == '"') quoted = !quoted;
    if (c == sep && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

TEST_F(OutputFormats, RepetitionsWriteStrictJsonWithNullForNaN) {
  const std::string f = dir_ + "/run.json";
  const int rc =
      run_shell(bench_command(kSmall + "--benchmark_out=" + f) + " >/dev/null 2>" + dir_ + "/err");
  ASSERT_EQ(rc, 0) << slurp(dir_ + "/err");
  const std::string text = slurp(f);
  ASSERT_TRUE(nlohmann::json::accept(text)) << "not strict JSON (a bare NaN is not JSON)";
  const auto j = nlohmann::json::parse(text);
  int cv = 0;
  for (const auto& b : j.at("benchmarks"))
    if (b.value("aggregate_name", "") == "cv") {
      ++cv;
      EXPECT_TRUE(b.at("accumulate_bytes").is_null()) << b.dump();  // 0 in every repetition: 0/0
      EXPECT_TRUE(b.at("correct").is_number()) << b.dump();         // 1 in every repetition: 0 %
    }
  EXPECT_EQ(cv, 1);
}

TEST_F(OutputFormats, RepetitionsWriteCsvEmptyFieldsAndConsoleDashes) {
  const std::string csv = dir_ + "/run.csv", con = dir_ + "/run.txt", shown = dir_ + "/stdout";
  ASSERT_EQ(
      run_shell(bench_command(kSmall + "--benchmark_out=" + csv + " --benchmark_out_format=csv") +
                " >/dev/null 2>/dev/null"),
      0);
  std::istringstream lines(slurp(csv));
  std::string line;
  std::vector<std::string> header;
  int cv_rows = 0, checked = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("name,", 0) == 0) header = split(line, ',');
    if (header.empty() || line.find("_cv\"") == std::string::npos) continue;
    ++cv_rows;
    const auto fields = split(line, ',');
    ASSERT_EQ(fields.size(), header.size()) << line;
    for (size_t i = 0; i < fields.size(); ++i) {
      EXPECT_NE(fields[i], "nan") << header[i];
      EXPECT_NE(fields[i], "-nan") << header[i];
      if (header[i] == "\"accumulate_bytes\"") {  // GB quotes counter names in the header
        EXPECT_EQ(fields[i], "") << line;
        ++checked;
      }
    }
  }
  EXPECT_EQ(cv_rows, 1);
  EXPECT_EQ(checked, 1) << "no accumulate_bytes column in the _cv row";

  ASSERT_EQ(run_shell(bench_command(kSmall + "--benchmark_out=" + con +
                                    " --benchmark_out_format=console") +
                      " >" + shown + " 2>/dev/null"),
            0);
  const std::string text = slurp(con);  // the file: GB's console with every counter
  EXPECT_EQ(text.find("nan"), std::string::npos) << con << ":\n" << text;
  EXPECT_NE(text.find("_cv "), std::string::npos) << con;
  EXPECT_NE(text.find(" accumulate_bytes=- "), std::string::npos) << con;
  // The display on stdout is the compact console (bench/compact_reporter.hpp): its cv too.
  const std::string display = slurp(shown);
  EXPECT_EQ(display.find("nan"), std::string::npos) << display;
  EXPECT_NE(display.find("step over 3 repetitions: mean "), std::string::npos) << display;
  EXPECT_NE(display.find(", cv "), std::string::npos) << display;
}

// `ulimit -f 5`: writes past 2560 bytes fail (EFBIG; SIGXFSZ ignored as on a full disk, where no
// signal comes). Every format's result is larger; the run's stderr (its context banner, longer
// than the limit on some machines) reaches the test through a pipe outside it.
TEST_F(OutputFormats, AWriteCutShortKeepsTheOldResultInEveryFormat) {
  for (const std::string fmt : {"json", "csv", "console"}) {
    const std::string f = dir_ + "/run." + fmt, err = dir_ + "/err";
    write_file(f, "old result\n");
    const int rc = run_with_file_limit(
        bench_command(kSmall + "--benchmark_out=" + f + " --benchmark_out_format=" + fmt), 5, err);
    EXPECT_EQ(rc, 1) << fmt << ": " << slurp(err);
    EXPECT_EQ(slurp(f), "old result\n") << fmt;
    EXPECT_NE(slurp(err).find("left as it was"), std::string::npos) << fmt << ": " << slurp(err);
    for (const auto& e : std::filesystem::directory_iterator(dir_))
      EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos)
          << fmt << ": left " << e.path();
  }
}

// Without the trap, a write past `ulimit -f` raises SIGXFSZ, which would kill the run and leave
// its temporary file: the suite ignores it and reports the error instead.
TEST_F(OutputFormats, AFileSizeLimitIsAnErrorNotAKill) {
  const std::string f = dir_ + "/run.json", err = dir_ + "/err";
  write_file(f, "old result\n");
  const int rc = run_with_file_limit(bench_command(kSmall + "--benchmark_out=" + f), 5, err, false);
  EXPECT_EQ(rc, 1) << slurp(err);
  EXPECT_NE(slurp(err).find("File too large"), std::string::npos) << slurp(err);
  EXPECT_EQ(slurp(f), "old result\n");
  for (const auto& e : std::filesystem::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "left " << e.path();
}

}  // namespace

// A regular file under /dev/ (a tmpfs such as /dev/shm) is a result file like any other: replaced
// only when complete. Only a device, pipe or link there (/dev/stdout, /dev/null) is written in
// place.
TEST_F(OutputFormats, AResultFileUnderDevShmIsReplacedOnlyWhenComplete) {
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm on this machine";
  const std::string f = "/dev/shm/shardaccum_test_" + std::to_string(getpid()) + ".json",
                    err = dir_ + "/err";
  write_file(f, "old result\n");
  const int rc = run_with_file_limit(bench_command(kSmall + "--benchmark_out=" + f), 5, err);
  const std::string kept = slurp(f);
  std::filesystem::remove(f);
  EXPECT_EQ(rc, 1) << slurp(err);
  EXPECT_EQ(kept, "old result\n");
  EXPECT_NE(slurp(err).find("left as it was"), std::string::npos) << slurp(err);
}
