#include "bench/rendezvous.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace shardaccum {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxBlob = 1 << 20;
constexpr size_t kMaxHash = 1 << 16;
constexpr char kFileMagic[] = "shardaccum-rendezvous 1";
constexpr char kWireMagic[4] = {'S', 'A', 'R', '1'};
constexpr auto kPoll = std::chrono::milliseconds(20);
/// Ranks that arrived wait this much past their own deadline for rank 0's verdict, which rank 0
/// gives at its deadline at the latest (so they report rank 0's reason, not a timeout of their own).
constexpr auto kVerdictGrace = std::chrono::milliseconds(500);

std::string fmt_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::string os_error(int err) { return std::strerror(err); }

std::string mismatch_message(int rank, const std::string& theirs, const std::string& rank0) {
  return "rank " + std::to_string(rank) + " runs a different case list or build than rank 0: rank " +
         std::to_string(rank) + " has build hash '" + theirs + "', rank 0 has '" + rank0 + "'";
}

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

/// Rank 0's verdict once everyone arrived (or not): throws listing every problem.
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

std::string to_hex(const std::vector<uint8_t>& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  s.reserve(b.size() * 2);
  for (uint8_t x : b) {
    s += d[x >> 4];
    s += d[x & 15];
  }
  return s;
}

bool from_hex(const std::string& s, std::vector<uint8_t>& out) {
  if (s.size() % 2 != 0) return false;
  out.clear();
  for (size_t i = 0; i < s.size(); i += 2) {
    uint8_t v = 0;
    auto [p, ec] = std::from_chars(s.data() + i, s.data() + i + 2, v, 16);
    if (ec != std::errc() || p != s.data() + i + 2) return false;
    out.push_back(v);
  }
  return true;
}

// ---------------------------------------------------------------- file

