// `shardaccum_bench --describe-layout --model M` for every shipped config: exit 0 and the same
// document as layout_json of the loaded layout, so bench/real/ can build each of them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/layout_json.hpp"
#include "bench/model_layouts.hpp"
#include "bench_cli_support.hpp"

namespace shardaccum {
namespace {

TEST(DescribeLayoutAll, EveryShippedModelIsDescribed) {
  const std::vector<std::string> shipped = shipped_model_names({SHARDACCUM_CONFIG_DIR});
  ASSERT_GE(shipped.size(), 14u);  // bench/configs/: the families' models (README, --help)
  for (const std::string& name : shipped) {
    SCOPED_TRACE(name);
    const auto r = testing::run_bench_stdout("--describe-layout --model " + name);
    ASSERT_EQ(r.rc, 0);
    const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(r.out);
    const Layout l = load_layout(name, {SHARDACCUM_CONFIG_DIR});
    EXPECT_EQ(doc, layout_json(l, name));
    EXPECT_EQ(doc.at("family"), l.family);
    EXPECT_EQ(doc.at("total_numel").get<uint64_t>(), l.total_numel());
  }
}

TEST(DescribeLayoutAll, TheHelpListsEveryShippedModel) {
  const auto help = testing::run_bench_stdout("--help");
  ASSERT_EQ(help.rc, 0);
  for (const std::string& name : shipped_model_names({SHARDACCUM_CONFIG_DIR}))
    EXPECT_NE(help.out.find(name), std::string::npos) << name;
  EXPECT_NE(help.out.find("gpt_neox"), std::string::npos);  // and the model_types of config.json
}

}  // namespace
}  // namespace shardaccum
