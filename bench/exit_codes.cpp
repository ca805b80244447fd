#include "bench/exit_codes.hpp"

#include <cstdio>

#include "bench/cli.hpp"

namespace shardaccum {

int exit_code(const std::exception& e) {
  if (dynamic_cast<const CliError*>(&e) || dynamic_cast<const UsageError*>(&e)) return kExitUsage;
  return kExitFailure;
}

int report_error(const std::exception& e) {
  const auto* run = dynamic_cast<const RunError*>(&e);
  std::fprintf(stderr, "shardaccum_bench: %serror: %s\n", run ? run->who().c_str() : "", e.what());
  if (run && !run->hint().empty())
    std::fprintf(stderr, "shardaccum_bench: hint: %s\n", run->hint().c_str());
  return exit_code(e);
}

bool abandons(const std::exception& e) {
  const auto* run = dynamic_cast<const RunError*>(&e);
  return run && run->abandon();
}

}  // namespace shardaccum