bool read_whole(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

void write_atomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("rendezvous: cannot write " + tmp + ": " + os_error(errno));
    out << content;
    out.flush();
    if (!out) throw std::runtime_error("rendezvous: cannot write " + tmp + ": " + os_error(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error("rendezvous: cannot rename " + tmp + " to " + path + ": " + os_error(err));
  }
}

std::string rank_file(const std::string& path, int rank) { return path + ".rank" + std::to_string(rank); }
std::string done_file(const std::string& path) { return path + ".done"; }

std::vector<uint8_t> file_rank0(const RendezvousSpec& spec, const LaunchInfo& launch,
                                const std::vector<uint8_t>& blob, const std::string& hash,
                                double timeout_s, Clock::time_point deadline) {
  for (int r = 1; r < launch.world_size; ++r) std::remove(rank_file(spec.path, r).c_str());
  std::remove(done_file(spec.path).c_str());
  write_atomically(spec.path, std::string(kFileMagic) + "\n" + to_hex(blob) + "\n" + hash);
  std::vector<bool> arrived(launch.world_size, false);
  arrived[0] = true;
  std::vector<std::string> problems;
  int left = launch.world_size - 1;
  while (true) {
    for (int r = 1; r < launch.world_size; ++r) {
      std::string theirs;
      if (arrived[r] || !read_whole(rank_file(spec.path, r), theirs)) continue;
      arrived[r] = true;
      --left;
      if (theirs != hash) problems.push_back(mismatch_message(r, theirs, hash));
    }
    if (left == 0 || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(kPoll);
  }
  // Everyone who arrived has read the published file; a late rank finds nothing and times out.
  std::remove(spec.path.c_str());
  for (int r = 1; r < launch.world_size; ++r) std::remove(rank_file(spec.path, r).c_str());
  try {
    finish_rank0(arrived, problems, timeout_s);
  } catch (const std::runtime_error& e) {
    write_atomically(done_file(spec.path), std::string("error\n") + e.what());
    throw;
  }
  write_atomically(done_file(spec.path), "ok\n");  // left in place: rank 0 cannot know who read it
  return blob;
}

std::vector<uint8_t> file_rank_n(const RendezvousSpec& spec, const LaunchInfo& launch,
                                 const std::string& hash, double timeout_s, Clock::time_point deadline) {
  std::string content;
  while (!read_whole(spec.path, content)) {
    if (Clock::now() >= deadline)
      throw std::runtime_error("rendezvous: rank " + std::to_string(launch.rank) + " waited " +
                               fmt_seconds(timeout_s) + " s for rank 0 to publish " + to_string(spec) +
                               " (no file appeared; is rank 0 running with the same --rendezvous?)");
    std::this_thread::sleep_for(kPoll);
  }
  const size_t a = content.find('\n');
  const size_t b = a == std::string::npos ? a : content.find('\n', a + 1);
  std::vector<uint8_t> blob;
  if (b == std::string::npos || content.substr(0, a) != kFileMagic ||
      !from_hex(content.substr(a + 1, b - a - 1), blob))
    throw std::runtime_error("rendezvous: " + spec.path + " is not a shardaccum rendezvous file");
  const std::string rank0_hash = content.substr(b + 1);
  write_atomically(rank_file(spec.path, launch.rank), hash);  // rank 0 learns of a mismatch too
  if (rank0_hash != hash) throw std::runtime_error(mismatch_message(launch.rank, hash, rank0_hash));
  // Rank 0's verdict: it fails when a rank is missing or differs, and then so does every rank.
  std::string verdict;
  while (!read_whole(done_file(spec.path), verdict) || verdict.empty()) {
    if (Clock::now() >= deadline + kVerdictGrace)
      throw std::runtime_error("rendezvous: rank " + std::to_string(launch.rank) + " read " + to_string(spec) +
                               " but rank 0 gave no verdict (" + done_file(spec.path) + ") within " +
                               fmt_seconds(timeout_s) + " s");
    std::this_thread::sleep_for(kPoll);
  }
  if (verdict.rfind("ok\n", 0) != 0)
    throw std::runtime_error("rendezvous: rank " + std::to_string(launch.rank) + ": rank 0 failed: " +
                             verdict.substr(verdict.find('\n') + 1));
  return blob;
}

// ---------------------------------------------------------------- tcp

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    reset();
    fd_ = o.fd_;
    o.fd_ = -1;
    return *this;
  }
  ~Fd() { reset(); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

int ms_left(Clock::time_point deadline) {
  const auto d = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return d <= 0 ? 0 : static_cast<int>(d);
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

/// Sends all of `data`; false on error or at the deadline.
bool send_all(int fd, const std::string& data, Clock::time_point deadline) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, ms_left(deadline)) <= 0) return false;
      continue;
    }
    return false;
  }
  return true;
}

enum class RecvResult { ok, closed, timeout, error };

RecvResult recv_all(int fd, void* buf, size_t len, Clock::time_point deadline) {
  auto* p = static_cast<char*>(buf);
  size_t off = 0;
  while (off < len) {
    pollfd pf{fd, POLLIN, 0};
    const int pr = ::poll(&pf, 1, ms_left(deadline));
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) return RecvResult::error;
    if (pr == 0) return RecvResult::timeout;
    ssize_t n = ::recv(fd, p + off, len - off, 0);
    if (n == 0) return RecvResult::closed;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return errno == ECONNRESET ? RecvResult::closed : RecvResult::error;
    }
    off += static_cast<size_t>(n);
  }
  return RecvResult::ok;
}

void put_u32(std::string& s, uint32_t v) {
  const uint32_t n = htonl(v);
  s.append(reinterpret_cast<const char*>(&n), 4);
}

RecvResult get_u32(int fd, uint32_t& v, Clock::time_point deadline) {
  uint32_t n = 0;
  RecvResult r = recv_all(fd, &n, 4, deadline);
  v = ntohl(n);
  return r;
}

RecvResult get_bytes(int fd, std::string& out, size_t max, Clock::time_point deadline, bool& too_big) {
  uint32_t len = 0;
  too_big = false;
  RecvResult r = get_u32(fd, len, deadline);
  if (r != RecvResult::ok) return r;
  if (len > max) {
    too_big = true;
    return RecvResult::error;
  }
  out.assign(len, '\0');
  return len == 0 ? RecvResult::ok : recv_all(fd, out.data(), len, deadline);
}

