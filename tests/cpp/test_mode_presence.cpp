// Mode tracking `presence` (strategies/mode/presence.cpp): where `shape` loses every sync but the
// last once the shard is offloaded, `presence` sees the host shard and adds; `copy` stays wrong
// whatever the mode says. Bytes and peaks against the model are EveryStrategy's
// (test_registry.cpp).
#include <gtest/gtest.h>

#include "test_support.hpp"

namespace shardaccum {
namespace {

testing::Outcome run(const char* offload, const char* mode, const char* schedule, int world) {
  auto be = make_host_backend({world, 1});
  const CasePlan plan{testing::make_layout({1009, 64, 1}),
                      parse_schedule(schedule, 4),
                      StrategySpec{"data-free", offload, mode, "end"},
                      parse_dtype_triple("fp32-fp32-fp32"),
                      GenMode::dyadic,
                      3,
                      "t"};
  return testing::run_two_steps(*be, plan);
}

TEST(ModePresence, SeesAnOffloadedShardThatShapeOverwrites) {
  for (int world : {1, 2, 3})
    for (const char* offload : {"gpu-add", "cpu-add"})
      for (const char* schedule : {"SSSS", "SnSS", "nSnS"}) {
        SCOPED_TRACE(std::string(offload) + " " + schedule + " world " + std::to_string(world));
        EXPECT_TRUE(run(offload, "presence", schedule, world).correct);
        EXPECT_FALSE(run(offload, "shape", schedule, world).correct);  // what presence fixes
      }
}

TEST(ModePresence, CopyStaysWrongAndOneSyncStaysRight) {
  EXPECT_FALSE(run("copy", "presence", "SSSS", 2).correct);  // copy ignores the mode's answer
  EXPECT_TRUE(run("copy", "presence", "nnnS", 2).correct);
  EXPECT_TRUE(run("none", "presence", "SSSS", 2).correct);
}

TEST(ModePresence, AddsOnTheSecondSyncSoGpuAddMovesTheSavedShardBack) {
  const auto presence = run("gpu-add", "presence", "SSSS", 2);
  const auto shape = run("gpu-add", "shape", "SSSS", 2);
  EXPECT_GT(presence.measured.h2d_bytes, 0u);  // three adds: H2D of the saved shard each time
  EXPECT_EQ(shape.measured.h2d_bytes, 0u);     // never adds: nothing comes back
  EXPECT_EQ(presence.measured.h2d_bytes, presence.model.h2d_bytes);
}

}  // namespace
}  // namespace shardaccum
