// The host functions of capi/shardaccum_gen.h: thin loops over the suite's generator
// (common/gradient_gen.hpp) and oracle (strategies/oracle.hpp), parallel with OpenMP as the host
// backend's loops are.
#include <cstdint>
#include <vector>

#include "capi/gen_keys.hpp"
#include "capi/shardaccum_gen.h"
#include "common/dtype.hpp"
#include "common/gradient_gen.hpp"
#include "strategies/oracle.hpp"

using namespace shardaccum;

extern "C" {

int sa_gen_abi(void) { return SA_GEN_ABI; }

void sa_grad_fill_host(const sa_grad_key* key, uint64_t first, uint64_t count, float* out) {
  const GradKey k = capi::grad_key(*key);
  const GenParams p = gen_params(k);  // once per buffer, as the backends do
  const auto n = static_cast<int64_t>(count);
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < n; ++j) {
    const uint64_t i = first + static_cast<uint64_t>(j);
    out[j] = i >= k.numel ? 0.0f : grad_value_at(p, i);
  }
}

void sa_expected_fill_host(const sa_oracle_key* key, uint64_t first, uint64_t count, double* out) {
  const OracleKey o = capi::oracle_key(*key, first);
  const std::vector<uint64_t> prefixes = oracle_prefixes(o);
  const auto n = static_cast<int64_t>(count);
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < n; ++j)
    out[j] = expected_value(o, prefixes.data(), static_cast<uint64_t>(j));
}

void sa_compare_host(const sa_oracle_key* key, uint64_t first, uint64_t count, const void* x,
                     int32_t x_dtype, double out3[3]) {
  const OracleKey o = capi::oracle_key(*key, first);
  const std::vector<uint64_t> prefixes = oracle_prefixes(o);
  const bool bf16 = capi::dtype_of(x_dtype) == DType::bf16;
  const auto* xf = static_cast<const float*>(x);
  const auto* xb = static_cast<const uint16_t*>(x);
  const auto n = static_cast<int64_t>(count);
  double err = 0, ref = 0;
  uint64_t nonfinite = 0;
#pragma omp parallel for schedule(static) reduction(+ : err, ref, nonfinite)
  for (int64_t j = 0; j < n; ++j) {
    const double v = bf16 ? bf16_to_float(xb[j]) : xf[j];
    capi::compare_element(o, prefixes.data(), static_cast<uint64_t>(j), v, err, ref, nonfinite);
  }
  out3[0] = err;
  out3[1] = ref;
  out3[2] = static_cast<double>(nonfinite);
}

uint8_t sa_dyadic_range(int32_t param, int32_t reduce, int32_t accum, int32_t k, int32_t world) {
  const DTypeTriple t{capi::dtype_of(param), capi::dtype_of(reduce), capi::dtype_of(accum)};
  return dyadic_range(t, k, world);
}

double sa_error_bound(int32_t param, int32_t reduce, int32_t accum, int32_t mode, int32_t k,
                      int32_t world) {
  const DTypeTriple t{capi::dtype_of(param), capi::dtype_of(reduce), capi::dtype_of(accum)};
  return error_bound(t, capi::mode_of(mode), k, world);
}

}  // extern "C"
