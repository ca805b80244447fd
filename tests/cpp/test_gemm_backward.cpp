// --backward gemm on the host (issue 15, Deliver 3): the workspace and FLOPs on hand-computed
// figures, the memory model's constant term, the case name, the counters, and the host backend's
// refusal, both as a flag error of the binary and as a BackendError of a direct call.
#include <gtest/gtest.h>

#include <string>

#include "bench/case_matrix.hpp"
#include "bench/gemm_counters.hpp"
#include "bench/model_layouts.hpp"
#include "bench_cli_support.hpp"
#include "strategies/backend/host_backend.hpp"
#include "strategies/gemm_workspace.hpp"
#include "strategies/model.hpp"
#include "strategies/preset/preset.hpp"

namespace shardaccum {
namespace {

constexpr uint64_t kCublasFp32 = (32ull << 20) / 4;  // 8388608 elements
constexpr uint64_t kCublasBf16 = (32ull << 20) / 2;  // 16777216 elements

// gpt2 (--describe-layout): the embedding unit holds wte [50257, 768] and wpe [1024, 768]; a
// layer's widest are mlp.c_fc [768, 3072] and mlp.c_proj [3072, 768]. At T = 1024 the embedding
// unit needs X and dX of 1024 x 768 and dY of 1024 x 50257:
// 2 * 786432 + 51463168 = 53036032 elements; a layer 3 * 1024 * 3072 = 9437184.
TEST(GemmWorkspace, Gpt2ByHand) {
  const Layout l = load_layout("gpt2", {SHARDACCUM_CONFIG_DIR});
  EXPECT_EQ(gemm_workspace_numel(l, 1024, DType::fp32), 53036032u + kCublasFp32);
  EXPECT_EQ(gemm_workspace_numel(l, 1024, DType::bf16), 53036032u + kCublasBf16);
  const GemmOperands layer = gemm_operands(l.units[1], 1024);
  EXPECT_EQ(layer.dy, 1024u * 3072);
  EXPECT_EQ(layer.dx, 2u * 1024 * 3072);
  EXPECT_EQ(layer.end, 9437184u);
  // A layer's GEMM FLOPs: 4 * T * (768*2304 + 768*768 + 768*3072 + 3072*768) = 4 * 1024 * 7077888.
  EXPECT_DOUBLE_EQ(gemm_flops(l.units[1], 1024), 4.0 * 1024 * 7077888);
}

// uniform:2x64M: each unit one weight [8192, 8192]; 3 * 1024 * 8192 = 25165824.
TEST(GemmWorkspace, Uniform2x64MByHand) {
  const Layout l = load_layout("uniform:2x64M", {});
  EXPECT_EQ(gemm_workspace_numel(l, 1024, DType::fp32), 25165824u + kCublasFp32);
  EXPECT_EQ(gemm_workspace_numel(l, 1024, DType::bf16), 25165824u + kCublasBf16);
  EXPECT_DOUBLE_EQ(gemm_flops(l.units[0], 1024), 4.0 * 1024 * 8192 * 8192);
}

// Shapes that do not fall on the alignment: [5, 7] at T = 3 gives X 21, dY 15, dX 21 elements,
// each rounded up to 128; [2, 3, 4] is 2 x 12; a 1-D parameter gets no GEMM and no FLOPs.
TEST(GemmWorkspace, OddShapesAlignEachOperandAndSkipOneDimensional) {
  Layout l{"hand", {}, "list"};
  l.units.push_back({"u0", 35 + 4, {{"w", {5, 7}, 0}, {"b", {4}, 35}}});
  l.units.push_back({"u1", 24, {{"t", {2, 3, 4}, 0}}});
  l.units.push_back({"u2", 9, {{"norm", {9}, 0}}});
  GemmShape s;
  ASSERT_TRUE(gemm_shape(l.units[1].params[0], s));
  EXPECT_EQ(s.rows, 2u);
  EXPECT_EQ(s.cols, 12u);
  EXPECT_FALSE(gemm_shape(l.units[2].params[0], s));
  const GemmOperands o = gemm_operands(l.units[0], 3);
  EXPECT_EQ(o.dy, 128u);
  EXPECT_EQ(o.dx, 256u);
  EXPECT_EQ(o.end, 384u);
  EXPECT_EQ(gemm_operands(l.units[2], 3).end, 0u);
  EXPECT_DOUBLE_EQ(gemm_flops(l.units[0], 3), 4.0 * 3 * 35);
  EXPECT_DOUBLE_EQ(gemm_flops(l.units[2], 3), 0.0);
  EXPECT_EQ(gemm_workspace_numel(l, 3, DType::fp32), 384u + kCublasFp32);
  EXPECT_EQ(gemm_cublas_offset(gemm_workspace_numel(l, 3, DType::bf16), DType::bf16), 384u);
}

CaseSpec spec_for(const char* model, Backward b) {
  CaseSpec c;
  c.layout = std::make_shared<const Layout>(load_layout(model, {SHARDACCUM_CONFIG_DIR}));
  c.world_size = 2;
  c.schedule = parse_schedule("nnnS", 4);
  c.strategy = preset("zero3");
  c.dtypes = parse_dtype_triple("bf16-bf16-fp32");
  c.backward = b;
  c.tokens = b == Backward::gemm ? 512 : 0;
  return c;
}

// The workspace is a constant device term: the peak grows by exactly its bytes, nothing else moves.
TEST(GemmWorkspace, ModelAddsTheWorkspaceToThePeakOnly) {
  const CaseSpec syn = spec_for("gpt2", Backward::synthetic),
                 gemm = spec_for("gpt2", Backward::gemm);
  const Prediction a = predict(syn.plan(), 2), b = predict(gemm.plan(), 2);
  EXPECT_EQ(b.peak_device_bytes,
            a.peak_device_bytes + gemm_workspace_numel(*gemm.layout, 512, DType::bf16) * 2);
  EXPECT_EQ(b.peak_pinned_bytes, a.peak_pinned_bytes);
  EXPECT_EQ(b.nccl_input_bytes, a.nccl_input_bytes);
  EXPECT_EQ(b.h2d_bytes, a.h2d_bytes);
}

TEST(GemmCase, NameGetsTheSegmentOnlyWithGemm) {
  const CaseSpec syn = spec_for("gpt2", Backward::synthetic),
                 gemm = spec_for("gpt2", Backward::gemm);
  EXPECT_EQ(gemm.name(), syn.name() + "/backward:gemm-T512");
  EXPECT_EQ(syn.name().find("backward"), std::string::npos);
  const CasePlan p = gemm.plan();
  EXPECT_EQ(p.backward, Backward::gemm);
  EXPECT_EQ(p.tokens, 512u);
  EXPECT_EQ(p.name, gemm.name());
  EXPECT_EQ(gemm_grad_dtypes({syn}), std::vector<DType>{});
  CaseSpec fp32 = gemm;
  fp32.dtypes = parse_dtype_triple("fp32-fp32-fp32");
  EXPECT_EQ(gemm_grad_dtypes({gemm, syn, fp32, gemm}),
            (std::vector<DType>{DType::fp32, DType::bf16}));
}

// The generator's own-shapes ceiling is asked for each (layout, gradient dtype) of the synthetic
// dyadic cases once, in their order; gemm cases and random values ask for none.
TEST(GemmCase, GeneratorCeilingsAreAskedForTheSyntheticDyadicLayouts) {
  const CaseSpec syn = spec_for("gpt2", Backward::synthetic),
                 gemm = spec_for("gpt2", Backward::gemm);
  CaseSpec fp32 = syn, other = syn, random = syn;
  fp32.dtypes = parse_dtype_triple("fp32-fp32-fp32");
  other.layout = std::make_shared<const Layout>(load_layout("uniform:2x1M", {}));
  random.gen = GenMode::random;
  random.layout = other.layout;
  random.dtypes = fp32.dtypes;
  const std::vector<GenerateCeilingCase> got =
      generate_ceiling_cases({gemm, syn, random, fp32, syn, other});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].layout->name, "gpt2");
  EXPECT_EQ(got[0].grad, DType::bf16);
  EXPECT_EQ(got[1].layout->name, "gpt2");
  EXPECT_EQ(got[1].grad, DType::fp32);
  EXPECT_EQ(got[2].layout->name, "uniform:2x1M");
  EXPECT_TRUE(generate_ceiling_cases({gemm, random}).empty());
}

