// The rendezvous (bench/rendezvous.hpp): parsing --rendezvous, the checks of an exchange, and the
// protocol's messages; the transports are bench/rendezvous_file.cpp and bench/rendezvous_tcp.cpp.
#include "bench/rendezvous.hpp"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "bench/rendezvous_transport.hpp"

namespace shardaccum {

namespace rendezvous {

std::string fmt_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::string os_error(int err) { return std::strerror(err); }

std::string mismatch_message(int rank, const std::string& theirs, const std::string& rank0) {
  return "rank " + std::to_string(rank) +
         " runs a different case list or build than rank 0: rank " + std::to_string(rank) +
         " has build hash '" + theirs + "', rank 0 has '" + rank0 + "'";
}

namespace {

std::string missing_message(const std::vector<bool>& arrived, double timeout_s) {
  int n = 0;
  std::string missing;
  for (size_t r = 0; r < arrived.size(); ++r) {
    if (arrived[r]) {
      ++n;
    } else {
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
  }
  return "rendezvous: " + std::to_string(n) + " of " + std::to_string(arrived.size()) +
         " ranks arrived within " + fmt_seconds(timeout_s) + " s (missing ranks: " + missing + ")";
}

}  // namespace

void finish_rank0(const std::vector<bool>& arrived, const std::vector<std::string>& problems,
                  double timeout_s) {
  std::string msg;
  for (bool a : arrived)
    if (!a) {
      msg = missing_message(arrived, timeout_s);
      break;
    }
  for (const auto& p : problems) msg += (msg.empty() ? "" : "; ") + p;
  if (!msg.empty()) throw std::runtime_error(msg);
}

}  // namespace rendezvous

std::string to_string(const RendezvousSpec& spec) {
  if (spec.kind == RendezvousSpec::file) return "file:" + spec.path;
  const bool v6 = spec.host.find(':') != std::string::npos;
  return "tcp:" + (v6 ? "[" + spec.host + "]" : spec.host) + ":" + std::to_string(spec.port);
}

RendezvousSpec parse_rendezvous(const std::string& spec, const LaunchInfo& launch) {
  RendezvousSpec out;
  if (spec.empty()) {
    if (launch.master_addr.empty())
      throw std::invalid_argument(
          "--rendezvous not given and MASTER_ADDR is not set: give --rendezvous tcp:HOST:PORT or "
          "file:PATH, or set MASTER_ADDR and MASTER_PORT");
    if (launch.master_port < 1 || launch.master_port > 65535)
      throw std::invalid_argument(
          "--rendezvous not given and MASTER_PORT is not set (MASTER_PORT=" +
          std::to_string(launch.master_port) +
          "): give --rendezvous tcp:HOST:PORT or file:PATH, or set MASTER_PORT");
    out.kind = RendezvousSpec::tcp;
    out.host = launch.master_addr;
    out.port = launch.master_port;
    // Under torchrun the agent's own store listens on MASTER_PORT: the next port is ours.
    if (launch.agent_store) {
      if (out.port == 65535)
        throw std::invalid_argument(
            "--rendezvous not given and MASTER_PORT is 65535 under torchrun (whose "
            "store holds it): give --rendezvous tcp:HOST:PORT");
      ++out.port;
    }
    return out;
  }
  const auto bad = [&](const std::string& why) {
    const std::string shown =
        spec.size() <= 120 ? spec : spec.substr(0, 120) + "...";  // quoted short
    return std::invalid_argument("--rendezvous '" + shown + "': " + why +
                                 " (expected file:PATH or tcp:HOST:PORT)");
  };
  if (spec.rfind("file:", 0) == 0) {
    out.kind = RendezvousSpec::file;
    out.path = spec.substr(5);
    if (out.path.empty()) throw bad("empty path");
    return out;
  }
  if (spec.rfind("tcp:", 0) != 0) throw bad("unknown kind");
  const std::string rest = spec.substr(4);
  out.kind = RendezvousSpec::tcp;
  // HOST:PORT with exactly one ':', or [V6-ADDRESS]:PORT: a stray ':' or '[' is an error, never
  // silently part of the host.
  std::string port;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string::npos)
      throw bad("unclosed '[': write an IPv6 host as [ADDRESS] and close it with ']'");
    out.host = rest.substr(1, close - 1);
    if (rest.size() == close + 1 || rest[close + 1] != ':') throw bad("expected ':PORT' after ']'");
    port = rest.substr(close + 2);
  } else {
    const size_t colon = rest.find(':');
    if (colon == std::string::npos) throw bad("no port");
    out.host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (port.find(':') != std::string::npos)
      throw bad(
          "more than one ':' after the host; an IPv6 host goes in brackets (tcp:[::1]:29600)");
    if (out.host.find_first_of("[]") != std::string::npos) throw bad("a '[' or ']' in the host");
  }
  if (out.host.empty()) throw bad("empty host");
  out.port = 0;
  auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), out.port);
  if (port.empty() || ec != std::errc() || p != port.data() + port.size() || out.port < 1 ||
      out.port > 65535)
    throw bad("port '" + port.substr(0, 16) + "' is not in 1..65535");
  return out;
}

std::vector<uint8_t> exchange(const RendezvousSpec& spec, const LaunchInfo& launch,
                              const std::vector<uint8_t>& blob_from_rank0,
                              const std::string& build_hash, double timeout_s) {
  if (launch.world_size < 1 || launch.rank < 0 || launch.rank >= launch.world_size)
    throw std::invalid_argument("rendezvous: rank " + std::to_string(launch.rank) +
                                " of world size " + std::to_string(launch.world_size) +
                                " is out of range");
  if (!(timeout_s > 0)) throw std::invalid_argument("rendezvous: timeout must be > 0 s");
  if (blob_from_rank0.size() > rendezvous::kMaxBlob)
    throw std::invalid_argument("rendezvous: blob over 1 MiB");
  if (build_hash.size() > rendezvous::kMaxHash)
    throw std::invalid_argument("rendezvous: build hash over 64 KiB");
  if (launch.world_size == 1) return blob_from_rank0;
  const auto deadline =
      rendezvous::Clock::now() + std::chrono::duration_cast<rendezvous::Clock::duration>(
                                     std::chrono::duration<double>(timeout_s));
  std::unique_ptr<rendezvous::Transport> transport;
  if (spec.kind == RendezvousSpec::file) {
    if (spec.path.empty()) throw std::invalid_argument("--rendezvous file: empty path");
    transport = rendezvous::make_file_transport();
  } else {
    if (spec.port < 1 || spec.port > 65535)
      throw std::invalid_argument("--rendezvous " + to_string(spec) + ": port not in 1..65535");
    transport = rendezvous::make_tcp_transport();
  }
  const rendezvous::Exchange x{spec, launch, build_hash, timeout_s, deadline};
  return launch.rank == 0 ? transport->publish(x, blob_from_rank0) : transport->join(x);
}

}  // namespace shardaccum
