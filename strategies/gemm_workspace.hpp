#pragma once
// The device workspace of the GEMM backward (docs/DESIGN.md §2, --backward gemm): one buffer per
// case that the step driver allocates and the memory model counts as a constant term.
#include <cstdint>

#include "common/dtype.hpp"
#include "common/gemm_shape.hpp"
#include "common/layout.hpp"

namespace shardaccum {

/// Elements of `dtype` the GEMM backward's workspace holds for `layout` at `tokens` rows: the
/// largest GemmOperands::end over the units (X, dY and dX of the unit that needs the most) plus
/// kCublasWorkspaceBytes / dtype_bytes(dtype) for cuBLAS at the tail. A layout with no GEMM
/// parameter still gets cuBLAS's part. One buffer per StepDriver (a case), a constant term of the
/// memory model.
uint64_t gemm_workspace_numel(const Layout& layout, uint64_t tokens, DType dtype);

}  // namespace shardaccum
