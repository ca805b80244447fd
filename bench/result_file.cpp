#include "bench/result_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "bench/cli.hpp"

namespace fs = std::filesystem;

namespace shardaccum {

namespace {

// What the signal handler removes; set only while the file is ours (async-signal-safe reads).
// The only namespace-scope mutable state of bench/: a signal handler can reach nothing but globals.
char g_tmp_path[4096] = {};
char g_lock_path[2][4096] = {};  // --benchmark_out's and --trace's
volatile sig_atomic_t g_tmp_set = 0, g_lock_set[2] = {0, 0};

void on_signal(int sig) {
  if (g_tmp_set) unlink(g_tmp_path);
  for (int i = 0; i < 2; ++i)
    if (g_lock_set[i])
      unlink(g_lock_path[i]);  // we hold its lock: no other run can be using this file
  signal(sig, SIG_DFL);
  raise(sig);
}

void set_path(char (&buf)[4096], volatile sig_atomic_t& flag, const std::string& path) {
  flag = 0;
  std::snprintf(buf, sizeof buf, "%s", path.c_str());
  flag = path.size() < sizeof buf ? 1 : 0;
}

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

/// write(2) until every byte is out; EINTR retried, a short write followed by the next call, so a
/// full disk or `ulimit -f` surfaces as ENOSPC / EFBIG.
void write_all(int fd, std::string_view bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(errno_text("writing " + path));
    if (n == 0) throw std::runtime_error("writing " + path + ": no byte written");
    done += static_cast<size_t>(n);
  }
}

std::string read_all(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(errno_text("reading back " + path));
  std::string s;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      errno = e;
      throw std::runtime_error(errno_text("reading back " + path));
    }
    if (n == 0) break;
    s.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return s;
}

std::string flag_or_env(const std::vector<std::string>& args, const std::string& flag,
                        const char* env, int* count) {
  std::string v;
  bool found = false;
  *count = 0;
  for (const auto& a : args)
    if (a.rfind(flag + "=", 0) == 0) {
      v = a.substr(flag.size() + 1);
      found = true;
      ++*count;
    }
  if (!found)
    if (const char* e = std::getenv(env))
      v = e;  // GB reads its flags' defaults from the environment
  return v;
}

bool digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Paths under /dev/ and /proc/ end a chain of links: /dev/stdout leads into the process's fds.
bool special(const std::string& p) { return p.rfind("/dev/", 0) == 0 || p.rfind("/proc/", 0) == 0; }

}  // namespace

std::string follow_links(const std::string& path) {
  std::error_code ec;
  std::string out = path;
  for (int hops = 0; hops < 40 && !special(out) && fs::is_symlink(out, ec); ++hops) {
    const auto target = fs::read_symlink(out, ec);
    out = (target.is_absolute() ? target : fs::path(out).parent_path() / target).string();
  }
  return out;
}

bool same_output_file(const std::string& a, const std::string& b) {
  // weakly_canonical alone leaves a relative path whose file does not exist yet relative
  // ("t.json" against "/tmp/t.json" for "./t.json", libstdc++ 12), and keeps a dangling link's
  // own name: make both absolute after following their links, then normalise.
  std::error_code ea, eb;
  const auto norm = [](const std::string& p, std::error_code& ec) {
    return fs::weakly_canonical(fs::absolute(follow_links(p), ec), ec);
  };
  const auto x = norm(a, ea), y = norm(b, eb);
  return !ea && !eb && x == y;
}

