// The rewriting of Google Benchmark's non-finite numbers (bench/reporters.hpp), on literal text in
// the forms GB 1.7/1.8 print: JSON NaN/Infinity tokens, CSV nan/-nan/inf fields, console "=-nan%".
#include <gtest/gtest.h>

#include "bench/reporters.hpp"

namespace {

using namespace shardaccum;

TEST(OutputSanitize, JsonTokensOutsideStringsBecomeNull) {
  bool in_string = false, escaped = false;
  EXPECT_EQ(json_nonfinite_to_null(
                R"({"a": NaN, "b": "NaN \" -Infinity", "c": -Infinity, "d": [Infinity,-NaN]})",
                in_string, escaped),
            R"({"a": null, "b": "NaN \" -Infinity", "c": null, "d": [null,null]})");
  // A string split across two chunks keeps its state.
  EXPECT_EQ(json_nonfinite_to_null(R"({"x": "a NaN)", in_string, escaped), R"({"x": "a NaN)");
  EXPECT_TRUE(in_string);
  EXPECT_EQ(json_nonfinite_to_null(R"( b", "y": NaN})", in_string, escaped), R"( b", "y": null})");
}

TEST(OutputSanitize, CsvNonFiniteFieldsBecomeEmpty) {
  EXPECT_EQ(csv_nonfinite_to_empty("\"a,nan\",3,nan,-nan,inf,-INF,1.5,\"x\"\"nan\"\nnan,0\n"),
            "\"a,nan\",3,,,,,1.5,\"x\"\"nan\"\n,0\n");
  EXPECT_EQ(csv_nonfinite_to_empty("nanny,info,2\n"), "nanny,info,2\n");
}

TEST(OutputSanitize, ConsoleValuesBecomeADash) {
  EXPECT_EQ(console_nonfinite_to_dash(" a=-nan% b=nan c=41.36% d=inf"), " a=- b=- c=41.36% d=-");
  EXPECT_EQ(console_nonfinite_to_dash("     nan%      12 ms"),
            "        -      12 ms");  // same width
  EXPECT_EQ(console_nonfinite_to_dash(" nanny=1 x=infinite"), " nanny=1 x=infinite");
}

}  // namespace
