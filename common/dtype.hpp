#pragma once
// Element types of the gradient pipeline and the dtype triple grad-reduce-accum (docs/DESIGN.md
// §1).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__CUDACC__)
#define SA_HD __host__ __device__
#else
#define SA_HD
#endif

namespace shardaccum {

enum class DType : uint8_t { fp32, bf16 };

/// Size of one element in bytes (fp32: 4, bf16: 2).
SA_HD constexpr size_t dtype_bytes(DType t) { return t == DType::fp32 ? 4 : 2; }

/// Unit roundoff u = 2^-p of the type (fp32: 2^-24, bf16: 2^-8), for the oracle's error bound.
constexpr double unit_roundoff(DType t) { return t == DType::fp32 ? 0x1p-24 : 0x1p-8; }

const char* dtype_name(DType t);
/// Parses "fp32" or "bf16"; throws std::invalid_argument naming the accepted values.
DType parse_dtype(std::string_view s);

/// bf16 -> fp32 is exact: the bf16 bits are the high half of the fp32 bits.
SA_HD inline float bf16_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/// fp32 -> bf16 with round-to-nearest-even; NaN stays NaN (quiet).
SA_HD inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
    return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// The dtype triple: unsharded gradient (b_g), collective (b_r), saved shard (b_a).
struct DTypeTriple {
  DType grad = DType::fp32;
  DType reduce = DType::fp32;
  DType accum = DType::fp32;
  std::string name() const;  // "fp32-fp32-fp32"
  bool operator==(const DTypeTriple&) const = default;
};

/// The triples this suite supports, in report order (what --dtype all means; bf16-fp32-fp32 only
/// with a copy-in, which casts: strategies/copy_in/).
inline constexpr const char* kDtypeTriples[] = {"fp32-fp32-fp32", "bf16-bf16-fp32",
                                                "bf16-bf16-bf16", "bf16-fp32-fp32"};

/// Parses "grad-reduce-accum", e.g. "bf16-bf16-fp32". Throws std::invalid_argument when malformed
/// or unsupported: reduce may differ from grad only by being wider (bf16 grad, fp32 reduce: FSDP2's
/// MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32), the cast is the copy-in's), and accum
/// may not be narrower than reduce. Every message names --dtype and lists kDtypeTriples.
DTypeTriple parse_dtype_triple(std::string_view s);

}  // namespace shardaccum