OutputPlan plan_benchmark_out(std::vector<std::string>& args, bool reporter) {
  OutputPlan plan;
  int n = 0;
  std::string out = flag_or_env(args, "--benchmark_out", "BENCHMARK_OUT", &n);
  if (n > 1) throw CliError("--benchmark_out is given more than once; give it once");
  if (n == 1 && out.empty()) throw CliError("--benchmark_out= needs a file name");
  int m = 0;
  const std::string fmt = flag_or_env(args, "--benchmark_out_format", "BENCHMARK_OUT_FORMAT", &m);
  try {
    plan.format = parse_report_format(fmt.empty() ? "json" : fmt, "--benchmark_out_format");
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  }
  int t = 0;
  const std::string tab =
      flag_or_env(args, "--benchmark_counters_tabular", "BENCHMARK_COUNTERS_TABULAR", &t);
  plan.tabular = tab == "true" || tab == "1" || tab == "yes";
  // GB opens --benchmark_out itself (and insists on it with a custom file reporter): give it
  // /dev/null, the suite writes the file. An empty value also overrides BENCHMARK_OUT.
  args.erase(
      std::remove_if(args.begin(), args.end(),
                     [](const std::string& a) { return a.rfind("--benchmark_out=", 0) == 0; }),
      args.end());
  if (!reporter) out.clear();  // only rank 0 writes --benchmark_out
  args.emplace_back(out.empty() ? "--benchmark_out=" : "--benchmark_out=/dev/null");
  if (out.empty()) return plan;
  try {
    // A link is followed (the rename replaces the file it names, not the link); a device or pipe
    // (/dev/stdout) is written in place, since it cannot be renamed over.
    std::error_code ec;
    out = follow_links(out);
    // A plain file there (a tmpfs such as /dev/shm), or none yet, takes the checked path below.
    const auto own = fs::symlink_status(out, ec);
    if (special(out) && fs::exists(own) && !fs::is_regular_file(own)) {
      plan.dest = out;
      plan.direct = true;
      return plan;
    }
    if (fs::exists(out, ec) && !fs::is_regular_file(out, ec) && !fs::is_directory(out, ec)) {
      plan.dest = out;
      plan.direct = true;
      return plan;
    }
    const auto dir = fs::path(out).parent_path();
    if (!dir.empty() && !fs::is_directory(dir))
      throw CliError("--benchmark_out: directory '" + dir.string() + "' does not exist");
    if (fs::is_directory(out) || out.back() == '/')
      throw CliError("--benchmark_out=" + out +
                     " is a directory; give a file name such as run.json");
    if (access(dir.empty() ? "." : dir.c_str(), W_OK) != 0)
      throw CliError("--benchmark_out: directory '" +
                     (dir.empty() ? std::string(".") : dir.string()) + "' is not writable");
  } catch (const fs::filesystem_error&
               e) {  // a path that cannot even be examined (permissions, a link loop)
    throw CliError(std::string("--benchmark_out: cannot use that path: ") + e.what());
  }
  plan.dest = out;
  return plan;
}

std::vector<std::string> model_input_files(const BenchOptions& o) {
  std::vector<std::string> dirs = o.config_dirs, files;
  dirs.emplace_back(SHARDACCUM_CONFIG_DIR);
  for (const auto& value : o.models) {
    size_t start = 0;
    while (start <= value.size()) {  // a flag value may list several models
      const size_t comma = std::min(value.find(',', start), value.size());
      const std::string spec = value.substr(start, comma - start);
      start = comma + 1;
      if (spec.empty() || spec.rfind("uniform:", 0) == 0) continue;
      // The same rule as load_layout (bench/model_layouts.hpp): a '/' or ".json" makes a path.
      if (spec.find('/') != std::string::npos ||
          (spec.size() >= 5 && spec.substr(spec.size() - 5) == ".json")) {
        files.push_back(spec);
        continue;
      }
      for (const auto& d : dirs) {
        std::error_code ec;
        if (fs::is_regular_file(fs::path(d) / (spec + ".json"), ec)) {
          files.push_back((fs::path(d) / (spec + ".json")).string());
          break;
        }
      }
    }
  }
  return files;
}

void refuse_overwriting_inputs(const std::string& flag, const std::string& output,
                               const std::vector<std::string>& inputs) {
  for (const auto& in : inputs) {
    std::error_code ec;
    if (fs::equivalent(output, in, ec) && !ec)
      throw CliError(
          flag + " names the --model file " + in +
          ": writing there would destroy the model it reads; give the output another name");
  }
}

void install_result_cleanup() {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN)
      continue;  // nohup, trap ''
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
  signal(SIGXFSZ, SIG_IGN);
}

