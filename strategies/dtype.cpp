#include "strategies/dtype.hpp"

#include <stdexcept>

namespace shardaccum {

const char* dtype_name(DType t) { return t == DType::fp32 ? "fp32" : "bf16"; }

DType parse_dtype(std::string_view s) {
  if (s == "fp32") return DType::fp32;
  if (s == "bf16") return DType::bf16;
  throw std::invalid_argument("unknown dtype '" + std::string(s) + "' (expected fp32 or bf16)");
}

std::string DTypeTriple::name() const {
  return std::string(dtype_name(grad)) + "-" + dtype_name(reduce) + "-" + dtype_name(accum);
}

DTypeTriple parse_dtype_triple(std::string_view s) {
  const auto a = s.find('-');
  const auto b = a == std::string_view::npos ? a : s.find('-', a + 1);
  if (b == std::string_view::npos || s.find('-', b + 1) != std::string_view::npos)
    throw std::invalid_argument("--dtype '" + std::string(s) +
                                "': expected grad-reduce-accum, e.g. fp32-fp32-fp32 or bf16-bf16-fp32");
  DTypeTriple t{parse_dtype(s.substr(0, a)), parse_dtype(s.substr(a + 1, b - a - 1)),
                parse_dtype(s.substr(b + 1))};
  if (t.grad != t.reduce)
    throw std::invalid_argument("--dtype '" + std::string(s) +
                                "': grad and reduce dtype must match (the pre-collective cast is "
                                "not modelled); use e.g. bf16-bf16-fp32");
  if (dtype_bytes(t.accum) < dtype_bytes(t.reduce))
    throw std::invalid_argument("--dtype '" + std::string(s) +
                                "': the saved shard (accum) may not be narrower than the reduce dtype");
  return t;
}

}  // namespace shardaccum
