#pragma once
// One rank's cuBLAS state for --backward gemm (cuda_gemm.cpp): the handle, made on the rank's
// device and bound to the stream and workspace of the GEMMs it runs. Internal to the cuda backend.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/dtype.hpp"
#include "common/layout.hpp"

struct cublasContext;  // cuBLAS's handle type (cublasHandle_t), kept out of the rank's header

namespace shardaccum::cuda {

/// Fills a unit's GEMM operands (cuda_gemm_fill.cu): X (tokens x cols) at `x` and dY (tokens x
/// rows) at `dy`, column-major with leading dimension `tokens`, with values ±{1, 1.25, 1.5, 1.75}
/// such that token t + h repeats X's token t and negates dY's (h = tokens / 2; with odd tokens
/// the last dY row is zero). Every dYᵀ·X is then exactly 0 in fp32 (kMaxGemmTokens): the weight
/// gradient added into the gradient changes no bit of it.
void launch_gemm_operands(void* x, void* dy, DType t, uint64_t tokens, uint64_t cols, uint64_t rows,
                          cudaStream_t s);

/// c = a · b for n x n column-major matrices of `t` on the handle's stream (cuBLAS, fp32
/// accumulation; TF32 tensor cores for fp32 with `tf32`): the dense GEMM ceiling's operation.
void dense_gemm(cublasContext* h, DType t, bool tf32, int n, const void* a, const void* b, void* c);

/// What a workspace's X and dY hold: launch_gemm_operands' arguments at its last fill. A unit whose
/// operands would be filled alike reuses them. A real backward reads activations that are already
/// in memory; refilling them before every unit added two kernels per unit that no real backward
/// runs, and a reduction-stream copy at the same priority held the second of them back until it
/// ended (reports/h100-validation-probes-1207/, docs/PRESETS.md "The operand fill").
struct GemmOperandFill {
  const void* operands = nullptr;  // the workspace; nullptr: nothing filled
  DType t = DType::fp32;
  uint64_t tokens = 0, cols = 0, rows = 0;
  bool operator==(const GemmOperandFill&) const = default;
};

/// One unit's GEMM backward for one micro-batch on `s` (h bound to it): its operands filled in
/// `operands` (X, dY, dX at gemm_operands' offsets, elements of `t`) unless `filled` says they hold
/// this unit's already (then `filled` is updated), then per parameter of two or more dimensions
/// dX = dY·W and dW += dYᵀ·X on the weights at `grad` + the parameter's offset. The caller has
/// checked the shapes against cuBLAS's int dimensions, and resets `filled` when the workspace is
/// freed. Throws CudaError on a cuBLAS error. Used by a step's backward (CudaRank::gemm_backward)
/// and by the GEMM backward ceiling.
void issue_unit_gemms(cublasContext* h, const FlatParam& unit, uint64_t tokens, DType t, bool tf32,
                      void* grad, void* operands, GemmOperandFill& filled, cudaStream_t s);

/// The rank's cuBLAS handle, created at the first GEMM on the rank's device; not thread-safe (the
/// rank's thread only).
class GemmHandle {
 public:
  GemmHandle() = default;
  GemmHandle(const GemmHandle&) = delete;
  GemmHandle& operator=(const GemmHandle&) = delete;
  ~GemmHandle();

  /// The handle on `device` (the current device), bound to `stream` with cuBLAS's workspace
  /// [ws, ws + ws_bytes), created or rebound as needed. Throws CudaError on a cuBLAS error.
  cublasContext* bind(int device, cudaStream_t stream, void* ws, uint64_t ws_bytes);

 private:
  cublasContext* handle_ = nullptr;
  int device_ = -1;
  cudaStream_t stream_ = nullptr;
  void* ws_ = nullptr;
};

}  // namespace shardaccum::cuda
