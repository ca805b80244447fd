#include "profiling/trace.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <tuple>

namespace shardaccum::trace {

const char* track::of(Stream s) {
  switch (s) {
  case Stream::compute: return kCompute;
  case Stream::comm: return kComm;
  case Stream::copy: return kCopy;
  case Stream::h2d: return kH2d;
  }
  return kCompute;
}

TraceRecorder::TraceRecorder() : origin_(Clock::now()) {}

double TraceRecorder::to_us(Clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t - origin_).count();
}

void TraceRecorder::add(TraceEvent e) {
  std::lock_guard<std::mutex> lock(mu_);
  if (events_.size() >= kMaxEvents) {  // about 1.6 KB each in memory: a bound, not a hang
    if (dropped_++ == 0)
      std::fprintf(stderr,
                   "shardaccum: --trace: %zu events recorded, later ones are dropped (use "
                   "--trace-steps 1 or fewer cases)\n",
                   kMaxEvents);
    return;
  }
  events_.push_back(std::move(e));
}

void TraceRecorder::add_complete(int pid, std::string_view track, std::string_view name,
                                 std::string_view category, Clock::time_point begin,
                                 Clock::time_point end, nlohmann::json args) {
  TraceEvent e;
  e.pid = pid;
  e.track = track;
  e.name = name;
  e.category = category;
  e.start_us = to_us(begin);
  e.duration_us = std::chrono::duration<double, std::micro>(end - begin).count();
  e.args = std::move(args);
  add(std::move(e));
}

void TraceRecorder::set_metadata(const std::string& key, nlohmann::json value) {
  std::lock_guard<std::mutex> lock(mu_);
  other_[key] = std::move(value);
}

size_t TraceRecorder::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

std::vector<TraceEvent> TraceRecorder::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

namespace {

// The suite's tracks first, in reading order; any other track (e.g. a GPU stream CUPTI saw that
// the backend did not name) after them, alphabetically.
int known_track_rank(const std::string& t) {
  static const char* const order[] = {track::kGpuStep, track::kPhases, track::kHost,
                                      track::kCompute, track::kComm,   track::kCopy};
  for (int i = 0; i < 6; ++i)
    if (t == order[i]) return i;
  return 6;
}

nlohmann::json metadata(const char* what, int pid, int tid, nlohmann::json args) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

}  // namespace

