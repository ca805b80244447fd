#include "strategies/gemm_workspace.hpp"

#include <algorithm>

namespace shardaccum {

uint64_t gemm_workspace_numel(const Layout& layout, uint64_t tokens, DType dtype) {
  uint64_t operands = 0;
  for (const FlatParam& u : layout.units)
    operands = std::max(operands, gemm_operands(u, tokens).end);
  return operands + kCublasWorkspaceBytes / dtype_bytes(dtype);
}

}  // namespace shardaccum
