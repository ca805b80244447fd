// The pipelined offloads' issue order on the host backend (docs/DESIGN.md §3): gpu-add-pipelined
// issues every chunk's H2D (on the h2d stream) before the first D2H (on the copy stream), and its
// h2d stream waits for nothing inside the sync (no chunk's H2D waits for a D2H), cpu-add-pipelined
// queues one host task after the chunks' D2Hs that adds each chunk once it has landed, every chunk
// landed by then in one add; each chunk at its own offset of the saved shard.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "faulty_backend.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

/// One call as issued: "h2d", "d2h", "task", "cpu-add", "wait" (a stream waiting for an event) or
/// "hwait" (the host waiting for one),
/// its stream, and the byte offset of the host operand from the first host operand of the step's
/// last sync.
struct Op {
  std::string what;
  Stream stream = Stream::compute;
  uintptr_t host = 0;  // the pinned operand's address
  uint64_t numel = 0;
};

class RecordingRank final : public testing::ForwardingRank {
 public:
  RecordingRank(RankBackend& inner, std::vector<Op>& ops) : ForwardingRank(inner), ops_(ops) {}
  void copy(Buffer& d, const Buffer& s, Stream st) override {
    const bool h2d = s.space() == MemSpace::pinned_host;
    ops_.push_back({h2d ? "h2d" : "d2h", st, addr(h2d ? s : d), s.numel()});
    in_.copy(d, s, st);
  }
  void add(Buffer& d, const Buffer& s, MemSpace sp, Stream st) override {
    if (sp == MemSpace::pinned_host) ops_.push_back({"cpu-add", st, addr(d), d.numel()});
    in_.add(d, s, sp, st);
  }
  void wait(Stream w, Event e) override {
    ops_.push_back({"wait", w, 0, 0});
    in_.wait(w, e);
  }
  void host_wait(Event e) override {
    ops_.push_back({"hwait", Stream::copy, 0, 0});
    in_.host_wait(e);
  }
  // `landed`: what host_ready answers (the host backend's own answer is always true).
  bool host_ready(Event e) override { return landed_ && in_.host_ready(e); }
  void set_landed(bool landed) { landed_ = landed; }
  void host_task(Event e, std::function<void()> t) override {
    ops_.push_back({"task", Stream::copy, 0, 0});
    in_.host_task(e, std::move(t));
  }
  void begin_step() override {
    ops_.clear();  // the last step's calls only
    in_.begin_step();
  }

 private:
  static uintptr_t addr(const Buffer& b) { return reinterpret_cast<uintptr_t>(b.data()); }
  std::vector<Op>& ops_;
  bool landed_ = true;
};

/// The calls of the last step of `offload` on one unit whose shard is 3.5 chunks of 64 fp32
/// elements (224), schedule SS at world 1: the second S is the pipelined add.
/// `landed`: whether host_ready says a later chunk has landed already.
std::vector<Op> last_sync_of(const char* offload, bool landed = true) {
  std::vector<Op> ops;
  testing::WrappedBackend be(1, [&](RankBackend& r) {
    auto rank = std::make_unique<RecordingRank>(r, ops);
    rank->set_landed(landed);
    return rank;
  });
  CasePlan plan{testing::make_layout({224}),
                parse_schedule("SS", 2),
                {"data-free", offload, "flag"},
                parse_dtype_triple("fp32-fp32-fp32"),
                GenMode::dyadic,
                5,
                "t"};
  plan.chunk_bytes = uint64_t{64} * 4;
  EXPECT_TRUE(testing::run_two_steps(be, plan).correct);
  // The first S is one whole D2H into the saved shard; what follows is the pipelined add.
  EXPECT_FALSE(ops.empty());
  if (ops.empty()) return ops;
  const auto first =
      std::find_if(ops.begin(), ops.end(), [](const Op& o) { return o.what != "wait"; });
  EXPECT_NE(first, ops.end());
  if (first == ops.end()) return {};
  EXPECT_EQ(first->what, "d2h");
  EXPECT_EQ(first->numel, 224u);
  const uintptr_t saved = first->host;
  std::vector<Op> rest(first + 1, ops.end());
  while (!rest.empty() && rest.back().what == "wait") rest.pop_back();
  // The step ends with finalize's division, queued as a host task of its own.
  EXPECT_FALSE(rest.empty());
  if (rest.empty()) return rest;
  EXPECT_EQ(rest.back().what, "task");
  rest.pop_back();
  for (Op& o : rest)
    if (o.host) o.host -= saved;
  return rest;
}