void TraceRecorder::write_chrome_trace(const std::string& path) const {
  std::vector<TraceEvent> evs;
  nlohmann::json other;
  {
    std::lock_guard<std::mutex> lock(mu_);
    evs = events_;
    other = other_;
    if (dropped_) other["dropped_events"] = dropped_;
    if (const uint64_t lost = lost_.load()) other["lost_events"] = lost;
  }

  // Thread ids: one per (rank, track), numbered from 1 in track order within each rank.
  std::map<int, std::vector<std::string>> tracks;  // pid -> distinct tracks
  for (const TraceEvent& e : evs) {
    auto& v = tracks[e.pid];
    if (std::find(v.begin(), v.end(), e.track) == v.end()) v.push_back(e.track);
  }
  std::map<std::pair<int, std::string>, int> tid;
  for (auto& [pid, v] : tracks) {
    std::sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) {
      return std::make_tuple(known_track_rank(a), a) < std::make_tuple(known_track_rank(b), b);
    });
    for (size_t i = 0; i < v.size(); ++i) tid[{pid, v[i]}] = static_cast<int>(i) + 1;
  }
  std::vector<std::pair<int, const TraceEvent*>> order;
  order.reserve(evs.size());
  for (const TraceEvent& e : evs) order.emplace_back(tid.at({e.pid, e.track}), &e);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    const TraceEvent &x = *a.second, &y = *b.second;
    return std::make_tuple(x.pid, a.first, x.start_us, -x.duration_us) <
           std::make_tuple(y.pid, b.first, y.start_us, -y.duration_us);
  });

  // As --benchmark_out (bench/result_file.cpp): a link is followed, so the rename replaces the file
  // it names, not the link; a device, pipe or a further link (/dev/stdout -> /proc/self/fd/1) is
  // written in place.
  namespace fs = std::filesystem;
  std::error_code lec;
  std::string out = path;
  if (fs::is_symlink(out, lec)) {
    const fs::path to = fs::read_symlink(out, lec);
    if (!lec) out = (to.is_absolute() ? to : fs::path(out).parent_path() / to).string();
  }
  const auto own = fs::symlink_status(out, lec);
  const bool direct = fs::exists(own) && !fs::is_regular_file(own);
  const fs::path target(out);
  const std::string tmp = direct ? out : out + ".tmp." + std::to_string(getpid());
  // `ulimit -f` must be an error (EFBIG), not a kill that leaves the temporary file: SIGXFSZ
  // ignored while writing, its disposition restored after.
  struct sigaction xfsz_ign {
  }, xfsz_old{};
  xfsz_ign.sa_handler = SIG_IGN;
  sigemptyset(&xfsz_ign.sa_mask);
  const bool xfsz_saved = sigaction(SIGXFSZ, &xfsz_ign, &xfsz_old) == 0;
  struct XfszRestore {
    bool saved;
    struct sigaction old;
    XfszRestore(bool s, const struct sigaction& o) : saved(s), old(o) {}
    XfszRestore(const XfszRestore&) = delete;
    XfszRestore& operator=(const XfszRestore&) = delete;
    ~XfszRestore() {
      if (saved) sigaction(SIGXFSZ, &old, nullptr);
    }
  } xfsz_restore{xfsz_saved, xfsz_old};
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) throw TraceError("cannot write trace file '" + tmp + "': " + std::strerror(errno));
  int err = 0;
  const auto put = [&](const std::string& s) {
    if (!err && std::fwrite(s.data(), 1, s.size(), f) != s.size()) err = errno ? errno : EIO;
  };
  bool first = true;
  const auto put_event = [&](const nlohmann::json& j) {
    put(first ? "\n" : ",\n");
    first = false;
    put(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  };
  put("{\"traceEvents\":[");
  for (const auto& [pid, v] : tracks) {
    put_event(metadata("process_name", pid, 0, {{"name", "rank " + std::to_string(pid)}}));
    put_event(metadata("process_sort_index", pid, 0, {{"sort_index", pid}}));
    for (const std::string& t : v) {
      const int id = tid.at({pid, t});
      put_event(metadata("thread_name", pid, id, {{"name", t}}));
      put_event(metadata("thread_sort_index", pid, id, {{"sort_index", id}}));
    }
  }
  for (const auto& [id, e] : order) {
    put_event({{"name", e->name},
               {"cat", e->category},
               {"ph", "X"},
               {"ts", e->start_us},
               {"dur", std::max(0.0, e->duration_us)},
               {"pid", e->pid},
               {"tid", id},
               {"args", e->args}});
  }
  put("\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":");
  put(other.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  put("}\n");
  if (std::fclose(f) != 0 && !err) err = errno ? errno : EIO;
  if (err) {
    if (!direct) std::remove(tmp.c_str());
    throw TraceError("writing trace file '" + tmp + "' failed: " + std::strerror(err));
  }
  if (direct) return;
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw TraceError("could not move trace file '" + tmp + "' to '" + path + "': " + ec.message());
  }
}

void ThreadTrace::complete(std::string_view track, std::string_view name, std::string_view category,
                           Clock::time_point begin, Clock::time_point end,
                           nlohmann::json args) const noexcept {
  if (!recorder) return;
  try {
    if (!args.is_object()) args = nlohmann::json::object();
    args["case"] = case_name;
    args["step"] = step;
    recorder->add_complete(rank, track, name, category, begin, end, std::move(args));
  } catch (...) {
    // Out of memory while tracing: the measurement goes on, and the trace counts the lost event.
    recorder->lost_event();
  }
}

ThreadTraceScope::ThreadTraceScope(TraceRecorder* recorder, int rank, std::string case_name,
                                   uint32_t step)
    : target_{recorder, rank, std::move(case_name), step}, previous_(detail::tls_current) {
  detail::tls_current = recorder ? &target_ : nullptr;
}

ThreadTraceScope::ThreadTraceScope(ThreadTrace target)
    : target_(std::move(target)), previous_(detail::tls_current) {
  detail::tls_current = target_.recorder ? &target_ : nullptr;
}

ThreadTraceScope::~ThreadTraceScope() { detail::tls_current = previous_; }

}  // namespace shardaccum::trace