// uniform:2x64M, T = 512, K = 4: 4 * 2 * 4 * 512 * 8192^2 = 1099511627776 FLOPs a step. Two steps
// of 100 ms backward each (200 ms summed): 10.99511627776 TFLOP/s; steps of 250 ms:
// 4 * 512 / 0.25 = 8192 tokens per second.
TEST(GemmCounters, BackwardTflopsAndTokensPerSecondByHand) {
  const CaseSpec gemm = spec_for("uniform:2x64M", Backward::gemm);
  const CasePlan p = gemm.plan();
  EXPECT_DOUBLE_EQ(backward_step_flops(p), 1099511627776.0);
  CaseTotals t(1);
  StepMetrics m;
  m.step_ms = 250;
  m.phase_ms[static_cast<int>(Phase::backward)] = 100;
  t.add(m, {m});
  t.add(m, {m});
  benchmark::UserCounters c;
  write_gemm_counters(c, t, p);
  ASSERT_TRUE(c.count("backward_tflops"));
  EXPECT_DOUBLE_EQ(c.at("backward_tflops").value, 10.99511627776);
  EXPECT_DOUBLE_EQ(c.at("tokens_per_s").value, 8192.0);
  benchmark::UserCounters none;
  write_gemm_counters(none, t, spec_for("uniform:2x64M", Backward::synthetic).plan());
  EXPECT_TRUE(none.empty());
}

