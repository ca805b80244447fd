// --device-add-grid (CasePlan::device_add_grid, strategies/backend/device_add_grid.hpp): auto gives
// the real systems' presets PyTorch's full-grid add and every other strategy (`ideal` too) the
// suite's two blocks per SM; a named value overrides it and names the case; a bad value is refused
// with the flag's name; and every device add of a case runs under that case's grid, set by the
// step driver before its first add, whatever the case before it set.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bench/cli.hpp"
#include "cli_options_support.hpp"
#include "faulty_backend.hpp"
#include "forwarding_rank.hpp"
#include "strategies/preset/preset.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

using testing::cases_of;
using testing::make_layout;
using testing::run_two_steps;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(DeviceAddGrid, AutoIsTorchForTheRealSystemsPresetsOnly) {
  int real = 0;
  for (const PresetInfo& p : PresetRegistry::get().entries()) {
    const auto cases = cases_of({"--preset", p.name});
    ASSERT_FALSE(cases.empty()) << p.name;
    const DeviceAddGrid want = p.name == "ideal" ? DeviceAddGrid::two_per_sm : DeviceAddGrid::torch;
    real += want == DeviceAddGrid::torch;
    for (const CaseSpec& c : cases) {
      EXPECT_EQ(c.plan().device_add_grid, want) << c.name();
      EXPECT_EQ(c.name().find("device-add-grid"), std::string::npos) << c.name();
    }
  }
  EXPECT_GE(real, 4);  // fsdp1, fsdp2, fairscale, zero3
  // A preset's combination given axis by axis is that system (PresetRegistry::of), whatever its
  // copy-in; the same axes with another offload are not a preset: the suite's add.
  for (const CaseSpec& c :
       cases_of({"--binding", "data-free", "--offload", "cpu-add-pageable", "--mode", "flag",
                 "--division", "collective", "--copy-in", "none"}))
    EXPECT_EQ(c.plan().device_add_grid, DeviceAddGrid::torch) << c.name();
  for (const CaseSpec& c : cases_of({"--binding", "data-free", "--offload", "none,gpu-add",
                                     "--mode", "flag", "--division", "collective"}))
    EXPECT_EQ(c.plan().device_add_grid, DeviceAddGrid::two_per_sm) << c.name();
}

TEST(DeviceAddGrid, ANamedValueOverridesAutoAndNamesTheCase) {
  const auto ideal_torch = cases_of({"--preset", "ideal", "--device-add-grid", "torch"});
  ASSERT_FALSE(ideal_torch.empty());
  for (const CaseSpec& c : ideal_torch) {
    EXPECT_EQ(c.plan().device_add_grid, DeviceAddGrid::torch) << c.name();
    EXPECT_TRUE(ends_with(c.name(), "/device-add-grid:torch")) << c.name();
  }
  const auto fsdp2_two = cases_of({"--preset", "fsdp2", "--device-add-grid", "two-per-sm"});
  ASSERT_FALSE(fsdp2_two.empty());
  for (const CaseSpec& c : fsdp2_two) {
    EXPECT_EQ(c.plan().device_add_grid, DeviceAddGrid::two_per_sm) << c.name();
    EXPECT_TRUE(ends_with(c.name(), "/device-add-grid:two-per-sm")) << c.name();
  }
  // auto spelled out is the default: the names stay as they were.
  for (const CaseSpec& c : cases_of({"--preset", "fsdp2", "--device-add-grid", "auto"}))
    EXPECT_EQ(c.name().find("device-add-grid"), std::string::npos) << c.name();
}

TEST(DeviceAddGrid, ABadValueIsRefusedNamingTheFlag) {
  for (const char* bad : {"full", "", "TORCH", "torch,two-per-sm"}) {
    std::string m;
    try {
      cases_of({"--device-add-grid", bad});
    } catch (const CliError& e) {
      m = e.what();
    }
    EXPECT_NE(m.find("--device-add-grid"), std::string::npos) << "'" << bad << "': " << m;
    // An empty value gets the command line's own "give one" error; the others list the values.
    if (*bad) {
      EXPECT_NE(m.find("two-per-sm"), std::string::npos) << "'" << bad << "': " << m;
    }
  }
}

/// The grids in force at the device adds of every rank (rank threads append under the lock).
struct Seen {
  std::mutex mu;
  std::vector<DeviceAddGrid> adds;
};

/// Records the grid in force at every device add.
class GridRecordingRank final : public testing::ForwardingRank {
 public:
  GridRecordingRank(RankBackend& inner, Seen& seen) : ForwardingRank(inner), seen_(seen) {}
  void set_device_add_grid(DeviceAddGrid g) override {
    grid_ = g;
    set_ = true;
    in_.set_device_add_grid(g);
  }
  void add(Buffer& d, const Buffer& s, MemSpace sp, Stream st) override {
    EXPECT_TRUE(set_) << "a device add before the case set its grid";
    if (sp == MemSpace::device) {
      const std::lock_guard<std::mutex> l(seen_.mu);
      seen_.adds.push_back(grid_);
    }
    in_.add(d, s, sp, st);
  }

 private:
  Seen& seen_;
  // What the rank was left with by a case before: the opposite of the next case's, so a driver
  // that did not set it would be seen.
  DeviceAddGrid grid_ = DeviceAddGrid::torch;
  bool set_ = false;
};

TEST(DeviceAddGrid, EveryDeviceAddOfACaseRunsUnderItsGrid) {
  for (const int world : {1, 2, 3}) {
    Seen seen;
    testing::WrappedBackend be(
        world, [&](RankBackend& r) { return std::make_unique<GridRecordingRank>(r, seen); });
    // Offload none, SnSS, autograd's accumulation: device adds on the comm stream (the later
    // syncs' `+=` into the saved shard) and on the compute stream (the fresh gradient after n).
    CasePlan plan{make_layout({40, 1009}),
                  parse_schedule("SnSS", 4),
                  {"data-free", "none", "flag", "collective", std::nullopt, "chunk-cat"},
                  parse_dtype_triple("fp32-fp32-fp32"),
                  GenMode::dyadic,
                  5,
                  "t"};
    plan.autograd_accumulation = true;
    for (const DeviceAddGrid g :
         {DeviceAddGrid::two_per_sm, DeviceAddGrid::torch, DeviceAddGrid::two_per_sm}) {
      SCOPED_TRACE(std::string(device_add_grid_name(g)) + " world " + std::to_string(world));
      seen.adds.clear();
      plan.device_add_grid = g;
      EXPECT_TRUE(run_two_steps(be, plan).correct);
      ASSERT_FALSE(seen.adds.empty());
      for (const DeviceAddGrid s : seen.adds) EXPECT_EQ(s, g);
    }
  }
}

}  // namespace
}  // namespace shardaccum
