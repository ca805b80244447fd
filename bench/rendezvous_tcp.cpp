// The TCP transport of the rendezvous (bench/rendezvous.hpp, --rendezvous tcp:HOST:PORT): rank 0
// listens and accepts every other rank's hello, then sends each the blob, its hash and its verdict.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "bench/rendezvous_transport.hpp"

namespace shardaccum::rendezvous {

namespace {

constexpr char kWireMagic[4] = {'S', 'A', 'R', '1'};

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
  const auto d =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
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

RecvResult get_bytes(int fd, std::string& out, size_t max, Clock::time_point deadline,
                     bool& too_big) {
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
  if (fd.get() < 0 &&
      bind_errno == EADDRNOTAVAIL) {  // MASTER_ADDR names this host by another address
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
  if (fd.get() < 0)
    throw std::runtime_error("rendezvous: rank 0 at " + to_string(spec) + ": " + error);
  return fd;
}

std::vector<uint8_t> tcp_rank0(const Exchange& x, const std::vector<uint8_t>& blob) {
  const RendezvousSpec& spec = x.spec;
  const LaunchInfo& launch = x.launch;
  const std::string& hash = x.hash;
  const double timeout_s = x.timeout_s;
  const Clock::time_point deadline = x.deadline;
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
    if (recv_all(c.get(), magic, 4, deadline) != RecvResult::ok ||
        std::memcmp(magic, kWireMagic, 4) != 0 ||
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
  if (left ==
      0) {  // everyone is here: deliver the blob, even on a mismatch, so each rank can say why
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
        problems.push_back("rendezvous: cannot send the unique id to rank " + std::to_string(r) +
                           ": " + os_error(errno));
  }
  // Missing ranks: the connections close unanswered, so the ranks that came fail at once.
  conns.clear();
  finish_rank0(arrived, problems, timeout_s);
  return blob;
}

std::vector<uint8_t> tcp_rank_n(const Exchange& x) {
  const RendezvousSpec& spec = x.spec;
  const LaunchInfo& launch = x.launch;
  const std::string& hash = x.hash;
  const double timeout_s = x.timeout_s;
  Clock::time_point deadline = x.deadline;
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
    throw std::runtime_error(me + " cannot send to rank 0 at " + to_string(spec) + ": " +
                             os_error(errno));
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
  case RecvResult::ok: break;
  case RecvResult::closed:
    throw std::runtime_error(
        me + ": rank 0 at " + to_string(spec) +
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

class TcpTransport : public Transport {
 public:
  std::vector<uint8_t> publish(const Exchange& x, const std::vector<uint8_t>& blob) override {
    return tcp_rank0(x, blob);
  }
  std::vector<uint8_t> join(const Exchange& x) override { return tcp_rank_n(x); }
};

}  // namespace

std::unique_ptr<Transport> make_tcp_transport() { return std::make_unique<TcpTransport>(); }

}  // namespace shardaccum::rendezvous
