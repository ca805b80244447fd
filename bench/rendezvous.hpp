#pragma once
// Exchanges NCCL's unique id (an opaque blob, 128 bytes for NCCL) from rank 0 to every other
// process of a multi-process launch, and checks that every rank runs the same case list and build.
// Every wait is bounded by a timeout: a rank that never arrives is an error, never a hang.
#include <cstdint>
#include <string>
#include <vector>

#include "bench/launcher.hpp"

namespace shardaccum {

/// Where the ranks meet (--rendezvous).
struct RendezvousSpec {
  enum Kind { file, tcp } kind = tcp;
  std::string path;  ///< file: the file rank 0 publishes (on a file system all ranks share)
  std::string host;  ///< tcp: the host of rank 0 (a name or an address)
  int port = 0;      ///< tcp: the port rank 0 listens on, 1..65535
};

/// Parses --rendezvous `spec`: "file:PATH" or "tcp:HOST:PORT" (HOST may be "[v6-address]").
/// Empty: tcp at `launch`'s MASTER_ADDR:MASTER_PORT, or MASTER_PORT+1 under torchrun (whose agent
/// store already listens on MASTER_PORT: launch.agent_store). The file PATH must be fresh for each
/// launch (e.g. include the job id): a stale file from an earlier launch could be read before rank
/// 0 replaces it. Throws std::invalid_argument naming --rendezvous for a malformed spec, and naming
/// MASTER_ADDR or MASTER_PORT when the spec is empty and the launcher did not set them.
RendezvousSpec parse_rendezvous(const std::string& spec, const LaunchInfo& launch);

/// Rank 0 publishes `blob_from_rank0` (ignored on the other ranks) and its `build_hash` (a hash of
/// the case list and the build); every rank returns rank 0's blob. With world_size 1 it returns the
/// blob at once, touching nothing.
///  - file: rank 0 writes spec.path (temp file + rename); the others poll for it, then write
///    spec.path + ".rank<N>" holding their hash; rank 0 waits for all of them, removes those files
///    and PATH, and writes its verdict to spec.path + ".done" ("ok", or "error" and its message),
///    which the others wait for (so a rank is not left believing the rendezvous succeeded).
///  - tcp: rank 0 listens on spec.port (SO_REUSEADDR) and accepts world_size-1 connections, each
///    sending its rank and hash; then it sends the blob, its hash and its verdict (empty, or its
///    reason to fail) to each. The others connect, retrying until the timeout.
/// When rank 0 fails (a rank differs), every rank that got the verdict fails too ("rank 0 failed:"
/// and rank 0's message), so no rank goes on to create a communicator alone.
/// `timeout_s` (seconds, > 0) bounds the whole exchange on every rank; a rank other than 0 that has
/// arrived waits up to 0.5 s more for rank 0's verdict (which rank 0 gives at its own deadline).
/// Throws std::runtime_error:
///  - on a rank whose hash differs from rank 0's: "rank N runs a different case list or build than
///    rank 0: ..." naming both hashes; rank 0 throws the same for every such rank (after delivering
///    the blob, so that every rank fails clearly);
///  - on rank 0 when ranks are missing at the timeout: "rendezvous: N of M ranks arrived within T s
///    (missing ranks: ...)";
///  - on another rank when rank 0 does not appear within the timeout, or gives up (its reason
///    is included for file; over tcp the connection closes unanswered);
///  - on socket or file errors (naming the spec and the OS error).
/// Throws std::invalid_argument for a bad rank/world size, a timeout <= 0, or a blob over 1 MiB.
std::vector<uint8_t> exchange(const RendezvousSpec& spec, const LaunchInfo& launch,
                              const std::vector<uint8_t>& blob_from_rank0,
                              const std::string& build_hash, double timeout_s);

/// "file:PATH" or "tcp:HOST:PORT", as given to --rendezvous (for messages).
std::string to_string(const RendezvousSpec& spec);

}  // namespace shardaccum
