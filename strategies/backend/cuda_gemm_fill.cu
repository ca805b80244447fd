// The operands of the GEMM backward (cuda_gemm.hpp): X and dY of one unit, filled so that every
// weight gradient dYᵀ·X is exactly zero while no operand element is zero (zeros would let the
// tensor cores draw less power than a real backward's activations do).
#include <cstdint>

#include "strategies/backend/cuda_check.hpp"
#include "strategies/backend/cuda_gemm.hpp"

namespace shardaccum::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 8192;

/// ±{1, 1.25, 1.5, 1.75} from a hash of (column, paired token, salt): 3 significant bits, exact in
/// bf16 and TF32, so products and their sums over kMaxGemmTokens tokens are exact in fp32.
__device__ __forceinline__ float operand_value(uint64_t col, uint64_t tok, uint32_t salt) {
  uint32_t h = static_cast<uint32_t>(col) * 2654435761u ^ static_cast<uint32_t>(tok) * 40503u ^
               static_cast<uint32_t>(col >> 32) ^ salt;
  h ^= h >> 15;
  h *= 0x2c1b3c6du;
  h ^= h >> 12;
  const float v = 1.0f + 0.25f * static_cast<float>(h & 3u);
  return (h & 4u) ? -v : v;
}

/// Element i of a tokens x n column-major matrix: token t = i % tokens pairs with t % h in the
/// first 2h tokens. `negate`: the second half is negated and an odd last token is zero (dY).
template <typename E>
__global__ void fill_operand(E* out, uint64_t tokens, uint64_t n, bool negate, uint32_t salt) {
  const uint64_t h = tokens / 2, total = tokens * n;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const uint64_t t = i % tokens, col = i / tokens;
    float v = operand_value(col, h ? t % h : 0, salt);
    if (negate && t >= h) v = t < 2 * h ? -v : 0.0f;
    if constexpr (sizeof(E) == 4)
      out[i] = v;
    else
      out[i] = float_to_bf16(v);  // exact: 3 significant bits
  }
}

template <typename E>
void fill_both(void* x, void* dy, uint64_t tokens, uint64_t cols, uint64_t rows, cudaStream_t s) {
  const auto blocks = [](uint64_t n) {
    const uint64_t b = (n + kThreads - 1) / kThreads;
    return static_cast<int>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
  };
  fill_operand<E>
      <<<blocks(tokens * cols), kThreads, 0, s>>>(static_cast<E*>(x), tokens, cols, false, 0x51u);
  SA_CUDA_LAUNCH_CHECK("fill_operand (X)");
  fill_operand<E>
      <<<blocks(tokens * rows), kThreads, 0, s>>>(static_cast<E*>(dy), tokens, rows, true, 0xd7u);
  SA_CUDA_LAUNCH_CHECK("fill_operand (dY)");
}

}  // namespace

void launch_gemm_operands(void* x, void* dy, DType t, uint64_t tokens, uint64_t cols, uint64_t rows,
                          cudaStream_t s) {
  if (t == DType::fp32)
    fill_both<float>(x, dy, tokens, cols, rows, s);
  else
    fill_both<uint16_t>(x, dy, tokens, cols, rows, s);
}

}  // namespace shardaccum::cuda
