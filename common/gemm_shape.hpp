#pragma once
// The GEMM backward's shapes (docs/DESIGN.md §2, --backward gemm): which parameters get a GEMM, the
// FLOPs of a unit, and where its operands lie in the workspace (strategies/gemm_workspace.hpp sizes
// it; the cuda backend runs the GEMMs).
#include <cstdint>

#include "common/dtype.hpp"
#include "common/layout.hpp"

namespace shardaccum {

/// The most token rows --tokens takes: with operands of at most 3 significant bits every sum of T
/// products stays an exact fp32 integer multiple of 1/16 (launch_gemm_operands, cuda_gemm.hpp).
inline constexpr uint64_t kMaxGemmTokens = 65536;
/// cuBLAS's own workspace at the tail of the GEMM workspace (cublasSetWorkspace), so that cuBLAS
/// allocates nothing itself: 32 MiB, what NVIDIA recommends for Hopper.
inline constexpr uint64_t kCublasWorkspaceBytes = 32ull << 20;
/// Each operand (X, dY, dX) starts on a multiple of this many elements (256 bytes or more), the
/// alignment cuBLAS's tensor-core kernels want.
inline constexpr uint64_t kGemmOperandAlign = 128;

/// A parameter as a weight matrix: shape [d0, d1, ...] is rows = d0 by cols = d1 * ... .
struct GemmShape {
  uint64_t rows = 0;
  uint64_t cols = 0;
};

/// Where one unit's operands lie in the workspace, in elements of the gradient dtype, sized for the
/// unit's widest parameters (rows_max, cols_max over those with a GEMM): X (T x cols_max) at 0,
/// dY (T x rows_max) at `dy`, dX (T x cols_max) at `dx`, `end` the first element after dX. Every
/// parameter of the unit uses the same X and dY, column-major with leading dimension T. Each
/// offset is a multiple of kGemmOperandAlign; all 0 for a unit without a GEMM.
struct GemmOperands {
  uint64_t dy = 0;
  uint64_t dx = 0;
  uint64_t end = 0;
};

/// True and the shape for a parameter of two or more dimensions; false for a 1-D one (a bias, a
/// norm's weight: no GEMM).
bool gemm_shape(const Param& p, GemmShape& out);

/// The operand offsets of `unit` with `tokens` rows (X, dY, dX back to back, each rounded up to
/// kGemmOperandAlign elements).
GemmOperands gemm_operands(const FlatParam& unit, uint64_t tokens);

/// The FLOPs of one unit's GEMM backward for one micro-batch: 4 * T * numel summed over the
/// parameters that get a GEMM (2*T*numel for dX = dY·W and as many for dW = dYᵀ·X).
double gemm_flops(const FlatParam& unit, uint64_t tokens);

/// The element at which cuBLAS's workspace starts in a workspace of `numel` elements of `dtype`.
constexpr uint64_t gemm_cublas_offset(uint64_t numel, DType dtype) {
  return numel - kCublasWorkspaceBytes / dtype_bytes(dtype);
}

}  // namespace shardaccum
