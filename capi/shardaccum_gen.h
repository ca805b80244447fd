#ifndef SHARDACCUM_GEN_H
#define SHARDACCUM_GEN_H
/* libshardaccum_gen: a C ABI over the suite's own gradient generator (common/gradient_gen.hpp), its
 * exact expected values and the oracle's sums and bound (strategies/oracle.hpp), for callers
 * outside the C++ suite (bench/real/shardaccum_real/genlib.py, over ctypes). docs/DESIGN.md §5.
 *
 * Units and shapes: every index is an element of one layout unit's flat buffer (row-major over its
 * parameters, shardaccum_bench --describe-layout), 0-based; `first` is the first element a call
 * covers and `count` how many. Elements >= numel are padding: the generator gives 0 there and the
 * expected value is 0. Dtype codes: 0 fp32, 1 bf16. Generator modes: 0 dyadic, 1 random.
 * No function throws; a bad dtype or mode code is clamped as stated per function. */
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SA_GEN_ABI 1

/* SA_GEN_ABI of the built library: a caller compares it with the value it was written for. */
int sa_gen_abi(void);
/* 1 when the library was built with the CUDA functions (the default preset with nvcc), else 0. */
int sa_gen_has_cuda(void);

/* = shardaccum::GradKey: one micro-batch's gradient of one unit on one rank. mode 0 dyadic, 1
 * random (any other value: random); dyadic_max 1..4 (dyadic values are k/8, 1 <= |k| <= it); shard:
 * elements per rank's shard (i % shard == 0 is a witness; 0: none extra). */
typedef struct {
  uint64_t seed;
  uint32_t step, mb, rank, unit;
  uint64_t numel;
  int32_t mode;
  int32_t dyadic_max;
  uint64_t shard;
} sa_grad_key;

/* The exact reference of one unit: shardaccum::OracleKey without a rank (a call names unit
 * elements directly). k micro-batches on world_size ranks; grad_dtype 0 fp32, 1 bf16 (each value
 * is rounded to it before summing, as backward does); other fields as sa_grad_key. */
typedef struct {
  uint64_t seed;
  uint32_t step, k, world_size, unit;
  uint64_t numel;
  int32_t mode;
  int32_t grad_dtype;
  int32_t dyadic_max;
  uint64_t shard;
} sa_oracle_key;

/* out[j] = g(key, first + j) for j < count: shardaccum::grad_value, so 0 beyond numel. out: count
 * floats of host memory. */
void sa_grad_fill_host(const sa_grad_key* key, uint64_t first, uint64_t count, float* out);

/* out[j] = the exact expected element first + j of the finished unit: (1/N) * sum over the K
 * micro-batches and N ranks of g rounded to grad_dtype, in fp64 (shardaccum::expected_value). out:
 * count doubles of host memory. */
void sa_expected_fill_host(const sa_oracle_key* key, uint64_t first, uint64_t count, double* out);

/* The oracle's sums over x[j] (j < count) held as unit elements first + j: out3[0] = sum of
 * (x - e)^2 over the finite x, out3[1] = sum of e^2 over all, out3[2] = the count of non-finite x
 * (as a double). In the padding e = 0, so a nonzero padding value adds its square to out3[0].
 * x: count elements of host memory, fp32 (x_dtype 0) or bf16 bits (x_dtype 1; any other: fp32). */
void sa_compare_host(const sa_oracle_key* key, uint64_t first, uint64_t count, const void* x,
                     int32_t x_dtype, double out3[3]);

/* The device versions, asynchronous on `stream` (a cudaStream_t; NULL: the legacy default stream).
 * out / x are device memory. They return 0 or a cudaError_t code (the launch's, or for
 * sa_compare_cuda also the synchronisation's), and -1 when the library was built without CUDA.
 * sa_grad_fill_cuda: out[j] = g(key, first + j), fp32 (out_dtype 0) or bf16 rounded as
 * shardaccum::float_to_bf16 (out_dtype 1); another out_dtype: cudaErrorInvalidValue (1). */
int sa_grad_fill_cuda(const sa_grad_key* key, uint64_t first, uint64_t count, void* out,
                      int32_t out_dtype, void* stream);
/* sa_compare_host's sums over device memory x; out3 is host memory, valid when it returns 0 (it
 * synchronises the stream). Sums are fp64; their order across blocks is not fixed. */
int sa_compare_cuda(const sa_oracle_key* key, uint64_t first, uint64_t count, const void* x,
                    int32_t x_dtype, double out3[3], void* stream);

/* shardaccum::dyadic_range of the dtype triple (param = grad, reduce, accum; codes 0 fp32, 1 bf16),
 * k micro-batches and world ranks: the dyadic_max that keeps every sum exact (1..4). */
uint8_t sa_dyadic_range(int32_t param, int32_t reduce, int32_t accum, int32_t k, int32_t world);
/* shardaccum::error_bound: the relative-error bound of the case (mode 0 dyadic, 1 random). */
double sa_error_bound(int32_t param, int32_t reduce, int32_t accum, int32_t mode, int32_t k,
                      int32_t world);

#ifdef __cplusplus
}
#endif
#endif /* SHARDACCUM_GEN_H */
