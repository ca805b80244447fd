// Rendezvous between real local processes: each rank is a fork()ed child that runs exchange(),
// writes its outcome to a pipe and _exit()s; no child ever returns into GoogleTest.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench/rendezvous.hpp"

namespace shardaccum {
namespace {

using Clock = std::chrono::steady_clock;

struct Outcome {
  bool ok = false;
  std::string text;    // hex of the blob on success, the exception's message on failure
  double seconds = 0;  // the rank's time in exchange()
  int status = -1;     // the child's wait status
};

std::string hex(const std::vector<uint8_t>& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t x : b) s += {d[x >> 4], d[x & 15]};
  return s;
}

std::vector<uint8_t> unique_id() {  // stands in for ncclUniqueId: 128 opaque bytes
  std::vector<uint8_t> id(128);
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<uint8_t>(i * 37 + 11);
  return id;
}

/// A port free on 127.0.0.1 now (bound to port 0, then released).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    std::abort();
  ::close(fd);
  return ntohs(a.sin_port);
}

struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = testing::TempDir() + "shardaccum_rdv_XXXXXX";
    path = ::mkdtemp(tmpl.data()) ? tmpl : "";
  }
  ~TempDir() {
    if (!path.empty()) std::system(("rm -rf '" + path + "'").c_str());
  }
  // A copy would remove the folder twice, the second time under a live owner.
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

/// One rank's job: exchange() with these arguments.
struct RankJob {
  RendezvousSpec spec;
  int rank, world;
  std::string hash;
  double timeout_s;
};

/// Runs every job in its own child process at once; returns their outcomes in order. A child still
/// running after `limit_s` is killed (outcome status shows it), so the test never hangs.
std::vector<Outcome> run_processes(const std::vector<RankJob>& jobs, double limit_s = 8) {
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  for (const RankJob& job : jobs) {
    int fds[2];
    if (::pipe(fds) != 0) std::abort();
    const pid_t pid = ::fork();
    if (pid == 0) {  // child: no GoogleTest from here on
      ::close(fds[0]);
      LaunchInfo info{"test", job.rank, job.world, job.rank, "127.0.0.1", job.spec.port};
      std::string out;
      const auto t0 = Clock::now();
      try {
        const auto blob =
            exchange(job.spec, info, job.rank == 0 ? unique_id() : std::vector<uint8_t>{}, job.hash,
                     job.timeout_s);
        out = "O" + hex(blob);
      } catch (const std::exception& e) {
        out = std::string("E") + e.what();
      } catch (...) {
        out = "Eunknown exception";
      }
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      out = std::to_string(s) + "\n" + out;
      size_t off = 0;
      while (off < out.size()) {
        const ssize_t n = ::write(fds[1], out.data() + off, out.size() - off);
        if (n <= 0) ::_exit(3);
        off += static_cast<size_t>(n);
      }
      ::_exit(0);
    }
    ::close(fds[1]);
    pids.push_back(pid);
    pipes.push_back(fds[0]);
  }
  std::vector<Outcome> outs(jobs.size());
  const auto deadline = Clock::now() + std::chrono::duration<double>(limit_s);
  for (size_t i = 0; i < pids.size(); ++i) {
    while (::waitpid(pids[i], &outs[i].status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(pids[i], SIGKILL);
        ::waitpid(pids[i], &outs[i].status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::string all;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(pipes[i], buf, sizeof buf)) > 0) all.append(buf, static_cast<size_t>(n));
    ::close(pipes[i]);
    const size_t nl = all.find('\n');
    if (nl != std::string::npos && nl + 1 < all.size()) {
      outs[i].seconds = std::atof(all.substr(0, nl).c_str());
      outs[i].ok = all[nl + 1] == 'O';
      outs[i].text = all.substr(nl + 2);
    } else {
      outs[i].text = "child produced no outcome";
    }
  }
  return outs;
}

void expect_clean_exit(const Outcome& o, const std::string& what) {
  EXPECT_TRUE(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0) << what << ": status " << o.status;
}

RendezvousSpec file_spec(const TempDir& dir) {
  return {RendezvousSpec::file, dir.path + "/nccl_id", "", 0};
}
RendezvousSpec tcp_spec() { return {RendezvousSpec::tcp, "", "127.0.0.1", free_port()}; }

std::vector<RankJob> world(const RendezvousSpec& spec, int n, double timeout_s,
                           const std::string& hash = "h1") {
  std::vector<RankJob> jobs;
  for (int r = 0; r < n; ++r) jobs.push_back({spec, r, n, hash, timeout_s});
  return jobs;
}

TEST(Rendezvous, FileAndTcpDeliverTheSameBlobToThreeRanks) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  auto jobs = world(file_spec(dir), 3, 5);
  auto tcp = world(tcp_spec(), 3, 5);
  jobs.insert(jobs.end(), tcp.begin(), tcp.end());
  const auto outs = run_processes(jobs);
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string what = (i < 3 ? "file rank " : "tcp rank ") + std::to_string(i % 3);
    expect_clean_exit(outs[i], what);
    EXPECT_TRUE(outs[i].ok) << what << ": " << outs[i].text;
    EXPECT_EQ(outs[i].text, hex(unique_id())) << what;
  }
}

