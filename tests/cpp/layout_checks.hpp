#pragma once
// Shared by the layout tests: a shipped config read as JSON, and the bench/real/ contract on every
// unit's parameters. Test-only (GoogleTest assertions inside).
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "common/layout.hpp"

namespace shardaccum::testing_layouts {

/// bench/configs/NAME.json parsed; a failed expectation (and a parse error) when it is missing.
inline nlohmann::json read_config(const std::string& name) {
  std::ifstream in(std::string(SHARDACCUM_CONFIG_DIR) + "/" + name + ".json");
  EXPECT_TRUE(in.good()) << name;
  return nlohmann::json::parse(in);
}

/// The contract of bench/real/: params at running offsets, shapes multiplying out to the unit's
/// numel, every dimension >= 1, names unique within the layout.
inline void expect_params_fill_units(const Layout& l) {
  SCOPED_TRACE(l.name);
  std::set<std::string> names;
  for (const FlatParam& u : l.units) {
    ASSERT_FALSE(u.params.empty()) << u.name;
    uint64_t offset = 0;
    for (const Param& p : u.params) {
      EXPECT_EQ(p.offset, offset) << p.name;
      ASSERT_FALSE(p.shape.empty()) << p.name;
      uint64_t n = 1;
      for (uint64_t d : p.shape) {
        EXPECT_GE(d, 1u) << p.name;
        n *= d;
      }
      EXPECT_EQ(p.numel(), n) << p.name;
      offset += n;
      EXPECT_TRUE(names.insert(p.name).second) << "repeated name " << p.name;
    }
    EXPECT_EQ(offset, u.numel) << u.name;
  }
}

}  // namespace shardaccum::testing_layouts