std::string sequence(const std::vector<Op>& ops) {
  std::string s;
  for (const Op& o : ops) s += (s.empty() ? "" : " ") + o.what;
  return s;
}

TEST(PipelinedOrder, GpuAddIssuesEveryH2dBeforeAnyD2hAndItsH2dsWaitForNoD2h) {
  std::vector<Op> ops = last_sync_of("gpu-add-pipelined");
  // The waits inside the sync: none on the h2d stream (the one for the unit's previous D2H comes
  // before the sync's first copy, at its start).
  const auto first_copy = std::find_if(
      ops.begin(), ops.end(), [](const Op& o) { return o.what == "h2d" || o.what == "d2h"; });
  for (auto it = first_copy; it != ops.end(); ++it)
    EXPECT_FALSE(it->what == "wait" && it->stream == Stream::h2d) << "a chunk's H2D waits";
  ops.erase(std::remove_if(ops.begin(), ops.end(), [](const Op& o) { return o.what == "wait"; }),
            ops.end());
  EXPECT_EQ(sequence(ops), "h2d h2d h2d h2d d2h d2h d2h d2h");
  std::vector<uintptr_t> h2d_at, d2h_at;
  std::vector<uint64_t> h2d_len;
  for (const Op& o : ops) {
    EXPECT_EQ(o.stream, o.what == "h2d" ? Stream::h2d : Stream::copy) << o.what;
    if (o.what != "task") (o.what == "h2d" ? h2d_at : d2h_at).push_back(o.host);
    if (o.what == "h2d") h2d_len.push_back(o.numel);
  }
  // Chunk i's H2D and D2H at 256 * i bytes of the saved shard; the last chunk is the 32 left.
  EXPECT_EQ(h2d_at, (std::vector<uintptr_t>{0, 256, 512, 768}));
  EXPECT_EQ(d2h_at, h2d_at);
  EXPECT_EQ(h2d_len, (std::vector<uint64_t>{64, 64, 64, 32}));
}

TEST(PipelinedOrder, CpuAddQueuesOneTaskThatAddsEachChunkOnceItLanded) {
  std::vector<Op> ops = last_sync_of("cpu-add-pipelined", false);
  ops.erase(std::remove_if(ops.begin(), ops.end(), [](const Op& o) { return o.what == "wait"; }),
            ops.end());
  // The host backend runs a task at once: its waits and CPU adds show right after it is queued.
  EXPECT_EQ(sequence(ops),
            "d2h d2h d2h d2h task hwait cpu-add hwait cpu-add hwait cpu-add hwait cpu-add");
  std::vector<uintptr_t> d2h_at, add_at;
  std::vector<uint64_t> d2h_len, add_len;
  for (const Op& o : ops) {
    if (o.what == "d2h") {
      d2h_at.push_back(o.host);
      d2h_len.push_back(o.numel);
    }
    if (o.what == "cpu-add") {
      add_at.push_back(o.host);
      add_len.push_back(o.numel);
    }
  }
  // The D2Hs land in the staging (one buffer of the shard), the adds go into the saved shard:
  // both at 256 * i bytes of their own buffer.
  EXPECT_EQ(add_at, (std::vector<uintptr_t>{0, 256, 512, 768}));
  EXPECT_EQ(add_len, (std::vector<uint64_t>{64, 64, 64, 32}));
  EXPECT_EQ(d2h_len, add_len);
  for (size_t i = 1; i < d2h_at.size(); ++i) EXPECT_EQ(d2h_at[i] - d2h_at[0], 256 * i);
}

// Chunks already landed when the task reaches them go into one add: here all four, after one wait
// for the first, over the whole shard.
TEST(PipelinedOrder, CpuAddAddsEveryLandedChunkInOneAdd) {
  std::vector<Op> ops = last_sync_of("cpu-add-pipelined", true);
  ops.erase(std::remove_if(ops.begin(), ops.end(), [](const Op& o) { return o.what == "wait"; }),
            ops.end());
  EXPECT_EQ(sequence(ops), "d2h d2h d2h d2h task hwait cpu-add");
  const auto add =
      std::find_if(ops.begin(), ops.end(), [](const Op& o) { return o.what == "cpu-add"; });
  ASSERT_NE(add, ops.end());
  EXPECT_EQ(add->host, 0u);
  EXPECT_EQ(add->numel, 224u);
}

}  // namespace
}  // namespace shardaccum