TEST(Rendezvous, WorldOfOneReturnsTheBlobAtOnce) {
  const LaunchInfo single;
  EXPECT_EQ(exchange(tcp_spec(), single, unique_id(), "h", 1), unique_id());
}

TEST(Rendezvous, HashMismatchFailsOnThatRankAndOnRankZero) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  for (const RendezvousSpec& spec : {file_spec(dir), tcp_spec()}) {
    auto jobs = world(spec, 3, 5, "cases-abc");
    jobs[1].hash = "cases-xyz";
    const auto outs = run_processes(jobs);
    const std::string kind = spec.kind == RendezvousSpec::file ? "file: " : "tcp: ";
    for (const auto& o : outs) expect_clean_exit(o, kind);
    const std::string expected = "rank 1 runs a different case list or build than rank 0";
    for (int r : {0, 1}) {
      EXPECT_FALSE(outs[r].ok) << kind << "rank " << r;
      EXPECT_NE(outs[r].text.find(expected), std::string::npos)
          << kind << "rank " << r << ": " << outs[r].text;
      EXPECT_NE(outs[r].text.find("cases-abc"), std::string::npos) << kind << outs[r].text;
      EXPECT_NE(outs[r].text.find("cases-xyz"), std::string::npos) << kind << outs[r].text;
    }
    // Rank 2 matches rank 0, but learns that rank 0 failed, and why.
    EXPECT_FALSE(outs[2].ok) << kind;
    EXPECT_NE(outs[2].text.find("rank 0 failed: " + expected), std::string::npos)
        << kind << outs[2].text;
  }
}

TEST(Rendezvous, MissingRankMakesRankZeroFailWithinTheTimeout) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  const double timeout = 1.0;
  std::vector<RankJob> jobs;
  for (const RendezvousSpec& spec : {file_spec(dir), tcp_spec()}) {
    auto w = world(spec, 3, timeout);
    jobs.push_back(w[0]);  // rank 2 never starts
    jobs.push_back(w[1]);
  }
  const auto t0 = Clock::now();
  const auto outs = run_processes(jobs);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), timeout + 2.0);
  for (size_t i : {0, 2}) {
    const std::string kind = i == 0 ? "file" : "tcp";
    expect_clean_exit(outs[i], kind);
    EXPECT_FALSE(outs[i].ok) << kind;
    EXPECT_NE(outs[i].text.find("rendezvous: 2 of 3 ranks arrived within 1 s (missing ranks: 2)"),
              std::string::npos)
        << kind << ": " << outs[i].text;
    EXPECT_GE(outs[i].seconds, timeout * 0.9) << kind;
    EXPECT_LT(outs[i].seconds, timeout + 1.0) << kind;
    // Rank 1 came but cannot proceed: it fails too, no later than its own timeout.
    expect_clean_exit(outs[i + 1], kind + " rank 1");
    EXPECT_FALSE(outs[i + 1].ok) << kind << " rank 1";
    EXPECT_LT(outs[i + 1].seconds, timeout + 1.0) << kind << " rank 1: " << outs[i + 1].text;
  }
}

TEST(Rendezvous, MissingRankZeroMakesTheOthersFailWithinTheTimeout) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  const double timeout = 1.0;
  std::vector<RankJob> jobs;
  for (const RendezvousSpec& spec : {file_spec(dir), tcp_spec()}) {
    auto w = world(spec, 3, timeout);
    jobs.push_back(w[1]);  // rank 0 never starts
    jobs.push_back(w[2]);
  }
  const auto outs = run_processes(jobs);
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string what = (i < 2 ? "file rank " : "tcp rank ") + std::to_string(i % 2 + 1);
    expect_clean_exit(outs[i], what);
    EXPECT_FALSE(outs[i].ok) << what;
    EXPECT_NE(outs[i].text.find("rank 0"), std::string::npos) << what << ": " << outs[i].text;
    EXPECT_NE(outs[i].text.find("1 s"), std::string::npos) << what << ": " << outs[i].text;
    EXPECT_GE(outs[i].seconds, timeout * 0.9) << what;
    EXPECT_LT(outs[i].seconds, timeout + 1.0) << what;
  }
}

}  // namespace
}  // namespace shardaccum
