// The default job of shardaccum_bench: on one GPU the single-GPU reference job
// (uniform:16x64M,gpt2-xl, 1 warm-up + 2 steps), llama2-7b on 2+ GPUs, the host's unchanged; the
// command line's --model, --warmup and --steps always win.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench/backend_select.hpp"
#include "bench/cli.hpp"
#include "bench/run_setup.hpp"
#include "cli_options_support.hpp"

namespace shardaccum {
namespace {

BackendChoice cuda_with(int gpus) {
  BackendChoice c;
  c.name = "cuda";
  c.max_world = c.default_world = gpus;
  return c;
}

TEST(DefaultJob, OneGpuIsTheReferenceJobAndTwoOrMoreLlama) {
  const DefaultJob one = default_job("cuda", 1);
  EXPECT_EQ(one.models, "uniform:16x64M,gpt2-xl");
  EXPECT_EQ(one.warmup, 1);
  EXPECT_EQ(one.steps, 2);
  for (int gpus : {2, 8}) {
    const DefaultJob many = default_job("cuda", gpus);
    EXPECT_EQ(many.models, "llama2-7b") << gpus;
    EXPECT_EQ(many.steps, 3) << gpus;
  }
  for (int world : {1, 2}) {
    const DefaultJob host = default_job("host", world);
    EXPECT_EQ(host.models, "uniform:8x1M") << world;
    EXPECT_EQ(host.warmup, 1);
    EXPECT_EQ(host.steps, 3);
  }
}

TEST(DefaultJob, AppliesOnlyToWhatTheCommandLineLeftOut) {
  BenchOptions o = testing::parsed({});
  BackendChoice c = cuda_with(1);
  apply_default_job(o, c);
  EXPECT_EQ(c.default_model, "uniform:16x64M,gpt2-xl");
  EXPECT_EQ(o.warmup, 1);
  EXPECT_EQ(o.steps, 2);
  const MatrixAxes a = resolve_axes(o, c.default_model, c.default_world, c.max_world);
  ASSERT_EQ(a.models.size(), 2u);
  EXPECT_EQ(a.models[0]->name, "uniform:16x64M");
  EXPECT_EQ(a.models[1]->name, "gpt2-xl");

  o = testing::parsed({"--steps", "5", "--warmup", "0"});
  c = cuda_with(1);
  apply_default_job(o, c);
  EXPECT_EQ(o.steps, 5);
  EXPECT_EQ(o.warmup, 0);

  o = testing::parsed({"--model", "gpt2"});  // the user's model: the usual step counts
  c = cuda_with(1);
  apply_default_job(o, c);
  EXPECT_EQ(o.steps, 3);

  o = testing::parsed({});
  c = cuda_with(4);
  apply_default_job(o, c);
  EXPECT_EQ(c.default_model, "llama2-7b");
  EXPECT_EQ(o.steps, 3);

  o = testing::parsed({});
  c = BackendChoice{};  // host
  c.name = "host";
  c.default_world = 1;
  apply_default_job(o, c);
  EXPECT_EQ(c.default_model, "uniform:8x1M");
  EXPECT_EQ(o.steps, 3);
}

}  // namespace
}  // namespace shardaccum

namespace shardaccum {
namespace {

TEST(DefaultJob, HelpSaysWhatTheOneGpuDefaultIs) {
  const std::string cmd = std::string("'") + SHARDACCUM_BENCH_EXE + "' --help 2>/dev/null";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0);
  EXPECT_NE(out.find(default_job("cuda", 1).models), std::string::npos) << out;
  EXPECT_NE(out.find("--steps 2"), std::string::npos);
  EXPECT_NE(out.find("llama2-7b on cuda with 2+ GPUs"), std::string::npos);
}

}  // namespace
}  // namespace shardaccum
