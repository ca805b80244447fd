#pragma once
// The schedule of one optimizer step: a string over n (no-sync) and S (sync) micro-batches.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardaccum {

enum class MicroBatchMode : char { no_sync = 'n', sync = 'S' };

struct Schedule {
  std::string modes;  // e.g. "nSnS"; validated: non-empty, only n/S, ends in S
  int k() const { return static_cast<int>(modes.size()); }
  int sync_count() const;  // s in docs/DESIGN.md §3
  MicroBatchMode at(int mb) const { return static_cast<MicroBatchMode>(modes[mb]); }
};

/// A canonical schedule of docs/DESIGN.md §1 as a rule for any K >= kCanonicalMinK: the first K-1
/// micro-batches (the head), then S. `constant`: K-1 times `letter`; `alternating`: micro-batch i
/// is `letter` when K-2-i is even, the other letter when odd (so micro-batch K-2 is `letter`). The
/// registry JSON carries the same rule (strategies/registry_json.hpp).
struct CanonicalSchedule {
  enum class Head : uint8_t { constant, alternating };
  const char* name;
  const char* description;
  Head head;
  char letter;
};
inline constexpr int kCanonicalMinK = 3;

/// The four cases of the 2022 FSDP review, in report order.
inline constexpr CanonicalSchedule kCanonicalSchedules[] = {
    {"no-sync", "n^(K-1)S: inside no_sync() but for the last micro-batch",
     CanonicalSchedule::Head::constant, 'n'},
    {"sync", "S^K: a reduce-scatter every micro-batch", CanonicalSchedule::Head::constant, 'S'},
    {"interleaved-nosync-last", "n and S alternate, micro-batch K-2 is n (K=4: nSnS)",
     CanonicalSchedule::Head::alternating, 'n'},
    {"interleaved-sync-last", "n and S alternate, micro-batch K-2 is S (K=4: SnSS)",
     CanonicalSchedule::Head::alternating, 'S'},
};

/// Most micro-batches per step, for --k and for a literal schedule's length alike.
inline constexpr int kMaxMicroBatches = 4096;

/// Parses a literal schedule ("nnnS") or a canonical name with K ("sync", k=4 -> "SSSS").
/// Throws std::invalid_argument naming --schedule: empty, a letter other than n/S, a schedule that
/// does not end in S (the step would never sync), a literal longer than kMaxMicroBatches, or K < 3
/// for a canonical name. Messages quote at most the first 80 characters of `text`.
Schedule parse_schedule(std::string_view text, int k);

/// The canonical schedule `name` for K micro-batches (K >= 3). Throws std::invalid_argument.
Schedule canonical_schedule(std::string_view name, int k);

}  // namespace shardaccum
