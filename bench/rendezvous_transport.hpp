#pragma once
// The rendezvous protocol's parts shared by its transports (bench/rendezvous.hpp): the exchange's
// inputs, the messages every transport reports alike, and the transport interface. Internal to
// bench/rendezvous*.cpp.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/rendezvous.hpp"

namespace shardaccum::rendezvous {

using Clock = std::chrono::steady_clock;
inline constexpr size_t kMaxBlob = 1 << 20;
inline constexpr size_t kMaxHash = 1 << 16;
inline constexpr auto kPoll = std::chrono::milliseconds(20);
/// Ranks that arrived wait this much past their own deadline for rank 0's verdict, which rank 0
/// gives at its deadline at the latest (so they report rank 0's reason, not a timeout of their
/// own).
inline constexpr auto kVerdictGrace = std::chrono::milliseconds(500);

/// One exchange as exchange() validated it; `deadline` is now + timeout_s.
struct Exchange {
  const RendezvousSpec& spec;
  const LaunchInfo& launch;
  const std::string& hash;  // this rank's build hash
  double timeout_s;
  Clock::time_point deadline;
};

/// "%g" of `s` seconds, for messages.
std::string fmt_seconds(double s);
/// strerror(err).
std::string os_error(int err);
/// "rank N runs a different case list or build than rank 0: ..." naming both hashes.
std::string mismatch_message(int rank, const std::string& theirs, const std::string& rank0);
/// Rank 0's verdict once everyone arrived (or not): throws std::runtime_error listing every
/// problem, missing ranks first ("rendezvous: N of M ranks arrived within T s (missing ranks:
/// ...)").
void finish_rank0(const std::vector<bool>& arrived, const std::vector<std::string>& problems,
                  double timeout_s);

/// How the ranks meet: rank 0 publishes its blob and gives its verdict, every other rank joins.
/// Both throw std::runtime_error as exchange() documents.
class Transport {
 public:
  virtual ~Transport() = default;
  /// Rank 0: publishes `blob` and the hash, waits for the others until the deadline, returns blob.
  virtual std::vector<uint8_t> publish(const Exchange& x, const std::vector<uint8_t>& blob) = 0;
  /// Any other rank: returns rank 0's blob once rank 0 gave its verdict "ok".
  virtual std::vector<uint8_t> join(const Exchange& x) = 0;
};

/// file:PATH on a file system every rank shares (bench/rendezvous_file.cpp).
std::unique_ptr<Transport> make_file_transport();
/// tcp:HOST:PORT, rank 0 listening (bench/rendezvous_tcp.cpp).
std::unique_ptr<Transport> make_tcp_transport();

}  // namespace shardaccum::rendezvous