addrinfo* resolve(const RendezvousSpec& spec, bool passive, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(spec.port);
  const int rc = ::getaddrinfo(spec.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) {
    error = std::string("cannot resolve ") + spec.host + ": " + ::gai_strerror(rc);
    return nullptr;
  }
  return res;
}

/// Listens on spec.host:spec.port when that address is local, else on every interface.
Fd listen_on(const RendezvousSpec& spec) {
  std::string error;
  addrinfo* res = resolve(spec, true, error);
  if (res == nullptr) throw std::runtime_error("rendezvous: " + to_string(spec) + ": " + error);
  int bind_errno = 0;
  auto try_bind = [&](const sockaddr* addr, socklen_t len, int family) -> Fd {
    Fd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) {
      error = "socket: " + os_error(errno);
      return Fd();
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), addr, len) != 0 || ::listen(fd.get(), 128) != 0) {
      bind_errno = errno;
      error = "cannot listen on port " + std::to_string(spec.port) + ": " + os_error(errno);
      return Fd();
    }
    set_nonblocking(fd.get());
    return fd;
  };
  Fd fd;
  for (addrinfo* ai = res; ai != nullptr && fd.get() < 0; ai = ai->ai_next)
    fd = try_bind(ai->ai_addr, ai->ai_addrlen, ai->ai_family);
  const int family = res->ai_family;
  ::freeaddrinfo(res);
  if (fd.get() < 0 && bind_errno == EADDRNOTAVAIL) {  // MASTER_ADDR names this host by another address
    if (family == AF_INET6) {
      sockaddr_in6 any{};
      any.sin6_family = AF_INET6;
      any.sin6_addr = in6addr_any;
      any.sin6_port = htons(static_cast<uint16_t>(spec.port));
      fd = try_bind(reinterpret_cast<sockaddr*>(&any), sizeof any, AF_INET6);
    } else {
      sockaddr_in any{};
      any.sin_family = AF_INET;
      any.sin_addr.s_addr = htonl(INADDR_ANY);
      any.sin_port = htons(static_cast<uint16_t>(spec.port));
      fd = try_bind(reinterpret_cast<sockaddr*>(&any), sizeof any, AF_INET);
    }
  }
  if (fd.get() < 0) throw std::runtime_error("rendezvous: rank 0 at " + to_string(spec) + ": " + error);
  return fd;
}

std::vector<uint8_t> tcp_rank0(const RendezvousSpec& spec, const LaunchInfo& launch,
                               const std::vector<uint8_t>& blob, const std::string& hash,
                               double timeout_s, Clock::time_point deadline) {
  Fd listener = listen_on(spec);
  std::vector<Fd> conns(launch.world_size);
  std::vector<bool> arrived(launch.world_size, false);
  arrived[0] = true;
  std::vector<std::string> problems;
  int left = launch.world_size - 1;
  while (left > 0) {
    pollfd p{listener.get(), POLLIN, 0};
    const int pr = ::poll(&p, 1, ms_left(deadline));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) break;  // timeout (or a poll error: reported as missing ranks)
    Fd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (c.get() < 0) continue;
    char magic[4];
    uint32_t rank = 0;
    std::string theirs;
    bool too_big = false;
    if (recv_all(c.get(), magic, 4, deadline) != RecvResult::ok || std::memcmp(magic, kWireMagic, 4) != 0 ||
        get_u32(c.get(), rank, deadline) != RecvResult::ok ||
        get_bytes(c.get(), theirs, kMaxHash, deadline, too_big) != RecvResult::ok)
      continue;  // not one of ours, or it went away: it may reconnect
    if (rank == 0 || rank >= static_cast<uint32_t>(launch.world_size)) {
      problems.push_back("a process claiming rank " + std::to_string(rank) + " joined a world of " +
                         std::to_string(launch.world_size));
      continue;
    }
    if (arrived[rank]) {
      problems.push_back("rank " + std::to_string(rank) + " arrived twice");
      continue;
    }
    arrived[rank] = true;
    --left;
    if (theirs != hash) problems.push_back(mismatch_message(static_cast<int>(rank), theirs, hash));
    conns[rank] = std::move(c);
  }
  listener.reset();
  if (left == 0) {  // everyone is here: deliver the blob, even on a mismatch, so each rank can say why
    std::string verdict;  // empty: ok; else rank 0's reason to fail, which every rank then reports
    for (const auto& p : problems) verdict += (verdict.empty() ? "" : "; ") + p;
    std::string msg(kWireMagic, 4);
    put_u32(msg, static_cast<uint32_t>(blob.size()));
    msg.append(reinterpret_cast<const char*>(blob.data()), blob.size());
    put_u32(msg, static_cast<uint32_t>(hash.size()));
    msg += hash;
    put_u32(msg, static_cast<uint32_t>(verdict.size()));
    msg += verdict;
    for (int r = 1; r < launch.world_size; ++r)
      if (!send_all(conns[r].get(), msg, deadline))
        problems.push_back("rendezvous: cannot send the unique id to rank " + std::to_string(r) + ": " +
                           os_error(errno));
  }
  // Missing ranks: the connections close unanswered, so the ranks that came fail at once.
  conns.clear();
  finish_rank0(arrived, problems, timeout_s);
  return blob;
}