ResultFile::ResultFile(std::string dest, std::string flag)
    : dest_(std::move(dest)), flag_(std::move(flag)), lock_path_(dest_ + ".lock") {
  for (;;) {
    lock_fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (lock_fd_ < 0)  // the flag's own path is the fix: name it, before any work (exit 2)
      throw CliError(flag_ + dest_ + ": " + errno_text("creating the lock file " + lock_path_) +
                     "; give a file in a folder this user can write");
    if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      const int e = errno;
      char buf[32] = {};
      const ssize_t n = pread(lock_fd_, buf, sizeof buf - 1, 0);
      ::close(lock_fd_);
      lock_fd_ = -1;
      std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
      while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
      if (e == EWOULDBLOCK)
        throw CliError(flag_ + dest_ + ": another shardaccum_bench (pid " +
                       (digits(pid) ? pid : "unknown") + ") is writing " + dest_ +
                       "; wait for it to finish or give another file name");
      errno = e;
      throw std::runtime_error(errno_text("locking " + lock_path_));
    }
    // The previous owner removes the lock file when it is done: retry when we locked a removed one.
    struct stat held {
    }, named{};
    if (fstat(lock_fd_, &held) == 0 && stat(lock_path_.c_str(), &named) == 0 &&
        held.st_ino == named.st_ino && held.st_dev == named.st_dev)
      break;
    ::close(lock_fd_);
  }
  slot_ = g_lock_set[0] ? 1 : 0;
  set_path(g_lock_path[slot_], g_lock_set[slot_], lock_path_);
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(lock_fd_, 0) != 0 ||
      pwrite(lock_fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    std::fprintf(stderr, "shardaccum_bench: note: could not record the pid in %s\n",
                 lock_path_.c_str());
  // Holding the lock, every DEST.tmp.<pid> is a dead run's: a live writer of DEST would hold it.
  const fs::path d = fs::path(dest_).parent_path();
  const std::string prefix = fs::path(dest_).filename().string() + ".tmp.";
  std::error_code ec;
  for (fs::directory_iterator it(d.empty() ? fs::path(".") : d, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) == 0 && digits(std::string_view(name).substr(prefix.size()))) {
      std::error_code rec;
      if (fs::remove(it->path(), rec)) stale_.push_back(it->path().string());
    }
  }
}

ResultFile::~ResultFile() {
  if (lock_fd_ < 0) return;
  g_lock_set[slot_] = 0;
  ::unlink(lock_path_.c_str());  // before the unlock: a waiter that opened it retries (see above)
  ::close(lock_fd_);
}

void ResultFile::commit(std::string_view bytes) {
  const std::string tmp = dest_ + ".tmp." + std::to_string(getpid());
  set_path(g_tmp_path, g_tmp_set, tmp);
  const auto fail = [&](const std::string& why) {
    g_tmp_set = 0;
    ::unlink(tmp.c_str());
    throw std::runtime_error(why + "; " + dest_ + " left as it was");
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) fail(errno_text("creating " + tmp));
  try {
    write_all(fd, bytes, tmp);
  } catch (const std::runtime_error& e) {
    ::close(fd);
    fail(e.what());
  }
  if (fsync(fd) != 0) {
    const std::string why = errno_text("flushing " + tmp);
    ::close(fd);
    fail(why);
  }
  if (::close(fd) != 0) fail(errno_text("closing " + tmp));
  std::string back;
  try {
    back = read_all(tmp);
  } catch (const std::runtime_error& e) {
    fail(e.what());
  }
  if (back != bytes) fail("what " + tmp + " holds differs from what was written");
  if (std::rename(tmp.c_str(), dest_.c_str()) != 0)
    fail(errno_text("moving " + tmp + " to " + dest_));
  g_tmp_set = 0;
  const fs::path d = fs::path(dest_).parent_path();
  if (const int dfd = ::open(d.empty() ? "." : d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      dfd >= 0) {
    fsync(dfd);  // the rename itself survives a crash
    ::close(dfd);
  }
}

void write_direct(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw std::runtime_error(errno_text("opening " + path));
  try {
    write_all(fd, bytes, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw std::runtime_error(errno_text("closing " + path));
}

void verify_result_text(ReportFormat format, const std::string& text) {
  if (format == ReportFormat::json && !nlohmann::json::accept(text))
    throw std::runtime_error(
        "the results are not valid JSON (a bug in bench/reporters.cpp: please report it)");
}

}  // namespace shardaccum
