#include "common/gemm_shape.hpp"

#include <algorithm>

namespace shardaccum {

namespace {
uint64_t aligned(uint64_t n) {
  return (n + kGemmOperandAlign - 1) / kGemmOperandAlign * kGemmOperandAlign;
}
}  // namespace

bool gemm_shape(const Param& p, GemmShape& out) {
  if (p.shape.size() < 2) return false;
  out.rows = p.shape[0];
  out.cols = p.numel() / p.shape[0];
  return true;
}

GemmOperands gemm_operands(const FlatParam& unit, uint64_t tokens) {
  uint64_t rows = 0, cols = 0;
  GemmShape s;
  for (const Param& p : unit.params)
    if (gemm_shape(p, s)) {
      rows = std::max(rows, s.rows);
      cols = std::max(cols, s.cols);
    }
  GemmOperands o;
  if (rows == 0) return o;
  o.dy = aligned(tokens * cols);
  o.dx = o.dy + aligned(tokens * rows);
  o.end = o.dx + aligned(tokens * cols);
  return o;
}

double gemm_flops(const FlatParam& unit, uint64_t tokens) {
  double flops = 0;
  GemmShape s;
  for (const Param& p : unit.params)
    if (gemm_shape(p, s))
      flops += 4.0 * static_cast<double>(tokens) * static_cast<double>(p.numel());
  return flops;
}

}  // namespace shardaccum
