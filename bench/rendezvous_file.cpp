// The file transport of the rendezvous (bench/rendezvous.hpp, --rendezvous file:PATH): rank 0
// publishes PATH, the others answer in PATH.rank<N> and read rank 0's verdict from PATH.done.
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "bench/rendezvous_transport.hpp"

namespace shardaccum::rendezvous {

namespace {

constexpr char kFileMagic[] = "shardaccum-rendezvous 1";

std::string to_hex(const std::vector<uint8_t>& b) {
  constexpr char d[] = "0123456789abcdef";
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
    throw std::runtime_error("rendezvous: cannot rename " + tmp + " to " + path + ": " +
                             os_error(err));
  }
}

std::string rank_file(const std::string& path, int rank) {
  return path + ".rank" + std::to_string(rank);
}
std::string done_file(const std::string& path) { return path + ".done"; }

std::vector<uint8_t> file_rank0(const Exchange& x, const std::vector<uint8_t>& blob) {
  const RendezvousSpec& spec = x.spec;
  const LaunchInfo& launch = x.launch;
  const std::string& hash = x.hash;
  const double timeout_s = x.timeout_s;
  const Clock::time_point deadline = x.deadline;
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

std::vector<uint8_t> file_rank_n(const Exchange& x) {
  const RendezvousSpec& spec = x.spec;
  const LaunchInfo& launch = x.launch;
  const std::string& hash = x.hash;
  const double timeout_s = x.timeout_s;
  const Clock::time_point deadline = x.deadline;
  std::string content;
  while (!read_whole(spec.path, content)) {
    if (Clock::now() >= deadline)
      throw std::runtime_error(
          "rendezvous: rank " + std::to_string(launch.rank) + " waited " + fmt_seconds(timeout_s) +
          " s for rank 0 to publish " + to_string(spec) +
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
      throw std::runtime_error("rendezvous: rank " + std::to_string(launch.rank) + " read " +
                               to_string(spec) + " but rank 0 gave no verdict (" +
                               done_file(spec.path) + ") within " + fmt_seconds(timeout_s) + " s");
    std::this_thread::sleep_for(kPoll);
  }
  if (verdict.rfind("ok\n", 0) != 0)
    throw std::runtime_error("rendezvous: rank " + std::to_string(launch.rank) +
                             ": rank 0 failed: " + verdict.substr(verdict.find('\n') + 1));
  return blob;
}

class FileTransport : public Transport {
 public:
  std::vector<uint8_t> publish(const Exchange& x, const std::vector<uint8_t>& blob) override {
    return file_rank0(x, blob);
  }
  std::vector<uint8_t> join(const Exchange& x) override { return file_rank_n(x); }
};

}  // namespace

std::unique_ptr<Transport> make_file_transport() { return std::make_unique<FileTransport>(); }

}  // namespace shardaccum::rendezvous