TEST(GemmHostBackend, DirectCallIsABackendError) {
  auto be = make_host_backend({1, 1});
  const Layout l = load_layout("uniform:1x64K", {});
  be->run([&](RankBackend& r) {
    Buffer g = r.allocate(MemSpace::device, DType::fp32, 65536, Stream::compute);
    Buffer w = r.allocate(MemSpace::device, DType::fp32, gemm_workspace_numel(l, 8, DType::fp32),
                          Stream::compute);
    try {
      r.gemm_backward(g, l.units[0], 8, false, w, Stream::compute);
      ADD_FAILURE() << "the host backend ran a GEMM";
    } catch (const BackendError& e) {
      EXPECT_NE(std::string(e.what()).find("cuda backend"), std::string::npos) << e.what();
    }
  });
}

struct FlagRow {
  const char* args;
  const char* names;  // the flag the message must name
  const char* says;   // and what it must say
};

// Flag errors before any work: exit 2, the flag named, the fix said.
TEST(GemmCli, RefusedBeforeAnyWork) {
  const FlagRow rows[] = {
      {"--backend host --backward gemm", "--backward", "needs the cuda backend"},
      {"--backend auto --backward gemm --list", "--backward", "needs the cuda backend"},
      {"--backend host --backward gemm --tokens 0 --list", "--tokens", "1..65536"},
      {"--backend host --backward gemm --tokens abc --list", "--tokens", "1..65536"},
      {"--backend host --backward gemm --tokens 65537 --list", "--tokens", "1..65536"},
      {"--backend host --tokens 64 --list", "--tokens", "--backward gemm"},
      {"--backend host --tf32 --list", "--tf32", "--backward gemm"},
      {"--backend host --backward dense --list", "--backward", "synthetic or gemm"},
  };
  for (const FlagRow& r : rows) {
    const testing::CliResult res = testing::run_bench_cli("", r.args);
    EXPECT_EQ(res.rc, 2) << r.args << "\n" << res.err;
    EXPECT_NE(res.err.find(r.names), std::string::npos) << r.args << "\n" << res.err;
    EXPECT_NE(res.err.find(r.says), std::string::npos) << r.args << "\n" << res.err;
  }
  // The synthetic backward, named or not, still lists its cases with the names of today.
  EXPECT_EQ(testing::run_bench_cli("", "--backend host --backward synthetic --list").rc, 0);
}

}  // namespace
}  // namespace shardaccum
