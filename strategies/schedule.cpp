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
  const auto* c = std::find_if(std::begin(kCanonicalSchedules), std::end(kCanonicalSchedules),
                               [&](const CanonicalSchedule& s) { return name == s.name; });
  if (c == std::end(kCanonicalSchedules))
    throw std::invalid_argument("--schedule '" + quoted(name) +
                                "': not a canonical name (no-sync, sync, interleaved-nosync-last, "
                                "interleaved-sync-last) nor a string of n/S ending in S");
  if (k < kCanonicalMinK)
    throw std::invalid_argument(
        "--schedule " + std::string(name) + " needs --k >= 3 (got " + std::to_string(k) +
        "); give a literal schedule of K letters ending in S instead, such as " +
        (k <= 1 ? std::string("'S'")
                : "'" + std::string(static_cast<size_t>(k - 1), 'n') + "S' or '" +
                      std::string(static_cast<size_t>(k), 'S') + "'"));
  std::string m;
  const char other = c->letter == 'n' ? 'S' : 'n';
  for (int i = 0; i < k - 1; ++i)
    m += c->head == CanonicalSchedule::Head::constant || (k - 2 - i) % 2 == 0 ? c->letter : other;
  m += 'S';
  return Schedule{m};
}

Schedule parse_schedule(std::string_view text, int k) {
  if (text.empty())
    throw std::invalid_argument(
        "--schedule is empty: give n/S letters ending in S (e.g. nnnS) or a "
        "canonical name (no-sync, sync, interleaved-nosync-last, "
        "interleaved-sync-last)");
  if (text.find_first_not_of("nS") != std::string_view::npos) return canonical_schedule(text, k);
  if (text.size() > static_cast<size_t>(kMaxMicroBatches))
    throw std::invalid_argument(
        "--schedule '" + quoted(text) + "' has " + std::to_string(text.size()) +
        " micro-batches, above the limit of " + std::to_string(kMaxMicroBatches) +
        " (as for --k); give a shorter schedule");
  if (text.back() != 'S')
    throw std::invalid_argument(
        "--schedule '" + quoted(text) +
        "' must end in S: the last micro-batch of a step has to reduce-scatter "
        "(e.g. '" +
        (text.size() <= 80 ? std::string(text) + "S" : "nnnS") + "')");
  return Schedule{std::string(text)};
}

}  // namespace shardaccum
