#pragma once
// The comparison of one finished shard with the exact reference (docs/DESIGN.md §5): the rule for
// one element, which both backends apply (the host backend in an OpenMP loop, the cuda backend in
// a kernel), and the sums it produces. Judging those sums is strategies/oracle.hpp's.
#include <cmath>
#include <cstdint>

#include "common/gradient_gen.hpp"

namespace shardaccum {

/// Summary of the oracle comparison of one shard (docs/DESIGN.md §5).
struct ShardCheck {
  double err_norm2 = 0;      // sum over the shard of (out - ref)^2
  double ref_norm2 = 0;      // sum of ref^2
  uint64_t nonfinite = 0;    // NaN or Inf elements
  uint64_t bad_padding = 0;  // padding elements that are not exactly zero
};

/// Folds element `j` of a shard (value `v`, read in fp64) into the sums: a nonfinite element counts
/// as such only; a nonzero padding element as bad padding only; every other element adds its
/// squared error against expected_value; every element adds ref^2. `prefixes` holds
/// oracle_prefixes(key). `Count` is uint64_t, or unsigned long long in a CUDA kernel's sums.
template <class Count>
SA_HD inline void check_element(const OracleKey& key, const uint64_t* prefixes, uint64_t j,
                                double v, double& err_norm2, double& ref_norm2, Count& nonfinite,
                                Count& bad_padding) {
  const double e = expected_value(key, prefixes, j);
#if defined(__CUDA_ARCH__)
  const bool finite = isfinite(v);
#else
  const bool finite = std::isfinite(v);
#endif
  if (!finite)
    ++nonfinite;
  else if (key.shard_offset + j >= key.numel && v != 0.0)
    ++bad_padding;
  else
    err_norm2 += (v - e) * (v - e);
  ref_norm2 += e * e;
}

}  // namespace shardaccum
