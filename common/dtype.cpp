#include "common/dtype.hpp"

#include <stdexcept>

namespace shardaccum {

const char* dtype_name(DType t) { return t == DType::fp32 ? "fp32" : "bf16"; }

DType parse_dtype(std::string_view s) {
  if (s == "fp32") return DType::fp32;
  if (s == "bf16") return DType::bf16;
  throw std::invalid_argument("unknown dtype '" + std::string(s.substr(0, 80)) +
                              (s.size() > 80 ? "..." : "") + "' (expected fp32 or bf16)");
}

std::string DTypeTriple::name() const {
  return std::string(dtype_name(grad)) + "-" + dtype_name(reduce) + "-" + dtype_name(accum);
}

DTypeTriple parse_dtype_triple(std::string_view s) {
  const auto bad = [&](const std::string& why) {
    std::string supported;
    for (const char* t : kDtypeTriples)
      supported += (supported.empty() ? "" : ", ") + std::string(t);
    const std::string shown =
        s.size() <= 80 ? std::string(s) : std::string(s.substr(0, 80)) + "...";
    return std::invalid_argument("--dtype '" + shown + "': " + why + "; give one of " + supported +
                                 " or all");
  };
  const auto a = s.find('-');
  const auto b = a == std::string_view::npos ? a : s.find('-', a + 1);
  if (b == std::string_view::npos || s.find('-', b + 1) != std::string_view::npos)
    throw bad("expected grad-reduce-accum");
  DTypeTriple t;
  try {
    t = {parse_dtype(s.substr(0, a)), parse_dtype(s.substr(a + 1, b - a - 1)),
         parse_dtype(s.substr(b + 1))};
  } catch (const std::invalid_argument& e) {
    throw bad(e.what());
  }
  if (dtype_bytes(t.reduce) < dtype_bytes(t.grad))
    throw bad("the reduce dtype may not be narrower than grad (only the widening cast of FSDP2's "
              "copy-in is modelled)");
  if (dtype_bytes(t.accum) < dtype_bytes(t.reduce))
    throw bad("the saved shard (accum) may not be narrower than the reduce dtype");
  return t;
}

}  // namespace shardaccum
