#pragma once
// The ceilings a backend measured at start (docs/DESIGN.md §6), typed: what a phase's bytes per
// second are compared with. 0 where a backend measured nothing (the host backend, --ceilings off).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/dtype.hpp"
#include "common/layout.hpp"

namespace shardaccum {

/// One layout's GEMM backward alone (--backward gemm): one micro-batch of it, every unit's operand
/// fill and its two GEMMs per weight (cuda_gemm.cpp, the same calls as a step's), on an otherwise
/// idle GPU, the best of three means. Its rate is the compute ceiling of that layout's cases: its
/// GEMMs run at their own shapes' rate, which for small ones is below the dense n x n GEMM's.
struct GemmBackwardCeiling {
  std::string layout;  // Layout::name
  uint64_t tokens = 0;
  DType grad = DType::fp32;
  double ms = 0;     // one micro-batch's GEMM backward, ms
  double flops = 0;  // its FLOPs: gemm_flops summed over the units
};

/// What a GemmBackwardCeiling is measured for: a layout of the run's --backward gemm cases, their
/// tokens and gradient dtype.
struct GemmCeilingCase {
  std::shared_ptr<const Layout> layout;
  uint64_t tokens = 0;
  DType grad = DType::fp32;
};

/// One layout's synthetic backward alone: one micro-batch of the generator over every unit in
/// backward order (dyadic values in the gradient dtype, writing, as a unit's first micro-batch), on
/// an otherwise idle GPU, the best of three means. Its rate is the compute ceiling of that layout's
/// synthetic cases, as GemmBackwardCeiling's is of its gemm cases: each unit's kernel ends in a
/// partial wave, so on many small units the generator may run below its rate on one large buffer.
struct GenerateLayoutCeiling {
  std::string layout;  // Layout::name
  DType grad = DType::fp32;
  double ms = 0;          // one micro-batch's generator, ms
  uint64_t elements = 0;  // the elements it writes: every unit's numel
};

/// What a GenerateLayoutCeiling is measured for: a layout of the run's synthetic dyadic cases and
/// their gradient dtype.
struct GenerateCeilingCase {
  std::shared_ptr<const Layout> layout;
  DType grad = DType::fp32;
};

/// GB/s (1e9 bytes per second), per rank, the mean over ranks.
struct Ceilings {
  double h2d_gbps = 0;                   // pinned host -> device, one copy engine
  double d2h_gbps = 0;                   // device -> pinned host
  double bidir_gbps = 0;                 // H2D and D2H at once, their sum
  double device_copy_gbps = 0;           // device memory: bytes read + written per second
  double reduce_scatter_busbw_gbps = 0;  // NCCL reduce-scatter bus bandwidth (nccl-tests' busbw)
  double reduce_scatter_algbw_gbps = 0;  // and its algorithm bandwidth
  double host_add_gbps = 0;              // the CPU add's bytes read + written per second
  // The CPU add and pinned D2H copies at once, as cpu-add runs them: host memory's bytes per second
  // shared by both (the add's bytes read + written, plus the bytes the DMA wrote). 0: not measured.
  double host_memory_gbps = 0;
  // Of which the CPU add's own bytes per second in that measurement (the D2Hs inside it, about 4/5
  // of its time): the add's rate while D2Hs land, an upper figure (it also ran alone at its end).
  // 0: not measured.
  double host_add_during_d2h_gbps = 0;
  // Dense GEMM (cuBLAS, square), 1e12 FLOP/s, in the gradient dtypes of --backward gemm cases.
  double gemm_tflops_bf16 = 0;
  double gemm_tflops_fp32 = 0;  // TF32 tensor cores when the run has --tf32
  // The synthetic backward's generator kernel alone (dyadic values, fp32, writing): 1e9 elements
  // per second. It computes a hash per element, so it runs below the device copy ceiling.
  double generate_gelems = 0;
  // The generator (compute stream) and the add kernel (comm stream) at once, as a step without
  // offload runs its backward beside the reduce-scatter's adds: the sum of each one's time alone
  // over their time together, with the add's work sized to take as long as the generator's.
  // 1: they ran as if in series (each kernel fills the SMs); 2: each at its full rate beside the
  // other. 0: not measured.
  double sm_overlap = 0;
  /// Per layout of the run's --backward gemm cases (empty: not measured).
  std::vector<GemmBackwardCeiling> gemm_backward;
  /// The entry of `layout` at `tokens` rows in gradient dtype `grad`, or nullptr.
  const GemmBackwardCeiling* gemm_backward_of(const std::string& layout, uint64_t tokens,
                                              DType grad) const {
    for (const GemmBackwardCeiling& g : gemm_backward)
      if (g.layout == layout && g.tokens == tokens && g.grad == grad) return &g;
    return nullptr;
  }
  /// Per layout of the run's synthetic dyadic cases (empty: not measured).
  std::vector<GenerateLayoutCeiling> generate_layouts;
  /// The entry of `layout` in gradient dtype `grad`, or nullptr.
  const GenerateLayoutCeiling* generate_of(const std::string& layout, DType grad) const {
    for (const GenerateLayoutCeiling& g : generate_layouts)
      if (g.layout == layout && g.grad == grad) return &g;
    return nullptr;
  }
  bool measured() const { return h2d_gbps > 0 || device_copy_gbps > 0 || host_add_gbps > 0; }
};

}  // namespace shardaccum