std::vector<uint8_t> tcp_rank_n(const RendezvousSpec& spec, const LaunchInfo& launch,
                                const std::string& hash, double timeout_s, Clock::time_point deadline) {
  // (deadline is extended by kVerdictGrace once connected)
  const std::string me = "rendezvous: rank " + std::to_string(launch.rank);
  std::string last_error = "no attempt";
  Fd fd;
  while (fd.get() < 0) {
    addrinfo* res = resolve(spec, false, last_error);
    for (addrinfo* ai = res; ai != nullptr && fd.get() < 0; ai = ai->ai_next) {
      Fd c(::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
      if (c.get() < 0) {
        last_error = "socket: " + os_error(errno);
        continue;
      }
      int rc = ::connect(c.get(), ai->ai_addr, ai->ai_addrlen);
      if (rc != 0 && errno == EINPROGRESS) {
        pollfd p{c.get(), POLLOUT, 0};
        int err = ETIMEDOUT;
        if (::poll(&p, 1, ms_left(deadline)) > 0) {
          socklen_t len = sizeof err;
          ::getsockopt(c.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        }
        rc = err == 0 ? 0 : -1;
        errno = err;
      }
      if (rc == 0) {
        fd = std::move(c);
      } else {
        last_error = os_error(errno);
      }
    }
    if (res != nullptr) ::freeaddrinfo(res);
    if (fd.get() >= 0) break;
    if (Clock::now() >= deadline)
      throw std::runtime_error(me + " could not reach rank 0 at " + to_string(spec) + " within " +
                               fmt_seconds(timeout_s) + " s (last error: " + last_error + ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, ms_left(deadline) + 1)));
  }
  std::string hello(kWireMagic, 4);
  put_u32(hello, static_cast<uint32_t>(launch.rank));
  put_u32(hello, static_cast<uint32_t>(hash.size()));
  hello += hash;
  if (!send_all(fd.get(), hello, deadline))
    throw std::runtime_error(me + " cannot send to rank 0 at " + to_string(spec) + ": " + os_error(errno));
  char magic[4];
  std::string blob, rank0_hash;
  bool too_big = false;
  deadline += kVerdictGrace;  // rank 0 answers (or closes) at its deadline at the latest
  RecvResult r = recv_all(fd.get(), magic, 4, deadline);
  if (r == RecvResult::ok && std::memcmp(magic, kWireMagic, 4) != 0) r = RecvResult::error;
  if (r == RecvResult::ok) r = get_bytes(fd.get(), blob, kMaxBlob, deadline, too_big);
  if (r == RecvResult::ok) r = get_bytes(fd.get(), rank0_hash, kMaxHash, deadline, too_big);
  std::string verdict;
  if (r == RecvResult::ok) r = get_bytes(fd.get(), verdict, kMaxBlob, deadline, too_big);
  switch (r) {
    case RecvResult::ok:
      break;
    case RecvResult::closed:
      throw std::runtime_error(me + ": rank 0 at " + to_string(spec) +
                               " closed the connection without sending the unique id (rank 0 gave up, "
                               "probably because another rank did not arrive; see rank 0's error)");
    case RecvResult::timeout:
      throw std::runtime_error(me + " connected to rank 0 at " + to_string(spec) +
                               " but received no unique id within " + fmt_seconds(timeout_s) + " s");
    case RecvResult::error:
      throw std::runtime_error(me + ": bad or failed reply from " + to_string(spec) +
                               (too_big ? " (oversized field)" : ": " + os_error(errno)));
  }
  if (rank0_hash != hash) throw std::runtime_error(mismatch_message(launch.rank, hash, rank0_hash));
  if (!verdict.empty()) throw std::runtime_error(me + ": rank 0 failed: " + verdict);
  return std::vector<uint8_t>(blob.begin(), blob.end());
}

}  // namespace

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
      throw std::invalid_argument("--rendezvous not given and MASTER_PORT is not set (MASTER_PORT=" +
                                  std::to_string(launch.master_port) +
                                  "): give --rendezvous tcp:HOST:PORT or file:PATH, or set MASTER_PORT");
    out.kind = RendezvousSpec::tcp;
    out.host = launch.master_addr;
    out.port = launch.master_port;
    // Under torchrun the agent's own store listens on MASTER_PORT: the next port is ours.
    if (launch.agent_store) {
      if (out.port == 65535)
        throw std::invalid_argument("--rendezvous not given and MASTER_PORT is 65535 under torchrun (whose "
                                    "store holds it): give --rendezvous tcp:HOST:PORT");
      ++out.port;
    }
    return out;
  }
  const auto bad = [&](const std::string& why) {
    const std::string shown = spec.size() <= 120 ? spec : spec.substr(0, 120) + "...";  // quoted short
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
    if (close == std::string::npos) throw bad("unclosed '[': write an IPv6 host as [ADDRESS] and close it with ']'");
    out.host = rest.substr(1, close - 1);
    if (rest.size() == close + 1 || rest[close + 1] != ':') throw bad("expected ':PORT' after ']'");
    port = rest.substr(close + 2);
  } else {
    const size_t colon = rest.find(':');
    if (colon == std::string::npos) throw bad("no port");
    out.host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (port.find(':') != std::string::npos)
      throw bad("more than one ':' after the host; an IPv6 host goes in brackets (tcp:[::1]:29600)");
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
                              const std::vector<uint8_t>& blob_from_rank0, const std::string& build_hash,
                              double timeout_s) {
  if (launch.world_size < 1 || launch.rank < 0 || launch.rank >= launch.world_size)
    throw std::invalid_argument("rendezvous: rank " + std::to_string(launch.rank) + " of world size " +
                                std::to_string(launch.world_size) + " is out of range");
  if (!(timeout_s > 0)) throw std::invalid_argument("rendezvous: timeout must be > 0 s");
  if (blob_from_rank0.size() > kMaxBlob) throw std::invalid_argument("rendezvous: blob over 1 MiB");
  if (build_hash.size() > kMaxHash) throw std::invalid_argument("rendezvous: build hash over 64 KiB");
  if (launch.world_size == 1) return blob_from_rank0;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  if (spec.kind == RendezvousSpec::file) {
    if (spec.path.empty()) throw std::invalid_argument("--rendezvous file: empty path");
    return launch.rank == 0 ? file_rank0(spec, launch, blob_from_rank0, build_hash, timeout_s, deadline)
                            : file_rank_n(spec, launch, build_hash, timeout_s, deadline);
  }
  if (spec.port < 1 || spec.port > 65535)
    throw std::invalid_argument("--rendezvous " + to_string(spec) + ": port not in 1..65535");
  return launch.rank == 0 ? tcp_rank0(spec, launch, blob_from_rank0, build_hash, timeout_s, deadline)
                          : tcp_rank_n(spec, launch, build_hash, timeout_s, deadline);
}

}  // namespace shardaccum
