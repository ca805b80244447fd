// The GEMM backward of the cuda backend (--backward gemm, docs/DESIGN.md §2): per unit, its
// operands filled where the unit before left others, then for each parameter of two or more
// dimensions dX = dY·W and dW = dYᵀ·X on cuBLAS, in the gradient's dtype, issued on the compute
// stream like generate.
#include <cublas_v2.h>

#include <algorithm>
#include <climits>
#include <string>

#include "common/errors.hpp"
#include "common/gemm_shape.hpp"
#include "strategies/backend/cuda_gemm.hpp"
#include "strategies/backend/cuda_rank.hpp"
#include "strategies/backend/cuda_util.hpp"

namespace shardaccum::cuda {

namespace {

void check(cublasStatus_t st, const char* call) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw CudaError(std::string(call) + " failed: " + cublasGetStatusName(st) + " (" +
                    cublasGetStatusString(st) + ")");
}

cudaDataType_t cuda_type(DType t) { return t == DType::fp32 ? CUDA_R_32F : CUDA_R_16BF; }

cublasComputeType_t compute_type(DType t, bool tf32) {
  return t == DType::fp32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

}  // namespace

void dense_gemm(cublasContext* h, DType t, bool tf32, int n, const void* a, const void* b,
                void* c) {
  const float one = 1, zero = 0;
  const cudaDataType_t ct = cuda_type(t);
  check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, ct, n, b, ct, n, &zero, c, ct,
                     n, compute_type(t, tf32), CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx (GEMM ceiling)");
}

void issue_unit_gemms(cublasContext* h, const FlatParam& unit, uint64_t tokens, DType t, bool tf32,
                      void* grad, void* operands, GemmOperandFill& filled, cudaStream_t s) {
  const GemmOperands ops = gemm_operands(unit, tokens);
  if (ops.end == 0) return;  // only 1-D parameters: no GEMM
  GemmShape g;
  uint64_t rows_max = 0, cols_max = 0;
  for (const Param& p : unit.params)
    if (gemm_shape(p, g)) {
      rows_max = std::max(rows_max, g.rows);
      cols_max = std::max(cols_max, g.cols);
    }
  auto* base = static_cast<char*>(operands);
  const size_t eb = dtype_bytes(t);
  void* x = base;
  void* dy = base + ops.dy * eb;
  void* dx = base + ops.dx * eb;
  const cudaDataType_t ct = cuda_type(t);
  const cublasComputeType_t compute = compute_type(t, tf32);
  const float one = 1, zero = 0;
  const int T = static_cast<int>(tokens);
  const GemmOperandFill fill{operands, t, tokens, cols_max, rows_max};
  if (!(fill == filled)) {
    launch_gemm_operands(x, dy, t, tokens, cols_max, rows_max, s);
    filled = fill;
  }
  for (const Param& p : unit.params) {
    if (!gemm_shape(p, g)) continue;
    const int rows = static_cast<int>(g.rows), cols = static_cast<int>(g.cols);
    void* w = static_cast<char*>(grad) + p.offset * eb;  // row-major [rows, cols]
    // Column-major: W is Wᵀ (cols x rows, ld cols). dX (T x cols) = dY (T x rows) · W.
    check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, T, cols, rows, &one, dy, ct, T, w, ct, cols,
                       &zero, dx, ct, T, compute, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx (data gradient)");
    // dWᵀ (cols x rows, ld cols) += Xᵀ (cols x T) · dY (T x rows): beta 1, as a gradient is
    // accumulated; the product is exactly zero (launch_gemm_operands), the generator's values stay.
    check(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, cols, rows, T, &one, x, ct, T, dy, ct, T, &one,
                       w, ct, cols, compute, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx (weight gradient)");
  }
}

GemmHandle::~GemmHandle() {
  if (!handle_) return;
  log_cuda_error(cudaSetDevice(device_), "cudaSetDevice", "cuBLAS handle teardown");
  const cublasStatus_t st = cublasDestroy(handle_);
  if (st != CUBLAS_STATUS_SUCCESS)
    log_cuda_error(cudaErrorUnknown, "cublasDestroy", cublasGetStatusString(st));
}

cublasContext* GemmHandle::bind(int device, cudaStream_t stream, void* ws, uint64_t ws_bytes) {
  if (!handle_) {
    check(cublasCreate(&handle_), "cublasCreate");
    device_ = device;
    // bf16 GEMMs: split-K partial sums stay fp32, so the zero weight gradient stays exactly zero.
    check(cublasSetMathMode(
              handle_, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                                 CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
          "cublasSetMathMode");
  }
  if (stream != stream_) {
    check(cublasSetStream(handle_, stream), "cublasSetStream");
    stream_ = stream;
    ws_ = nullptr;  // cublasSetStream resets the workspace to cuBLAS's own pool
  }
  if (ws != ws_) {
    check(cublasSetWorkspace(handle_, ws, ws_bytes), "cublasSetWorkspace");
    ws_ = ws;
  }
  return handle_;
}

void CudaRank::gemm_backward(Buffer& grad, const FlatParam& unit, uint64_t tokens, bool tf32,
                             Buffer& workspace, Stream s) {
  set_device(device_);
  Lock l(mu_);
  in_space(grad, MemSpace::device, "gemm_backward", "gradient");
  in_space(workspace, MemSpace::device, "gemm_backward", "workspace");
  const DType t = grad.dtype();
  const GemmOperands ops = gemm_operands(unit, tokens);
  const uint64_t tail = gemm_cublas_offset(workspace.numel(), t);
  if (workspace.dtype() != t || workspace.numel() < kCublasWorkspaceBytes / dtype_bytes(t) ||
      ops.end > tail)
    throw BackendError(who("gemm_backward") + " of unit " + unit.name + ": workspace " +
                       shape(workspace) + " is not gemm_workspace_numel's for " +
                       std::to_string(tokens) + " tokens of " + dtype_name(t));
  if (tokens > INT_MAX) throw BackendError(who("gemm_backward") + ": tokens above INT_MAX");
  if (ops.end == 0) return;  // only 1-D parameters: no GEMM
  // Every check before the op starts: a throw leaves no half-recorded op behind.
  GemmShape g;
  for (const Param& p : unit.params)
    if (gemm_shape(p, g) &&
        (g.rows > INT_MAX || g.cols > INT_MAX || p.offset + p.numel() > grad.numel()))
      throw BackendError(who("gemm_backward") + ": parameter " + p.name + " of unit " + unit.name +
                         " does not fit cuBLAS's int dimensions or " + shape(grad));
  auto* base = static_cast<char*>(workspace.data());
  const size_t eb = dtype_bytes(t);
  cublasContext* h = gemm_.bind(device_, stream(s), base + tail * eb, kCublasWorkspaceBytes);
  const int si = idx(s);
  // Not held: cuBLAS picks and may lazily load a kernel per shape inside the launch; the GEMMs
  // run milliseconds, so the host's issue delay is a small part of their bracket.
  cudaEvent_t start = begin_gpu_op(si, {{&grad, true}, {&workspace, true}}, false);
  issue_unit_gemms(h, unit, tokens, t, tf32, grad.data(), base, gemm_filled_, stream(s));
  end_gpu_op(si, Phase::backward, start, {{&grad, true}, {&workspace, true}});
}

}  // namespace shardaccum::cuda
