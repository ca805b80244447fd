#include "bench/exit_codes.hpp"

#include <cstdio>
#include <string>

#include "bench/cli.hpp"
#include "bench/cli_values.hpp"

namespace shardaccum {

int exit_code(const std::exception& e) {
  if (dynamic_cast<const CliError*>(&e) || dynamic_cast<const UsageError*>(&e)) return kExitUsage;
  return kExitFailure;
}

int report_error(const std::exception& e) {
  const auto* run = dynamic_cast<const RunError*>(&e);
  // Bad input's message quotes what the user typed: its control characters are escaped, every
  // one of them, not only those of the values that the message cut short (brief). Setup rethrows a
  // flag's CliError as a UsageError (run_setup.cpp resolve_run), so both are escaped.
  const bool bad_input = dynamic_cast<const CliError*>(&e) || dynamic_cast<const UsageError*>(&e);
  const std::string what = bad_input ? escape_controls(e.what()) : std::string(e.what());
  std::fprintf(stderr, "shardaccum_bench: %serror: %s\n", run ? run->who().c_str() : "",
               what.c_str());
  if (run && !run->hint().empty())
    std::fprintf(stderr, "shardaccum_bench: hint: %s\n", run->hint().c_str());
  return exit_code(e);
}

bool abandons(const std::exception& e) {
  const auto* run = dynamic_cast<const RunError*>(&e);
  return run && run->abandon();
}

}  // namespace shardaccum
