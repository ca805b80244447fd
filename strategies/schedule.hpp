#pragma once
// The schedule of one optimizer step: a string over n (no-sync) and S (sync) micro-batches.
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

/// The canonical schedules of docs/DESIGN.md §1, in report order.
inline constexpr const char* kCanonicalSchedules[] = {"no-sync", "sync", "interleaved-nosync-last",
                                                      "interleaved-sync-last"};

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
