// The _cuda functions of capi/shardaccum_gen.h in a build without CUDA (the host preset): the
// header's contract is -1, so a caller learns it at run time instead of from a missing symbol.
#include <cstdint>

#include "capi/shardaccum_gen.h"

extern "C" {

int sa_gen_has_cuda(void) { return 0; }

int sa_grad_fill_cuda(const sa_grad_key* /*key*/, uint64_t /*first*/, uint64_t /*count*/,
                      void* /*out*/, int32_t /*out_dtype*/, void* /*stream*/) {
  return -1;
}

int sa_compare_cuda(const sa_oracle_key* /*key*/, uint64_t /*first*/, uint64_t /*count*/,
                    const void* /*x*/, int32_t /*x_dtype*/, double out3[3], void* /*stream*/) {
  out3[0] = out3[1] = out3[2] = 0;
  return -1;
}

}  // extern "C"
