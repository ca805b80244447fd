#include "strategies/schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace shardaccum {
namespace {

/// The user's text quoted short: a long literal must not fill the message.
std::string quoted(std::string_view s) {
  if (s.size() <= 80) return std::string(s);
  return std::string(s.substr(0, 80)) + "... (" + std::to_string(s.size()) + " characters)";
}

}  // namespace

int Schedule::sync_count() const {
  return static_cast<int>(std::count(modes.begin(), modes.end(), 'S'));
}

Schedule canonical_schedule(std::string_view name, int k) {
  const bool known = std::any_of(std::begin(kCanonicalSchedules), std::end(kCanonicalSchedules),
                                 [&](const char* c) { return name == c; });
  if (!known)
    throw std::invalid_argument("--schedule '" + quoted(name) +
                                "': not a canonical name (no-sync, sync, interleaved-nosync-last, "
                                "interleaved-sync-last) nor a string of n/S ending in S");
  if (k < 3)
    throw std::invalid_argument("--schedule " + std::string(name) + " needs --k >= 3 (got " +
                                std::to_string(k) + "); give a literal schedule such as 'nS' instead");
  std::string m;
  if (name == "no-sync") m = std::string(k - 1, 'n') + "S";
  if (name == "sync") m = std::string(k, 'S');
  if (name == "interleaved-nosync-last" || name == "interleaved-sync-last") {
    // Micro-batches 0..K-2 alternate so that micro-batch K-2 is n (resp. S); the last one syncs.
    const char at_km2 = name == "interleaved-nosync-last" ? 'n' : 'S';
    const char other = at_km2 == 'n' ? 'S' : 'n';
    for (int i = 0; i < k - 1; ++i) m += ((k - 2 - i) % 2 == 0) ? at_km2 : other;
    m += 'S';
  }
  return Schedule{m};
}

Schedule parse_schedule(std::string_view text, int k) {
  if (text.empty())
    throw std::invalid_argument("--schedule is empty: give n/S letters ending in S (e.g. nnnS) or a "
                                "canonical name (no-sync, sync, interleaved-nosync-last, "
                                "interleaved-sync-last)");
  if (text.find_first_not_of("nS") != std::string_view::npos) return canonical_schedule(text, k);
  if (text.size() > static_cast<size_t>(kMaxMicroBatches))
    throw std::invalid_argument("--schedule '" + quoted(text) + "' has " + std::to_string(text.size()) +
                                " micro-batches, above the limit of " + std::to_string(kMaxMicroBatches) +
                                " (as for --k); give a shorter schedule");
  if (text.back() != 'S')
    throw std::invalid_argument("--schedule '" + quoted(text) +
                                "' must end in S: the last micro-batch of a step has to reduce-scatter "
                                "(e.g. '" + (text.size() <= 80 ? std::string(text) + "S" : "nnnS") + "')");
  return Schedule{std::string(text)};
}

}  // namespace shardaccum
